#include "io/expert_fetcher.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace cflow {

Result<std::unique_ptr<ExpertFetcher>> ExpertFetcher::create(const std::string& path, unsigned reader_threads,
                                                               std::shared_ptr<ExpertCache> cache) {
    auto reader = DirectReader::open(path);
    if (!reader) return reader.take_error();
    std::unique_ptr<ExpertFetcher> f(new ExpertFetcher(std::move(reader.value()), std::move(cache)));
    for (unsigned i = 0; i < std::max(1u, reader_threads); ++i) f->threads_.emplace_back([p = f.get()] { p->reader_loop(); });
    return f;
}

ExpertFetcher::ExpertFetcher(std::unique_ptr<DirectReader> reader, std::shared_ptr<ExpertCache> cache)
    : reader_(std::move(reader)), cache_(std::move(cache)) {}

ExpertFetcher::~ExpertFetcher() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();
}

ExpertFetcher::Ticket ExpertFetcher::request(uint32_t key, uint64_t offset, uint64_t bytes) {
    std::lock_guard lock(mutex_);
    uint32_t ticket = 0;
    while (ticket < slots_.size() && slots_[ticket].state != SlotState::Free) ++ticket;
    if (ticket == slots_.size()) slots_.emplace_back();
    Slot& s = slots_[ticket];
    const uint64_t align = reader_->alignment();
    s.aligned_offset = offset / align * align;
    const uint64_t end = (offset + bytes + align - 1) / align * align;
    s.key = key;
    s.offset = offset;
    s.bytes = bytes;
    s.error = Error{};
    s.cached.reset();
    if (cache_) {
        if (auto hit = cache_->find(key); hit && hit->size() >= end - s.aligned_offset) {
            s.cached = std::move(hit);
            s.state = SlotState::Done;
            return {ticket, true};
        }
    }
    // A buffer the cache (or a hit slot) shares must not be overwritten: read into a fresh one.
    // use_count() is exact here: only this slot can hand out new references to its buffer.
    if (!s.buffer || s.buffer.use_count() > 1 || s.buffer->size() < end - s.aligned_offset)
        s.buffer = AlignedBytes::allocate(align, end - s.aligned_offset);
    if (!s.buffer) {
        s.state = SlotState::Failed;
        s.error = make_error(ErrorKind::OutOfMemory, "out of memory for a " + std::to_string(end - s.aligned_offset) +
                                                         "-byte expert staging buffer");
        return {ticket, false};
    }
    s.state = SlotState::Queued;
    queue_.push_back(ticket);
    work_cv_.notify_one();
    return {ticket, false};
}

void ExpertFetcher::reader_loop() {
    for (;;) {
        uint32_t ticket;
        uint64_t aligned_offset, length;
        uint8_t* dst;
        {
            std::unique_lock lock(mutex_);
            work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
            if (stop_) return;
            ticket = queue_.front();
            queue_.pop_front();
            Slot& s = slots_[ticket];
            s.state = SlotState::Reading;
            aligned_offset = s.aligned_offset;
            const uint64_t align = reader_->alignment();
            length = (s.offset + s.bytes + align - 1) / align * align - aligned_offset;
            dst = s.buffer->data();
        }
        Status st = reader_->read(aligned_offset, length, dst);
        {
            std::lock_guard lock(mutex_);
            Slot& s = slots_[ticket];
            s.state = st ? SlotState::Done : SlotState::Failed;
            if (!st) s.error = st.take_error();
        }
        done_cv_.notify_all();
    }
}

Result<const uint8_t*> ExpertFetcher::wait(uint32_t ticket, float& waited_us) {
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [&] {
        const SlotState st = slots_[ticket].state;
        return st == SlotState::Done || st == SlotState::Failed;
    });
    waited_us += std::chrono::duration<float, std::micro>(std::chrono::steady_clock::now() - t0).count();
    const Slot& s = slots_[ticket];
    if (s.state == SlotState::Failed) return s.error;
    const uint8_t* base = s.cached ? s.cached->data() : s.buffer->data();
    return base + (s.offset - s.aligned_offset);
}

void ExpertFetcher::release(uint32_t ticket) {
    std::lock_guard lock(mutex_);
    Slot& s = slots_[ticket];
    if (s.state != SlotState::Done && s.state != SlotState::Failed) return;
    // Only whole, successful reads are offered; the cache keeps the exact aligned range.
    if (s.state == SlotState::Done && !s.cached && cache_) {
        const uint64_t align = reader_->alignment();
        const uint64_t length = (s.offset + s.bytes + align - 1) / align * align - s.aligned_offset;
        if (s.buffer->size() == length) {
            cache_->insert(s.key, s.buffer);
        } else if (auto exact = AlignedBytes::allocate(align, length)) {
            // A reused larger staging buffer: cache a right-sized copy so the budget counts the expert.
            std::memcpy(exact->data(), s.buffer->data(), size_t(length));
            cache_->insert(s.key, std::move(exact));
        }
    }
    s.cached.reset();  // an evicted entry is freed once no slot uses it
    s.state = SlotState::Free;
}

} // namespace cflow
