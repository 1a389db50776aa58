// AtomicFileWriter, the one way converted files reach the disk: the temporary file beside the
// target has a random name nobody can plant in advance and is created exclusively, an existing
// target keeps its permission bits, a directory / device / FIFO target is refused before
// anything is written, and a failed check of the finished file leaves the target as it was.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include "cflow/formats/mapped_file.h"
#include "test_support.h"

namespace cflow {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

unsigned mode_of(const fs::path& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
}

std::vector<std::string> names_in(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

Status write_all(const std::string& target, const std::string& text, const AtomicFileWriter::VerifyFn& verify = {}) {
    AtomicFileWriter out(target);
    if (Status s = out.open(); !s) return s;
    if (Status s = out.write(text.data(), text.size()); !s) return s;
    return out.commit(verify);
}

TEST(AtomicFileWriter, TempNamesAreRandomExclusiveAndRemovedWithoutCommit) {
    const fs::path dir = test::temp_dir("atomic_names");
    const std::string target = (dir / "model.cflow").string();
    {
        AtomicFileWriter a(target), b(target);
        ASSERT_TRUE(a.open().ok());
        ASSERT_TRUE(b.open().ok());
        EXPECT_NE(a.temp_path(), b.temp_path());
        // 64 random bits in decimal (the desktop app recognises "<output>.tmp-<digits>").
        const std::regex name(std::regex_replace(target, std::regex(R"([.])"), R"(\.)") + R"(\.tmp-[0-9]{1,20})");
        EXPECT_TRUE(std::regex_match(a.temp_path(), name)) << a.temp_path();
        EXPECT_TRUE(fs::exists(a.temp_path()));
        EXPECT_TRUE(fs::exists(b.temp_path()));
        EXPECT_FALSE(fs::exists(target)) << "nothing appears under the final name before commit";
    }
    EXPECT_TRUE(names_in(dir).empty()) << "destruction without commit removes both temp files";
}

TEST(AtomicFileWriter, AnExistingTargetKeepsItsModeANewOneGetsTheUmasksDefault) {
    const fs::path dir = test::temp_dir("atomic_mode");
    const fs::path secret = dir / "secret.cflow";
    std::ofstream(secret) << "old";
    fs::permissions(secret, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
    ASSERT_TRUE(write_all(secret.string(), "new").ok());
    EXPECT_EQ(slurp(secret), "new");
    EXPECT_EQ(mode_of(secret), 0600u) << "a 0600 target became 0644 before";

    const fs::path shared = dir / "shared.cflow";
    std::ofstream(shared) << "old";
    fs::permissions(shared, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read, fs::perm_options::replace);
    ASSERT_TRUE(write_all(shared.string(), "new").ok());
    EXPECT_EQ(mode_of(shared), 0744u);

    const fs::path reference = dir / "reference";
    std::ofstream(reference) << "x";  // what any new file gets under this umask
    const fs::path fresh = dir / "fresh.cflow";
    ASSERT_TRUE(write_all(fresh.string(), "new").ok());
    EXPECT_EQ(mode_of(fresh), mode_of(reference));
}

TEST(AtomicFileWriter, DirectoryDeviceAndFifoTargetsAreRefusedBeforeWriting) {
    const fs::path dir = test::temp_dir("atomic_targets");
    const fs::path folder = dir / "folder.cflow";
    fs::create_directory(folder);
    Status s = write_all(folder.string(), "x");
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().find("the output is a directory, not a regular file; refusing to replace it"), std::string::npos)
        << s.error();

    const fs::path fifo = dir / "fifo.cflow";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    s = write_all(fifo.string(), "x");
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().find("the output is a FIFO"), std::string::npos) << s.error();
    EXPECT_EQ(names_in(dir), (std::vector<std::string>{"fifo.cflow", "folder.cflow"})) << "no temp file left behind";
}

TEST(AtomicFileWriter, ADeviceTargetIsRefusedAndTheNodeStays) {
    // A node of our own (as /dev/null is), so a regression cannot replace the system's.
    const fs::path dir = test::temp_dir("atomic_device");
    const fs::path node = dir / "null.cflow";
    if (::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0)
        GTEST_SKIP() << "cannot make a device node here (needs root or CAP_MKNOD); the directory and FIFO cases still run";
    Status s = write_all(node.string(), "x");
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().find("null.cflow: the output is a character device"), std::string::npos) << s.error();
    struct stat st {};
    ASSERT_EQ(::stat(node.c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device node is still there";
    EXPECT_EQ(names_in(dir), (std::vector<std::string>{"null.cflow"}));
}

TEST(AtomicFileWriter, AFailedCheckOfTheFinishedFileKeepsTheTarget) {
    const fs::path dir = test::temp_dir("atomic_verify");
    const fs::path target = dir / "model.cflow";
    std::ofstream(target) << "old";
    std::string seen;
    Status s = write_all(target.string(), "new bytes", [&](const std::string& temp) -> Status {
        seen = slurp(temp);  // complete and flushed when the check runs
        return make_error("does not load");
    });
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error(), "does not load");
    EXPECT_EQ(seen, "new bytes");
    EXPECT_EQ(slurp(target), "old");
    EXPECT_EQ(names_in(dir), (std::vector<std::string>{"model.cflow"})) << "the checked temp file is removed";

    ASSERT_TRUE(write_all(target.string(), "new bytes", [](const std::string&) { return Status{}; }).ok());
    EXPECT_EQ(slurp(target), "new bytes");
}

TEST(AtomicFileWriter, ASymlinkedTargetIsReplacedNotWrittenThrough) {
    // The rename replaces the link itself: the file it pointed at (here standing for
    // /etc/passwd or another user's model) keeps its bytes.
    const fs::path dir = test::temp_dir("atomic_symlink");
    const fs::path victim = dir / "victim";
    std::ofstream(victim) << "precious";
    const fs::path link = dir / "out.cflow";
    fs::create_symlink(victim, link);
    ASSERT_TRUE(write_all(link.string(), "converted").ok());
    EXPECT_EQ(slurp(victim), "precious");
    EXPECT_FALSE(fs::is_symlink(link));
    EXPECT_EQ(slurp(link), "converted");
}

TEST(AtomicFileWriter, TempFilesOfKilledRunsAreRemovedThoseOfRunningOnesListed) {
    // kill -9 (or a power cut) leaves "<target>.tmp-<n>" behind; the next write to that target
    // removes those no live writer holds at once, young or old (an 822 MB one used to wait an
    // hour), and lists the file of a conversion still running without touching it.
    const fs::path dir = test::temp_dir("atomic_stale");
    const fs::path stale = dir / "model.cflow.tmp-123", killed = dir / "model.cflow.tmp-456";
    const fs::path foreign = dir / "model.cflow.tmp-notours", other = dir / "other.cflow.tmp-789";
    for (const auto& p : {stale, killed, foreign, other}) std::ofstream(p) << "partial";
    const auto old_time = fs::file_time_type::clock::now() - std::chrono::hours(2);
    for (const auto& p : {stale, foreign, other}) fs::last_write_time(p, old_time);

    AtomicFileWriter running((dir / "model.cflow").string());
    ASSERT_TRUE(running.open().ok());
    ASSERT_TRUE(running.write("half", 4).ok());
    std::vector<std::string> removed = running.removed_stale_temp_files();
    std::sort(removed.begin(), removed.end());
    EXPECT_EQ(removed, (std::vector<std::string>{stale.string(), killed.string()}));

    AtomicFileWriter second((dir / "model.cflow").string());
    ASSERT_TRUE(second.open().ok());
    EXPECT_TRUE(second.removed_stale_temp_files().empty());
    EXPECT_EQ(second.recent_temp_files(), (std::vector<std::string>{running.temp_path()})) << "a running writer's file stays";
    ASSERT_TRUE(second.commit().ok());
    ASSERT_TRUE(running.commit().ok());
    EXPECT_EQ(names_in(dir), (std::vector<std::string>{"model.cflow", "model.cflow.tmp-notours", "other.cflow.tmp-789"}));
}

} // namespace
} // namespace cflow
