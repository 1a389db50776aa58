// A mapped file changed by another process while in use (issue 38): truncating it made the next
// read past its new end raise SIGBUS, which killed generate, chat and serve with exit 135 and no
// message; rewriting it in place was used silently. Now the read survives (it sees zeros) and
// check_unchanged() names the change; a file replaced by rename keeps its mapping whole.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cflow/formats/mapped_file.h"
#include "test_support.h"

#if !defined(_WIN32)
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace cflow {
namespace {

#if !defined(_WIN32)
namespace fs = std::filesystem;

constexpr size_t kFileBytes = 64 * 1024;  // [16 pages of 4 KiB] of a known pattern

std::string write_pattern(const std::string& name) {
    const fs::path path = test::temp_dir("mapped_file_change") / name;
    std::vector<char> bytes(kFileBytes);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(1 + i % 251);
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
    return path.string();
}

// Sums bytes through a volatile pointer so the reads happen here, past any optimisation.
uint64_t read_all(const MappedFile& file) {
    const volatile uint8_t* p = file.data();
    uint64_t sum = 0;
    for (size_t i = 0; i < file.size(); ++i) sum += p[i];
    return sum;
}

TEST(MappedFileChange, ATruncatedMappingIsReadAsZerosAndReportedNotAKill) {
    const std::string path = write_pattern("truncated.bin");
    auto mapped = MappedFile::open(path, LoadMode::Map);
    ASSERT_TRUE(mapped.ok()) << mapped.error();
    const uint64_t whole = read_all(**mapped);
    EXPECT_TRUE((*mapped)->check_unchanged().ok());

    ASSERT_EQ(::truncate(path.c_str(), 4096), 0);
    // Before the guard: SIGBUS here, the test process dies.
    const uint64_t after = read_all(**mapped);
    EXPECT_LT(after, whole) << "the pages past the new end read as zeros";
    const Status changed = (*mapped)->check_unchanged();
    ASSERT_FALSE(changed.ok());
    EXPECT_EQ(changed.kind(), ErrorKind::Io);
    EXPECT_NE(changed.error().find(path + " changed on disk while in use"), std::string::npos) << changed.error();
    EXPECT_NE(changed.error().find("read(s) past its end"), std::string::npos) << changed.error();
    EXPECT_NE(changed.error().find("was 65536 bytes, now 4096"), std::string::npos) << changed.error();
}

TEST(MappedFileChange, ARewriteInPlaceIsReportedAndAReplacementByRenameIsNot) {
    const std::string path = write_pattern("rewritten.bin");
    auto mapped = MappedFile::open(path, LoadMode::Map);
    ASSERT_TRUE(mapped.ok()) << mapped.error();
    {
        std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
        f.seekp(100);
        f.write("changed", 7);
    }
    // Some filesystems keep a coarse clock: move the modification time on explicitly.
    struct timeval later[2] = {{2'000'000'000, 0}, {2'000'000'000, 0}};
    ASSERT_EQ(::utimes(path.c_str(), later), 0);
    const Status changed = (*mapped)->check_unchanged();
    ASSERT_FALSE(changed.ok());
    EXPECT_NE(changed.error().find("rewritten in place"), std::string::npos) << changed.error();

    // Replaced by rename (how installers and `mv` update a file): the mapping keeps the old file.
    const std::string kept = write_pattern("kept.bin");
    auto mapped_kept = MappedFile::open(kept, LoadMode::Map);
    ASSERT_TRUE(mapped_kept.ok());
    const uint64_t before = read_all(**mapped_kept);
    const std::string other = write_pattern("replacement.bin");
    fs::rename(other, kept);
    EXPECT_TRUE((*mapped_kept)->check_unchanged().ok());
    EXPECT_EQ(read_all(**mapped_kept), before);

    // A copy in memory does not depend on the file any more.
    const std::string copied = write_pattern("copied.bin");
    auto anon = MappedFile::open(copied, LoadMode::ReadAnon);
    ASSERT_TRUE(anon.ok());
    ASSERT_EQ(::truncate(copied.c_str(), 0), 0);
    EXPECT_TRUE((*anon)->check_unchanged().ok());
    EXPECT_GT(read_all(**anon), 0u);
}

// Killed by a signal: SIGBUS itself, or SIGABRT where a sanitizer's handler was there first and
// reports the fault (the guard hands it on either way; it must not return to the faulting code).
bool killed_by_the_previous_disposition(int status) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return WIFSIGNALED(status) && (WTERMSIG(status) == SIGBUS || WTERMSIG(status) == SIGABRT);
#else
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS;
#endif
}

TEST(MappedFileChange, AFaultOutsideEveryMappingStillKills) {
    // The guard only absorbs faults inside a registered mapping; anything else keeps the previous
    // disposition (the default: a core).
    EXPECT_EXIT(
        {
            const std::string path = write_pattern("unguarded.bin");
            auto mapped = MappedFile::open(path, LoadMode::Map);  // installs the guard
            (void)mapped;
            std::raise(SIGBUS);
        },
        killed_by_the_previous_disposition, "");
}
#endif

} // namespace
} // namespace cflow
