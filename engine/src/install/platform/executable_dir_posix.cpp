// POSIX side of executable_dir.h (engine/CMakeLists.txt builds it on every OS but Windows).
#include <filesystem>
#include <system_error>

#include "cflow/engine/install/executable_dir.h"

namespace cflow {

std::string executable_dir() {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);  // Linux; other POSIX: no default
    return ec ? std::string() : exe.parent_path().string();
}

} // namespace cflow
