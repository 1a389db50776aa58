#include <windows.h>

#include "io/direct_reader.h"
#include "io/platform/open_direct_win32.h"
#include "io/read_progress.h"

namespace cflow {
namespace {

// Blocking positioned reads: the handle is opened without FILE_FLAG_OVERLAPPED, so ReadFile
// returns when the piece is read; the OVERLAPPED only carries the offset (no shared file
// pointer, so several threads may read at once).
class Win32DirectReader final : public DirectReader {
public:
    Win32DirectReader(ReadFileFacts facts, HANDLE h) : facts_(std::move(facts)), handle_(h) {}
    ~Win32DirectReader() override { CloseHandle(handle_); }

    Status read(uint64_t offset, uint64_t bytes, void* destination) override {
        ReadProgress progress{offset, bytes, static_cast<uint8_t*>(destination)};
        while (progress.doneBytes < progress.bytes) {
            OVERLAPPED ov{};
            ov.Offset = DWORD(progress.next_offset() & 0xFFFFFFFFu);
            ov.OffsetHigh = DWORD(progress.next_offset() >> 32);
            DWORD got = 0;
            if (!ReadFile(handle_, progress.next_destination(), progress.next_bytes(), &got, &ov)) {
                const DWORD err = GetLastError();
                if (err != ERROR_HANDLE_EOF) return read_failure(facts_, progress, windows_error_text(err));
                got = 0;
            }
            auto outcome = account_piece(progress, got, facts_);
            if (!outcome) return outcome.take_error();
            if (*outcome == PieceOutcome::Finished) break;
        }
        return {};
    }
    uint64_t alignment() const override { return facts_.alignment; }
    bool direct() const override { return facts_.direct; }
    uint64_t file_bytes() const override { return facts_.fileBytes; }

private:
    ReadFileFacts facts_;
    HANDLE handle_;
};

} // namespace

Result<std::unique_ptr<DirectReader>> DirectReader::open(const std::string& path) {
    auto file = open_for_direct_reads(path, /*overlapped=*/false);
    if (!file) return file.take_error();
    return std::unique_ptr<DirectReader>(new Win32DirectReader(std::move(file->facts), HANDLE(file->handle)));
}

} // namespace cflow
