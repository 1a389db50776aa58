#include "test_support.h"

#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace cflow::test {

std::filesystem::path shared_dir() {
    std::filesystem::path dir = CFLOW_SHARED_DIR;
    if (const char* env = std::getenv("CFLOW_SHARED_DIR"); env && *env) dir = env;
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) return {};
    return std::filesystem::weakly_canonical(dir, ec);
}

std::filesystem::path shared_asset(const std::string& relative) {
    auto dir = shared_dir();
    if (dir.empty()) return {};
    return dir / relative;
}

namespace {
// remove_all, and where that fails (Windows will not delete a read-only file, and copies of the
// shared assets keep their read-only bits) again after making everything below writable.
void remove_tree(const std::filesystem::path& dir) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (!ec) return;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec); !ec && it != std::filesystem::end(it);
         it.increment(ec))
        std::filesystem::permissions(it->path(), std::filesystem::perms::owner_write, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(dir, ec);
}

struct TempDirs {
    std::mutex mutex;
    std::vector<std::filesystem::path> dirs;
    ~TempDirs() {
        for (auto& d : dirs) remove_tree(d);
    }
};
TempDirs& temp_dirs() {
    static TempDirs dirs;
    return dirs;
}
const std::string& process_token() {
    static const std::string token = [] {
        std::random_device device;
        return std::to_string(device()) + std::to_string(device());
    }();
    return token;
}
} // namespace

std::filesystem::path temp_dir(const std::string& name) {
    auto base = std::filesystem::path(CFLOW_BINARY_DIR) / "test-tmp";
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    // Outside a test (a suite's set-up) there is no test name to keep processes apart, and ctest runs
    // every test of a suite in its own process at once: a per-process token keeps their set-ups from
    // removing each other's files.
    std::string unique = name + "." + process_token();
    if (info) unique = std::string(info->test_suite_name()) + "." + info->name() + "." + name;
    // A ctest entry that runs tests again under other settings (the UI audits at QT_SCALE_FACTOR
    // 1.5 and 2) names itself here, or it would share the plain run's folders while both run.
    if (const char* tag = std::getenv("CFLOW_TEST_TMP_TAG"); tag && *tag) unique += std::string(".") + tag;
    auto dir = base / unique;
    remove_tree(dir);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    std::lock_guard lock(temp_dirs().mutex);
    temp_dirs().dirs.push_back(dir);
    return dir;
}

std::string symlinks_unavailable() {
    const std::filesystem::path dir = temp_dir("symlink_probe");
    std::error_code ec;
    std::filesystem::create_symlink("target", dir / "link", ec);
    return ec ? ec.message() : std::string();
}

} // namespace cflow::test
