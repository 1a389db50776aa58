#include "io/platform/open_direct_win32.h"

#include <windows.h>

namespace cflow {
namespace {

std::wstring widen(const std::string& utf8) {
    if (utf8.empty()) return {};
    const int n = MultiByteToWideChar(CP_UTF8, 0, utf8.data(), int(utf8.size()), nullptr, 0);
    std::wstring w(size_t(n), L'\0');
    MultiByteToWideChar(CP_UTF8, 0, utf8.data(), int(utf8.size()), w.data(), n);
    return w;
}

} // namespace

std::string windows_error_text(unsigned long code) {
    char text[256] = {};
    const DWORD n = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr, code, 0, text,
                                   DWORD(sizeof(text)), nullptr);
    std::string message(text, n);
    while (!message.empty() && (message.back() == '\n' || message.back() == '\r' || message.back() == ' '))
        message.pop_back();
    return "Windows error " + std::to_string(code) + (message.empty() ? "" : ": " + message);
}

Result<OpenedWinFile> open_for_direct_reads(const std::string& path, bool overlapped) {
    const std::wstring wpath = widen(path);
    const DWORD async = overlapped ? FILE_FLAG_OVERLAPPED : 0;
    bool direct = true;
    HANDLE h = CreateFileW(wpath.c_str(), GENERIC_READ, FILE_SHARE_READ, nullptr, OPEN_EXISTING,
                           FILE_FLAG_NO_BUFFERING | async, nullptr);
    if (h == INVALID_HANDLE_VALUE) {
        direct = false;
        h = CreateFileW(wpath.c_str(), GENERIC_READ, FILE_SHARE_READ, nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL | async,
                        nullptr);
    }
    if (h == INVALID_HANDLE_VALUE)
        return make_error(ErrorKind::Io, path + ": cannot open for expert reads: " + windows_error_text(GetLastError()));
    LARGE_INTEGER size{};
    if (!GetFileSizeEx(h, &size)) {
        const DWORD err = GetLastError();
        CloseHandle(h);
        return make_error(ErrorKind::Io, path + ": cannot read its size: " + windows_error_text(err));
    }
    // 4096: a multiple of every sector size NO_BUFFERING asks for on the disks we meet.
    return OpenedWinFile{h, ReadFileFacts{path, uint64_t(size.QuadPart), 4096, direct}};
}

} // namespace cflow
