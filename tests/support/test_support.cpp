#include "test_support.h"

#include <cstdlib>
#include <mutex>
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
struct TempDirs {
    std::mutex mutex;
    std::vector<std::filesystem::path> dirs;
    ~TempDirs() {
        std::error_code ec;
        for (auto& d : dirs) std::filesystem::remove_all(d, ec);
    }
};
TempDirs& temp_dirs() {
    static TempDirs dirs;
    return dirs;
}
} // namespace

std::filesystem::path temp_dir(const std::string& name) {
    auto base = std::filesystem::path(CFLOW_BINARY_DIR) / "test-tmp";
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string unique = name;
    if (info) unique = std::string(info->test_suite_name()) + "." + info->name() + "." + name;
    auto dir = base / unique;
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::filesystem::create_directories(dir, ec);
    std::lock_guard lock(temp_dirs().mutex);
    temp_dirs().dirs.push_back(dir);
    return dir;
}

} // namespace cflow::test
