#pragma once
// Staged expert fetch (paper 3.9.4): reader threads pull the router-selected expert byte
// ranges from storage with direct I/O into sector-aligned staging buffers; the request is
// issued at the routing layer and waited for at the injection layer, so under an expert
// delay the read overlaps the intervening layers' compute. A slot is never reused while its
// read is in flight. With an ExpertCache, request() serves a cached expert from RAM (no read is
// queued; the ticket is ready at once) and release() offers a read expert's bytes to the cache.
// The cache calls are made on the caller's thread, in request/release order, so which experts
// hit depends only on the routing sequence: the Sync and Staged arms hit alike.
//
// Thread safety: request(), wait() and release() are called by one thread (the session's
// forward pass); the reader threads it owns share only the slot table, under mutex_. A ticket
// belongs to the caller from request() to release(); destroying the fetcher joins the readers
// after their current read.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cflow/base/result.h"
#include "io/aligned_bytes.h"
#include "io/direct_reader.h"
#include "io/expert_cache.h"

namespace cflow {

class ExpertFetcher {
public:
    // cache: nullptr = every request reads from storage.
    static Result<std::unique_ptr<ExpertFetcher>> create(const std::string& path, unsigned reader_threads,
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
    // Returns the ticket's slot to the free list (after wait()); a completed read's bytes are
    // offered to the cache.
    void release(uint32_t ticket);
    bool direct() const { return reader_->direct(); }
    const ExpertCache* cache() const { return cache_.get(); }

private:
    enum class SlotState : uint8_t { Free, Queued, Reading, Done, Failed };
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
        Error error;  // when Failed: OutOfMemory (staging buffer) or the reader's kind (Io)
    };

    ExpertFetcher(std::unique_ptr<DirectReader> reader, std::shared_ptr<ExpertCache> cache);
    void reader_loop();

    std::unique_ptr<DirectReader> reader_;
    std::shared_ptr<ExpertCache> cache_;  // may be null
    std::vector<Slot> slots_;
    std::deque<uint32_t> queue_;
    std::mutex mutex_;
    std::condition_variable work_cv_;
    std::condition_variable done_cv_;
    bool stop_ = false;
    std::vector<std::thread> threads_;
};

} // namespace cflow
