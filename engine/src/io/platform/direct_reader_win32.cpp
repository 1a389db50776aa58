#include <windows.h>

#include <string>

#include "io/direct_reader.h"

namespace cflow {
namespace {

std::wstring widen(const std::string& utf8) {
    if (utf8.empty()) return {};
    const int n = MultiByteToWideChar(CP_UTF8, 0, utf8.data(), int(utf8.size()), nullptr, 0);
    std::wstring w(size_t(n), L'\0');
    MultiByteToWideChar(CP_UTF8, 0, utf8.data(), int(utf8.size()), w.data(), n);
    return w;
}

std::string last_error_text() { return "Windows error " + std::to_string(GetLastError()); }

class Win32DirectReader final : public DirectReader {
public:
    Win32DirectReader(std::string path, HANDLE h, bool direct, uint64_t size)
        : path_(std::move(path)), handle_(h), direct_(direct), size_(size) {}
    ~Win32DirectReader() override { CloseHandle(handle_); }

    Status read(uint64_t offset, uint64_t bytes, void* destination) override {
        auto* dst = static_cast<uint8_t*>(destination);
        uint64_t done = 0;
        while (done < bytes) {
            OVERLAPPED ov{};
            const uint64_t at = offset + done;
            ov.Offset = DWORD(at & 0xFFFFFFFFu);
            ov.OffsetHigh = DWORD(at >> 32);
            const DWORD chunk = DWORD(std::min<uint64_t>(bytes - done, 1u << 30));
            DWORD got = 0;
            if (!ReadFile(handle_, dst + done, chunk, &got, &ov)) {
                if (GetLastError() == ERROR_HANDLE_EOF) break;
                return make_error(ErrorKind::Io,
                                  path_ + ": read at offset " + std::to_string(at) + " failed: " + last_error_text());
            }
            if (got == 0) break;
            done += got;
        }
        return {};
    }
    uint64_t alignment() const override { return 4096; }
    bool direct() const override { return direct_; }
    uint64_t file_bytes() const override { return size_; }

private:
    std::string path_;
    HANDLE handle_;
    bool direct_;
    uint64_t size_;
};

} // namespace

Result<std::unique_ptr<DirectReader>> DirectReader::open(const std::string& path) {
    const std::wstring wpath = widen(path);
    bool direct = true;
    HANDLE h = CreateFileW(wpath.c_str(), GENERIC_READ, FILE_SHARE_READ, nullptr, OPEN_EXISTING,
                           FILE_FLAG_NO_BUFFERING, nullptr);
    if (h == INVALID_HANDLE_VALUE) {
        direct = false;
        h = CreateFileW(wpath.c_str(), GENERIC_READ, FILE_SHARE_READ, nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
    }
    if (h == INVALID_HANDLE_VALUE)
        return make_error(ErrorKind::Io, path + ": cannot open for expert reads: " + last_error_text());
    LARGE_INTEGER size{};
    GetFileSizeEx(h, &size);
    return std::unique_ptr<DirectReader>(new Win32DirectReader(path, h, direct, uint64_t(size.QuadPart)));
}

} // namespace cflow
