#include "io/expert_fetcher.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace cflow {

Result<std::unique_ptr<ExpertFetcher>> ExpertFetcher::create(const std::string& path, const ExpertFetcherOptions& options,
                                                               std::shared_ptr<ExpertCache> cache) {
    AsyncReaderOptions reader_options;
    reader_options.queueDepth = std::max(1u, options.readsInFlight);
    reader_options.readerThreads = std::max(1u, options.readerThreads);
    auto reader = AsyncReader::open(path, options.backend, reader_options);
    if (!reader) return reader.take_error();
    return std::unique_ptr<ExpertFetcher>(new ExpertFetcher(std::move(reader.value()), std::move(cache)));
}

ExpertFetcher::ExpertFetcher(std::unique_ptr<AsyncReader> reader, std::shared_ptr<ExpertCache> cache)
    : cache_(std::move(cache)), reader_(std::move(reader)) {}

ExpertFetcher::~ExpertFetcher() {
    // First the reads in flight (cancelled, then waited for), then the buffers they write into.
    reader_.reset();
}

uint64_t ExpertFetcher::aligned_length(const Slot& s) const {
    const uint64_t align = reader_->alignment();
    return (s.offset + s.bytes + align - 1) / align * align - s.aligned_offset;
}

ExpertFetcher::Ticket ExpertFetcher::request(uint32_t key, uint64_t offset, uint64_t bytes) {
    if (abandoned_ > 0) collect_abandoned();
    uint32_t ticket = 0;
    while (ticket < slots_.size() && slots_[ticket].state != SlotState::Free) ++ticket;
    if (ticket == slots_.size()) slots_.emplace_back();
    Slot& s = slots_[ticket];
    const uint64_t align = reader_->alignment();
    s.aligned_offset = offset / align * align;
    s.key = key;
    s.offset = offset;
    s.bytes = bytes;
    s.error = Error{};
    s.cached.reset();
    const uint64_t length = aligned_length(s);
    if (cache_) {
        if (auto hit = cache_->find(key); hit && hit->size() >= length) {
            s.cached = std::move(hit);
            s.state = SlotState::Done;
            return {ticket, true};
        }
    }
    // A buffer the cache (or a hit slot) shares must not be overwritten: read into a fresh one.
    // use_count() is exact here: only this slot can hand out new references to its buffer.
    if (!s.buffer || s.buffer.use_count() > 1 || s.buffer->size() < length) s.buffer = AlignedBytes::allocate(align, length);
    if (!s.buffer) {
        s.state = SlotState::Failed;
        s.error = make_error(ErrorKind::OutOfMemory, "out of memory for a " + std::to_string(length) +
                                                         "-byte expert staging buffer");
        return {ticket, false};
    }
    if (Status st = reader_->submit(s.aligned_offset, length, s.buffer->data(), ticket); !st) {
        s.state = SlotState::Failed;  // nothing was queued: wait() reports it
        s.error = st.take_error();
        return {ticket, false};
    }
    s.state = SlotState::Reading;
    return {ticket, false};
}

void ExpertFetcher::settle(uint32_t ticket, Status status) {
    Slot& s = slots_[ticket];
    if (s.state == SlotState::Abandoned) {
        s.state = SlotState::Free;  // nobody reads these bytes; the buffer may be reused
        --abandoned_;
        return;
    }
    s.state = status ? SlotState::Done : SlotState::Failed;
    if (!status) s.error = status.take_error();
}

void ExpertFetcher::collect_abandoned() {
    reaped_.clear();
    reader_->reap(reaped_);
    for (ReadCompletion& c : reaped_) settle(uint32_t(c.tag), std::move(c.status));
}

Result<const uint8_t*> ExpertFetcher::wait(uint32_t ticket, float& waited_us) {
    Slot& s = slots_[ticket];
    if (s.state == SlotState::Reading) {
        const auto t0 = std::chrono::steady_clock::now();
        Status st = reader_->wait(ticket);
        waited_us += std::chrono::duration<float, std::micro>(std::chrono::steady_clock::now() - t0).count();
        settle(ticket, std::move(st));
    }
    if (s.state == SlotState::Failed) return s.error;
    if (s.state != SlotState::Done)
        return make_error(ErrorKind::Internal, "expert ticket " + std::to_string(ticket) + " waited for after release");
    const uint8_t* base = s.cached ? s.cached->data() : s.buffer->data();
    return base + (s.offset - s.aligned_offset);
}

void ExpertFetcher::release(uint32_t ticket) {
    Slot& s = slots_[ticket];
    if (s.state == SlotState::Reading) {
        // The read still writes into s.buffer: the slot stays taken until it completes.
        s.state = SlotState::Abandoned;
        ++abandoned_;
        return;
    }
    if (s.state != SlotState::Done && s.state != SlotState::Failed) return;
    // Only whole, successful reads are offered; the cache keeps the exact aligned range.
    if (s.state == SlotState::Done && !s.cached && cache_) {
        const uint64_t length = aligned_length(s);
        if (s.buffer->size() == length) {
            cache_->insert(s.key, s.buffer);
        } else if (auto exact = AlignedBytes::allocate(reader_->alignment(), length)) {
            // A reused larger staging buffer: cache a right-sized copy so the budget counts the expert.
            std::memcpy(exact->data(), s.buffer->data(), size_t(length));
            cache_->insert(s.key, std::move(exact));
        }
    }
    s.cached.reset();  // an evicted entry is freed once no slot uses it
    s.state = SlotState::Free;
}

} // namespace cflow
