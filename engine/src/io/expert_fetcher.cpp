#include "io/expert_fetcher.h"

#include <chrono>
#include <cstdlib>
#include <new>

namespace cflow {

void ExpertFetcher::AlignedFree::operator()(uint8_t* p) const {
#ifdef _WIN32
    _aligned_free(p);
#else
    std::free(p);
#endif
}

namespace {
uint8_t* aligned_alloc_bytes(uint64_t alignment, uint64_t bytes) {
#ifdef _WIN32
    return static_cast<uint8_t*>(_aligned_malloc(size_t(bytes), size_t(alignment)));
#else
    return static_cast<uint8_t*>(std::aligned_alloc(size_t(alignment), size_t(bytes)));
#endif
}
} // namespace

Result<std::unique_ptr<ExpertFetcher>> ExpertFetcher::create(const std::string& path, unsigned reader_threads) {
    auto reader = DirectReader::open(path);
    if (!reader) return reader.take_error();
    std::unique_ptr<ExpertFetcher> f(new ExpertFetcher(std::move(reader.value())));
    for (unsigned i = 0; i < std::max(1u, reader_threads); ++i) f->threads_.emplace_back([p = f.get()] { p->reader_loop(); });
    return f;
}

ExpertFetcher::ExpertFetcher(std::unique_ptr<DirectReader> reader) : reader_(std::move(reader)) {}

ExpertFetcher::~ExpertFetcher() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();
}

uint32_t ExpertFetcher::request(uint64_t offset, uint64_t bytes) {
    std::lock_guard lock(mutex_);
    uint32_t ticket = 0;
    while (ticket < slots_.size() && slots_[ticket].state != SlotState::Free) ++ticket;
    if (ticket == slots_.size()) slots_.emplace_back();
    Slot& s = slots_[ticket];
    const uint64_t align = reader_->alignment();
    s.aligned_offset = offset / align * align;
    const uint64_t end = (offset + bytes + align - 1) / align * align;
    if (s.capacity < end - s.aligned_offset) {
        s.capacity = end - s.aligned_offset;
        s.buffer.reset(aligned_alloc_bytes(align, s.capacity));
    }
    s.offset = offset;
    s.bytes = bytes;
    s.error = Error{};
    s.state = s.buffer ? SlotState::Queued : SlotState::Failed;
    if (!s.buffer) {
        s.capacity = 0;
        s.error = make_error(ErrorKind::OutOfMemory, "out of memory for a " + std::to_string(end - s.aligned_offset) +
                                                         "-byte expert staging buffer");
        return ticket;
    }
    queue_.push_back(ticket);
    work_cv_.notify_one();
    return ticket;
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
            dst = s.buffer.get();
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
    return static_cast<const uint8_t*>(s.buffer.get() + (s.offset - s.aligned_offset));
}

void ExpertFetcher::release(uint32_t ticket) {
    std::lock_guard lock(mutex_);
    Slot& s = slots_[ticket];
    if (s.state == SlotState::Done || s.state == SlotState::Failed) s.state = SlotState::Free;
}

} // namespace cflow
