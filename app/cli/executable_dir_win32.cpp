// Windows side of default_model.h's executable_dir() (empty elsewhere; the CLI globs every .cpp).
#ifdef _WIN32
#include <windows.h>

#include <filesystem>
#include <vector>

#include "default_model.h"

namespace cflow::cli {

std::string executable_dir() {
    std::vector<wchar_t> buffer(MAX_PATH);
    for (;;) {
        const DWORD n = GetModuleFileNameW(nullptr, buffer.data(), DWORD(buffer.size()));
        if (n == 0) return {};
        if (n < buffer.size()) return std::filesystem::path(std::wstring(buffer.data(), n)).parent_path().string();
        if (buffer.size() >= 32768) return {};
        buffer.resize(buffer.size() * 2);
    }
}

} // namespace cflow::cli
#endif
