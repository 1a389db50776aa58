// POSIX side of default_model.h's executable_dir() (empty on Windows; the CLI globs every .cpp).
#ifndef _WIN32
#include <filesystem>
#include <system_error>

#include "default_model.h"

namespace cflow::cli {

std::string executable_dir() {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);  // Linux; other POSIX: no default
    return ec ? std::string() : exe.parent_path().string();
}

} // namespace cflow::cli
#endif
