// Win32 MappedFile: CreateFileMapping/MapViewOfFile for LoadMode::Map, ReadFile into
// VirtualAlloc'd memory for LoadMode::ReadAnon. Paths arrive as UTF-8 and are converted
// to UTF-16 so non-ASCII model paths open regardless of the ANSI code page.
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
// psapi.h only for the PSAPI_WORKING_SET_EX_INFORMATION type; the function itself is
// looked up at run time (kernel32!K32QueryWorkingSetEx) so no psapi import library is needed.
#include <psapi.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cflow/formats/mapped_file.h"

namespace cflow {
namespace {

// FormatMessageW text for an OS error code, as UTF-8 without the trailing CR/LF.
std::string system_message(DWORD code) {
    wchar_t* buffer = nullptr;
    const DWORD chars =
        FormatMessageW(FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
                       nullptr, code, 0, reinterpret_cast<wchar_t*>(&buffer), 0, nullptr);
    std::string text;
    if (chars != 0 && buffer != nullptr) {
        const int bytes =
            WideCharToMultiByte(CP_UTF8, 0, buffer, static_cast<int>(chars), nullptr, 0, nullptr, nullptr);
        if (bytes > 0) {
            text.resize(static_cast<size_t>(bytes));
            WideCharToMultiByte(CP_UTF8, 0, buffer, static_cast<int>(chars), text.data(), bytes, nullptr, nullptr);
        }
    }
    if (buffer != nullptr) LocalFree(buffer);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' || text.back() == '.'))
        text.pop_back();
    if (text.empty()) text = "Windows error";
    return text + " (error " + std::to_string(code) + ")";
}

std::string os_error(const std::string& what, const std::string& path, DWORD code) {
    return path + ": " + what + ": " + system_message(code);
}

// UTF-8 -> UTF-16; fails on invalid UTF-8 rather than guessing a code page.
Result<std::wstring> widen(const std::string& utf8) {
    if (utf8.size() > static_cast<size_t>(INT32_MAX)) return make_error(utf8.substr(0, 64) + "...: path too long");
    const int n = static_cast<int>(utf8.size());
    const int wide_chars = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8.data(), n, nullptr, 0);
    if (wide_chars <= 0) return make_error(os_error("path is not valid UTF-8", utf8, GetLastError()));
    std::wstring wide(static_cast<size_t>(wide_chars), L'\0');
    MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8.data(), n, wide.data(), wide_chars);
    return wide;
}

// Memory-range entry of PrefetchVirtualMemory (Windows 8+); declared here because the
// mingw headers only expose it for _WIN32_WINNT >= 0x0602 and we still run on older systems.
struct PrefetchRange {
    void* address;
    SIZE_T bytes;
};
using PrefetchVirtualMemoryFn = BOOL(WINAPI*)(HANDLE, ULONG_PTR, PrefetchRange*, ULONG);
using QueryWorkingSetExFn = BOOL(WINAPI*)(HANDLE, PVOID, DWORD);

template <class Fn>
Fn kernel32_function(const char* name) {
    HMODULE kernel32 = GetModuleHandleW(L"kernel32.dll");
    if (kernel32 == nullptr) return nullptr;
    FARPROC proc = GetProcAddress(kernel32, name);
    // Going through void(*)() keeps -Wcast-function-type quiet: it is the documented
    // "matches anything" function type.
    return proc == nullptr ? nullptr : reinterpret_cast<Fn>(reinterpret_cast<void (*)()>(proc));
}

uint64_t page_bytes() {
    SYSTEM_INFO info{};
    GetSystemInfo(&info);
    return info.dwPageSize != 0 ? info.dwPageSize : 4096;
}

class Win32MappedFile final : public MappedFile {
public:
    Win32MappedFile(std::string path, LoadMode mode, uint8_t* data, uint64_t size)
        : path_(std::move(path)), mode_(mode), data_(data), size_(size) {}
    ~Win32MappedFile() override {
        if (data_ == nullptr) return;
        if (mode_ == LoadMode::Map)
            UnmapViewOfFile(data_);
        else
            VirtualFree(data_, 0, MEM_RELEASE);
    }
    const uint8_t* data() const override { return data_; }
    uint64_t size() const override { return size_; }
    const std::string& path() const override { return path_; }
    LoadMode mode() const override { return mode_; }

    void advise_willneed(uint64_t offset, uint64_t bytes) const override {
        if (data_ == nullptr || mode_ != LoadMode::Map || offset >= size_) return;
        static const auto prefetch = kernel32_function<PrefetchVirtualMemoryFn>("PrefetchVirtualMemory");
        if (prefetch == nullptr) return;  // Windows 7: no prefetch API, the page faults do the work
        const uint64_t page = page_bytes();
        const uint64_t start = offset & ~(page - 1);
        const uint64_t end = offset + std::min(bytes, size_ - offset);
        PrefetchRange range{data_ + start, static_cast<SIZE_T>(end - start)};
        prefetch(GetCurrentProcess(), 1, &range, 0);
    }

    uint64_t resident_bytes() const override {
        if (data_ == nullptr) return 0;
        if (mode_ == LoadMode::ReadAnon) return size_;
        static const auto query = kernel32_function<QueryWorkingSetExFn>("K32QueryWorkingSetEx");
        if (query == nullptr) return 0;
        const uint64_t page = page_bytes();
        const uint64_t pages = (size_ + page - 1) / page;
        constexpr uint64_t kBatchPages = 65536;               // 1 MiB of query records per call
        std::vector<PSAPI_WORKING_SET_EX_INFORMATION> batch;  // [min(pages, kBatchPages)] one record per page
        uint64_t resident = 0;
        for (uint64_t first = 0; first < pages; first += kBatchPages) {
            const uint64_t n = std::min(kBatchPages, pages - first);
            batch.assign(static_cast<size_t>(n), PSAPI_WORKING_SET_EX_INFORMATION{});
            for (uint64_t i = 0; i < n; ++i) batch[static_cast<size_t>(i)].VirtualAddress = data_ + (first + i) * page;
            const DWORD query_bytes = static_cast<DWORD>(n * sizeof(PSAPI_WORKING_SET_EX_INFORMATION));
            if (!query(GetCurrentProcess(), batch.data(), query_bytes)) return 0;
            for (const auto& info : batch) resident += info.VirtualAttributes.Valid ? page : 0;
        }
        return std::min(resident, size_);
    }

private:
    std::string path_;
    LoadMode mode_;
    uint8_t* data_;
    uint64_t size_;
};

struct Handle {
    HANDLE h = nullptr;
    ~Handle() {
        if (h != nullptr && h != INVALID_HANDLE_VALUE) CloseHandle(h);
    }
};

Result<std::shared_ptr<MappedFile>> map_view(const std::string& path, HANDLE file, uint64_t size) {
    Handle mapping;
    mapping.h = CreateFileMappingW(file, nullptr, PAGE_READONLY, 0, 0, nullptr);
    if (mapping.h == nullptr)
        return make_error(ErrorKind::Io, os_error("CreateFileMapping failed", path, GetLastError()));
    // The view keeps the section (and the file) alive after both handles close.
    void* view = MapViewOfFile(mapping.h, FILE_MAP_READ, 0, 0, 0);
    if (view == nullptr) return make_error(ErrorKind::Io, os_error("MapViewOfFile failed", path, GetLastError()));
    return std::shared_ptr<MappedFile>(
        std::make_shared<Win32MappedFile>(path, LoadMode::Map, static_cast<uint8_t*>(view), size));
}

Result<std::shared_ptr<MappedFile>> read_anonymous(const std::string& path, HANDLE file, uint64_t size,
                                                   const MappedFile::AnonTransform& transform) {
    // Plain pages: large pages need SeLockMemoryPrivilege, which ordinary users do not hold.
    void* memory = VirtualAlloc(nullptr, static_cast<SIZE_T>(size), MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
    if (memory == nullptr)
        return make_error(ErrorKind::OutOfMemory,
                          os_error("cannot allocate " + std::to_string(size) + " bytes for", path, GetLastError()));
    auto* dst = static_cast<uint8_t*>(memory);  // [size] bytes, a copy of the file
    uint64_t done = 0;
    while (done < size) {
        const DWORD want = static_cast<DWORD>(std::min<uint64_t>(size - done, 1ull << 30));
        DWORD got = 0;
        if (!ReadFile(file, dst + done, want, &got, nullptr)) {
            const DWORD code = GetLastError();
            VirtualFree(memory, 0, MEM_RELEASE);
            return make_error(ErrorKind::Io, os_error("read failed at byte " + std::to_string(done), path, code));
        }
        if (got == 0) {
            VirtualFree(memory, 0, MEM_RELEASE);
            return make_error(ErrorKind::Io,
                              path + ": file shrank while reading (at byte " + std::to_string(done) + ")");
        }
        done += got;
    }
    if (transform) transform(dst, size);
    DWORD old_protect = 0;
    VirtualProtect(memory, static_cast<SIZE_T>(size), PAGE_READONLY, &old_protect);
    return std::shared_ptr<MappedFile>(std::make_shared<Win32MappedFile>(path, LoadMode::ReadAnon, dst, size));
}

} // namespace

Result<std::shared_ptr<MappedFile>> MappedFile::open(const std::string& path, LoadMode mode, const AnonTransform& transform) {
    if (path.empty()) return make_error("cannot open a file with an empty path");
    auto wide = widen(path);
    if (!wide) return wide.take_error();

    const DWORD attributes = GetFileAttributesW(wide->c_str());
    if (attributes != INVALID_FILE_ATTRIBUTES && (attributes & FILE_ATTRIBUTE_DIRECTORY) != 0)
        return make_error(path + ": is a directory, not a file");

    Handle file;
    // The sequential hint only shapes the cache manager's read-ahead for ReadFile (ReadAnon).
    const DWORD hint = mode == LoadMode::ReadAnon ? FILE_FLAG_SEQUENTIAL_SCAN : 0;
    file.h = CreateFileW(wide->c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                         FILE_ATTRIBUTE_NORMAL | hint, nullptr);
    if (file.h == INVALID_HANDLE_VALUE) return make_error(ErrorKind::Io, os_error("cannot open", path, GetLastError()));

    LARGE_INTEGER file_size{};
    if (!GetFileSizeEx(file.h, &file_size))
        return make_error(ErrorKind::Io, os_error("cannot get size of", path, GetLastError()));
    const uint64_t size = static_cast<uint64_t>(file_size.QuadPart);
    if (size == 0) return std::shared_ptr<MappedFile>(std::make_shared<Win32MappedFile>(path, mode, nullptr, 0));
    if (size > static_cast<uint64_t>(SIZE_MAX))
        return make_error(ErrorKind::Unsupported,
                          path + ": " + std::to_string(size) + " bytes do not fit in this process's address space");

    return mode == LoadMode::Map ? map_view(path, file.h, size) : read_anonymous(path, file.h, size, transform);
}

} // namespace cflow
