#pragma once
// Staged expert fetch (paper 3.9.4): reader threads pull the router-selected expert byte
// ranges from storage with direct I/O into sector-aligned staging buffers; the request is
// issued at the routing layer and waited for at the injection layer, so under an expert
// delay the read overlaps the intervening layers' compute. A slot is never reused while its
// read is in flight.
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
#include "io/direct_reader.h"

namespace cflow {

class ExpertFetcher {
public:
    static Result<std::unique_ptr<ExpertFetcher>> create(const std::string& path, unsigned reader_threads);
    ~ExpertFetcher();
    ExpertFetcher(const ExpertFetcher&) = delete;
    ExpertFetcher& operator=(const ExpertFetcher&) = delete;

    // Queues a read of [offset, offset + bytes); returns its ticket.
    uint32_t request(uint64_t offset, uint64_t bytes);
    // Blocks until the ticket's bytes are staged; returns the address of byte `offset` and adds
    // the time spent blocked to waited_us.
    Result<const uint8_t*> wait(uint32_t ticket, float& waited_us);
    // Returns the ticket's slot to the free list (after wait()).
    void release(uint32_t ticket);
    bool direct() const { return reader_->direct(); }

private:
    enum class SlotState : uint8_t { Free, Queued, Reading, Done, Failed };
    struct AlignedFree {
        void operator()(uint8_t* p) const;
    };
    struct Slot {
        std::unique_ptr<uint8_t, AlignedFree> buffer;  // [capacity] bytes, alignment-aligned
        uint64_t capacity = 0;
        uint64_t aligned_offset = 0;  // file offset of buffer[0]
        uint64_t offset = 0;          // requested range
        uint64_t bytes = 0;
        SlotState state = SlotState::Free;
        Error error;  // when Failed: OutOfMemory (staging buffer) or the reader's kind (Io)
    };

    explicit ExpertFetcher(std::unique_ptr<DirectReader> reader);
    void reader_loop();

    std::unique_ptr<DirectReader> reader_;
    std::vector<Slot> slots_;
    std::deque<uint32_t> queue_;
    std::mutex mutex_;
    std::condition_variable work_cv_;
    std::condition_variable done_cv_;
    bool stop_ = false;
    std::vector<std::thread> threads_;
};

} // namespace cflow
