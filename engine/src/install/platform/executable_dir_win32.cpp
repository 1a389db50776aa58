// Windows side of executable_dir.h (engine/CMakeLists.txt builds it only on Windows).
#include <windows.h>

#include <filesystem>
#include <vector>

#include "cflow/base/utf8_path.h"
#include "cflow/engine/install/executable_dir.h"

namespace cflow {

std::string executable_dir() {
    // GetModuleFileNameW truncates silently: grow the buffer up to the 32767-character path limit.
    std::vector<wchar_t> buffer(MAX_PATH);
    for (;;) {
        const DWORD n = GetModuleFileNameW(nullptr, buffer.data(), DWORD(buffer.size()));
        if (n == 0) return {};
        if (n < buffer.size()) return utf8_from_path(std::filesystem::path(std::wstring(buffer.data(), n)).parent_path());
        if (buffer.size() >= 32768) return {};
        buffer.resize(buffer.size() * 2);
    }
}

} // namespace cflow
