// Where the shared read-bandwidth figure lives and which CPU measured it, on Windows:
// %LOCALAPPDATA%\cflow and the processor name the registry holds.
#include <filesystem>
#include <string>

#include <windows.h>

#include "cflow/base/utf8_path.h"
#include "cflow/engine/io/bandwidth_probe_cache.h"

namespace cflow {

std::string default_bandwidth_probe_path() {
    wchar_t buf[MAX_PATH];  // LOCALAPPDATA, UTF-16
    const DWORD n = GetEnvironmentVariableW(L"LOCALAPPDATA", buf, MAX_PATH);
    if (n == 0 || n >= MAX_PATH) return {};
    return utf8_from_path(std::filesystem::path(std::wstring(buf, n)) / L"cflow" / L"read-bandwidth.json");
}

std::string this_cpu_model() {
    wchar_t name[256];  // ProcessorNameString, UTF-16
    DWORD bytes = sizeof name;
    if (RegGetValueW(HKEY_LOCAL_MACHINE, L"HARDWARE\\DESCRIPTION\\System\\CentralProcessor\\0", L"ProcessorNameString",
                     RRF_RT_REG_SZ, nullptr, name, &bytes) != ERROR_SUCCESS)
        return {};
    std::string model = utf8_from_path(std::filesystem::path(std::wstring(name)));
    while (!model.empty() && model.back() == ' ') model.pop_back();
    return model;
}

} // namespace cflow
