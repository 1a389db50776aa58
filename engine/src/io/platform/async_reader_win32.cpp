// The OS's asynchronous AsyncReader on Windows: overlapped ReadFile on a handle opened with
// FILE_FLAG_OVERLAPPED | FILE_FLAG_NO_BUFFERING. Each read in flight owns an OVERLAPPED and a
// manual-reset event; ReadFile returns at once (ERROR_IO_PENDING) and GetOverlappedResult
// collects the piece when the fetcher waits (blocking) or reaps (polling), so no reader thread
// wakes per expert. Windows has no fixed queue like io_uring's ring: every submitted read is
// handed to the OS at once and queueDepth is not needed.
#include <windows.h>

#include <unordered_map>

#include "io/async_reader.h"
#include "io/platform/open_direct_win32.h"
#include "io/read_progress.h"

namespace cflow {

IoBackend os_async_backend() { return IoBackend::Overlapped; }

namespace {

class OverlappedReader final : public AsyncReader {
public:
    OverlappedReader(ReadFileFacts facts, HANDLE file) : facts_(std::move(facts)), file_(file) {}

    ~OverlappedReader() override {
        // A pending ReadFile writes into its destination until it completes: cancel them all and
        // wait for each to come back before the caller may free the buffers.
        CancelIoEx(file_, nullptr);
        for (auto& [tag, r] : requests_) {
            if (!r->pending) continue;
            DWORD got = 0;
            (void)GetOverlappedResult(file_, &r->ov, &got, TRUE);  // done or ERROR_OPERATION_ABORTED
        }
        for (auto& [tag, r] : requests_) CloseHandle(r->event);
        for (HANDLE e : spareEvents_) CloseHandle(e);
        CloseHandle(file_);
    }

    Status submit(uint64_t offset, uint64_t bytes, void* destination, uint64_t tag) override {
        if (Status st = check_alignment(facts_, offset, bytes, destination); !st) return st;
        if (requests_.count(tag))
            return make_error(ErrorKind::InvalidInput, "read tag " + std::to_string(tag) + " is already in flight");
        HANDLE event = nullptr;
        if (!spareEvents_.empty()) {
            event = spareEvents_.back();
            spareEvents_.pop_back();
        } else if (!(event = CreateEventW(nullptr, TRUE, FALSE, nullptr))) {
            return make_error(ErrorKind::Io, facts_.path + ": cannot create an event for an overlapped read: " +
                                                 windows_error_text(GetLastError()));
        }
        auto request = std::make_unique<Request>();
        request->event = event;
        request->progress = ReadProgress{offset, bytes, static_cast<uint8_t*>(destination)};
        Request& r = *request;
        requests_.emplace(tag, std::move(request));
        if (bytes == 0) {
            r.finished = true;
        } else {
            issue(r);
        }
        return {};
    }

    Status wait(uint64_t tag) override {
        auto it = requests_.find(tag);
        if (it == requests_.end())
            return make_error(ErrorKind::InvalidInput, "no read with tag " + std::to_string(tag) + " is in flight");
        Request& r = *it->second;
        while (!r.finished) collect(r, /*block=*/true);
        Status status = std::move(r.status);
        forget(it);
        return status;
    }

    void reap(std::vector<ReadCompletion>& completed) override {
        for (auto it = requests_.begin(); it != requests_.end();) {
            Request& r = *it->second;
            if (!r.finished && r.pending) collect(r, /*block=*/false);
            if (!r.finished) {
                ++it;
                continue;
            }
            completed.push_back({it->first, std::move(r.status)});
            it = forget(it);
        }
    }

    uint64_t alignment() const override { return facts_.alignment; }
    bool direct() const override { return facts_.direct; }
    uint64_t file_bytes() const override { return facts_.fileBytes; }
    IoBackend backend() const override { return IoBackend::Overlapped; }

private:
    struct Request {
        OVERLAPPED ov{};          // the pending piece's; stays at this address (the map holds a unique_ptr)
        HANDLE event = nullptr;   // manual-reset, signalled by the OS when the piece completes
        ReadProgress progress;    // destination: the caller's [bytes] bytes
        bool pending = false;     // a piece is with the OS
        bool finished = false;
        Status status;
    };
    using Requests = std::unordered_map<uint64_t, std::unique_ptr<Request>>;

    static void finish(Request& r, Status status) {
        r.finished = true;
        r.status = std::move(status);
    }

    // Hands the read's next piece to the OS.
    void issue(Request& r) {
        r.ov = OVERLAPPED{};
        r.ov.Offset = DWORD(r.progress.next_offset() & 0xFFFFFFFFu);
        r.ov.OffsetHigh = DWORD(r.progress.next_offset() >> 32);
        r.ov.hEvent = r.event;
        // TRUE: it completed at once; GetOverlappedResult still reports how much it read.
        if (ReadFile(file_, r.progress.next_destination(), r.progress.next_bytes(), nullptr, &r.ov) ||
            GetLastError() == ERROR_IO_PENDING) {
            r.pending = true;
            return;
        }
        const DWORD err = GetLastError();
        if (err == ERROR_HANDLE_EOF) return account(r, 0);
        finish(r, read_failure(facts_, r.progress, windows_error_text(err)));
    }

    // Collects the pending piece (blocking or not), then accounts it.
    void collect(Request& r, bool block) {
        DWORD got = 0;
        if (GetOverlappedResult(file_, &r.ov, &got, block ? TRUE : FALSE)) {
            r.pending = false;
            return account(r, got);
        }
        const DWORD err = GetLastError();
        if (err == ERROR_IO_INCOMPLETE) return;  // polling, still reading
        r.pending = false;
        if (err == ERROR_HANDLE_EOF) return account(r, 0);
        if (err == ERROR_OPERATION_ABORTED) return finish(r, make_error(ErrorKind::Cancelled, facts_.path + ": read cancelled"));
        finish(r, read_failure(facts_, r.progress, windows_error_text(err)));
    }

    void account(Request& r, uint64_t bytesRead) {
        auto outcome = account_piece(r.progress, bytesRead, facts_);
        if (!outcome) return finish(r, outcome.take_error());
        if (*outcome == PieceOutcome::Finished) return finish(r, {});
        issue(r);  // a short read: the rest, from where it stopped
    }

    Requests::iterator forget(Requests::iterator it) {
        spareEvents_.push_back(it->second->event);
        return requests_.erase(it);
    }

    ReadFileFacts facts_;
    HANDLE file_;
    Requests requests_;                // by tag, until waited for or reaped
    std::vector<HANDLE> spareEvents_;  // events of finished reads, reused
};

} // namespace

Result<std::unique_ptr<AsyncReader>> open_os_async_reader(const std::string& path, const AsyncReaderOptions&) {
    auto file = open_for_direct_reads(path, /*overlapped=*/true);
    if (!file) return file.take_error();
    return std::unique_ptr<AsyncReader>(new OverlappedReader(std::move(file->facts), HANDLE(file->handle)));
}

} // namespace cflow
