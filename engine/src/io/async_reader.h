#pragma once
// Asynchronous positioned reads of one file, bypassing the page cache where the file system
// allows: submit() queues a read into a sector-aligned destination under a caller-chosen tag and
// returns at once; wait(tag) blocks until that read is complete, reap() collects finished reads
// without blocking. One implementation per OS under platform/ (io_uring on Linux, overlapped
// ReadFile on Windows) and a portable reader-thread pool (async_reader_threads.cpp); open()
// picks one (IoBackend, cflow/engine/io/io_backend.h).
//
// Every backend delivers a read whole or fails it: short reads and interrupted or retryable
// pieces are resubmitted from where they stopped, and the end of the file before the bytes asked
// for is an Io error naming the file and the byte (read_progress.h), never stale bytes.
//
// Thread safety: submit(), wait() and reap() are called by one thread at a time (the session's
// forward pass); the backend's own threads, if any, stay inside it. A destination belongs to the
// reader from submit() until its tag is returned by wait() or reap(), or the reader is destroyed:
// the destructor cancels what has not started and waits for what has, so no read writes into a
// destination after it returns. Nothing throws.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cflow/base/result.h"
#include "cflow/engine/io/io_backend.h"

namespace cflow {

struct AsyncReaderOptions {
    // Reads the caller keeps in flight at once (the fetcher's slots): the io_uring queue depth.
    // More may be submitted; the excess waits in the reader until a read completes.
    unsigned queueDepth = 16;
    unsigned readerThreads = 2;  // IoBackend::Threads
};

struct ReadCompletion {
    uint64_t tag = 0;
    Status status;  // Io (the OS refused, or the file ended early) or Cancelled
};

class AsyncReader {
public:
    // Opens `path` for the backend asked. Auto takes the OS's asynchronous backend and, where it
    // cannot start, the reader pool, recording why in fallback_reason(). An explicit backend that
    // cannot run here fails with Unsupported and the reason; a file that cannot be opened, Io.
    static Result<std::unique_ptr<AsyncReader>> open(const std::string& path, IoBackend backend,
                                                     const AsyncReaderOptions& options = {});
    virtual ~AsyncReader() = default;
    AsyncReader() = default;
    AsyncReader(const AsyncReader&) = delete;
    AsyncReader& operator=(const AsyncReader&) = delete;

    // Queues a read of [offset, offset + bytes) into destination ([bytes] bytes). Where direct()
    // offset, bytes and destination must be multiples of alignment() (else InvalidInput). `tag`
    // must not be in flight already (InvalidInput). An error here means nothing was queued.
    virtual Status submit(uint64_t offset, uint64_t bytes, void* destination, uint64_t tag) = 0;
    // Blocks until read `tag` is complete and returns its outcome; the tag is then free again.
    // InvalidInput for a tag that is not in flight (never submitted, or already waited/reaped).
    virtual Status wait(uint64_t tag) = 0;
    // Appends every read that has completed and was not yet waited for; does not block.
    virtual void reap(std::vector<ReadCompletion>& completed) = 0;

    virtual uint64_t alignment() const = 0;
    virtual bool direct() const = 0;      // false where the file system refused direct I/O
    virtual uint64_t file_bytes() const = 0;
    virtual IoBackend backend() const = 0;  // never Auto
    // Why Auto runs the reader pool instead of the OS's asynchronous backend; empty otherwise.
    const std::string& fallback_reason() const { return fallbackReason_; }

private:
    std::string fallbackReason_;
};

// Backends, one per file. The OS's asynchronous one: io_uring (platform/async_reader_posix.cpp,
// Unsupported on a kernel, build or sandbox without it) or overlapped I/O
// (platform/async_reader_win32.cpp).
Result<std::unique_ptr<AsyncReader>> open_os_async_reader(const std::string& path, const AsyncReaderOptions& options);
IoBackend os_async_backend();  // Uring or Overlapped: what open_os_async_reader opens on this OS
// The portable reader pool over DirectReader (async_reader_threads.cpp).
Result<std::unique_ptr<AsyncReader>> open_thread_pool_reader(const std::string& path, const AsyncReaderOptions& options);

} // namespace cflow
