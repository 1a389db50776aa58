#pragma once
// Staged expert fetch (paper 3.9.4): the router-selected expert byte ranges are read from storage
// with direct I/O into sector-aligned staging buffers through an AsyncReader (io_uring, overlapped
// I/O or a reader-thread pool: IoBackend); the request is issued at the routing layer and waited
// for at the injection layer, so under an expert delay the read overlaps the intervening layers'
// compute. A slot is never reused while its read is in flight. With an ExpertCache, request()
// serves a cached expert from RAM (no read is queued; the ticket is ready at once) and release()
// offers a read expert's bytes to the cache. The cache calls are made on the caller's thread, in
// request/release order, so which experts hit depends only on the routing sequence: the Sync and
// Staged arms hit alike.
//
// Thread safety: request(), wait() and release() are called by one thread (the session's forward
// pass); so are the reader's submit/wait/reap, which the fetcher calls from them. A ticket belongs
// to the caller from request() to release(); releasing a ticket whose read is still in flight
// (a step that failed between routing and injection) keeps its buffer alive until the read
// completes. Destroying the fetcher cancels the reads in flight and waits for them (the reader's
// destructor) before the staging buffers are freed.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cflow/base/result.h"
#include "cflow/engine/io/io_backend.h"
#include "io/aligned_bytes.h"
#include "io/async_reader.h"
#include "io/expert_cache.h"

namespace cflow {

struct ExpertFetcherOptions {
    IoBackend backend = IoBackend::Auto;
    unsigned readerThreads = 2;  // IoBackend::Threads (and Auto's fallback)
    // Reads the session keeps in flight at once: top_k x (expert_delay + 1) routed experts. Sizes
    // the io_uring queue; more still work (they wait in the reader for room).
    unsigned readsInFlight = 16;
};

class ExpertFetcher {
public:
    // cache: nullptr = every request reads from storage. Errors as AsyncReader::open: Io when the
    // file cannot be opened, Unsupported when an explicitly asked backend cannot run here.
    static Result<std::unique_ptr<ExpertFetcher>> create(const std::string& path, const ExpertFetcherOptions& options,
                                                         std::shared_ptr<ExpertCache> cache = nullptr);
    ~ExpertFetcher();
    ExpertFetcher(const ExpertFetcher&) = delete;
    ExpertFetcher& operator=(const ExpertFetcher&) = delete;

    struct Ticket {
        uint32_t id = 0;
        bool fromCache = false;  // served from the expert cache: nothing is read
    };
    // Queues a read of [offset, offset + bytes), the bytes of expert_cache_key `key`, unless the
    // cache holds them; returns its ticket.
    Ticket request(uint32_t key, uint64_t offset, uint64_t bytes);
    // Blocks until the ticket's bytes are staged; returns the address of byte `offset` and adds
    // the time spent blocked to waited_us.
    Result<const uint8_t*> wait(uint32_t ticket, float& waited_us);
    // Returns the ticket's slot to the free list; a completed read's bytes are offered to the
    // cache. Before wait(): the read is abandoned (its slot is freed once it completes).
    void release(uint32_t ticket);
    bool direct() const { return reader_->direct(); }
    IoBackend backend() const { return reader_->backend(); }
    const std::string& fallback_reason() const { return reader_->fallback_reason(); }
    const ExpertCache* cache() const { return cache_.get(); }

private:
    // Free -> Reading (submitted) -> Done | Failed -> Free at release(); Reading -> Abandoned at
    // a release() before the read completed -> Free when the reader reports it.
    enum class SlotState : uint8_t { Free, Reading, Done, Failed, Abandoned };
    struct Slot {
        // [>= aligned length] bytes, alignment-aligned: the read target. Also shared with the
        // cache once inserted; then it is never written again (request() allocates a fresh one).
        std::shared_ptr<AlignedBytes> buffer;
        std::shared_ptr<const AlignedBytes> cached;  // a hit: the cache's bytes, [aligned length]
        uint32_t key = 0;
        uint64_t aligned_offset = 0;  // file offset of buffer[0] (or cached[0])
        uint64_t offset = 0;          // requested range
        uint64_t bytes = 0;
        SlotState state = SlotState::Free;
        Error error;  // when Failed: OutOfMemory (staging buffer), the reader's Io, or a refused submit
    };

    ExpertFetcher(std::unique_ptr<AsyncReader> reader, std::shared_ptr<ExpertCache> cache);
    uint64_t aligned_length(const Slot& s) const;
    void settle(uint32_t ticket, Status status);  // a read's outcome reached its slot
    void collect_abandoned();                     // frees abandoned slots whose reads have completed

    std::shared_ptr<ExpertCache> cache_;  // may be null
    std::vector<Slot> slots_;             // by ticket id (the read's tag)
    uint32_t abandoned_ = 0;              // slots in SlotState::Abandoned
    std::vector<ReadCompletion> reaped_;  // scratch for collect_abandoned
    // Declared last, destroyed first: its destructor waits for every read in flight, which
    // writes into slots_' buffers.
    std::unique_ptr<AsyncReader> reader_;
};

} // namespace cflow
