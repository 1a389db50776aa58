#include "cflow/engine/thread_pool.h"

#include <algorithm>

namespace cflow {

ThreadPool::ThreadPool(unsigned threads) {
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : workers_) t.join();
}

namespace {
// Chunk `index` of `parts` over [0, n): contiguous, sizes differ by at most one.
std::pair<size_t, size_t> chunk(size_t n, unsigned parts, unsigned index) {
    size_t base = n / parts, extra = n % parts;
    size_t begin = index * base + std::min<size_t>(index, extra);
    return {begin, begin + base + (index < extra ? 1 : 0)};
}
} // namespace

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn) {
    if (n == 0) return;
    if (workers_.empty() || n == 1) {
        fn(0, n);
        return;
    }
    {
        std::lock_guard lock(mutex_);
        job_ = &fn;
        job_n_ = n;
        pending_ = static_cast<unsigned>(workers_.size());
        ++generation_;
    }
    work_cv_.notify_all();
    auto [b, e] = chunk(n, size(), 0);
    if (b < e) fn(b, e);
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [this] { return pending_ == 0; });
    job_ = nullptr;
}

void ThreadPool::worker_loop(unsigned index) {
    size_t seen = 0;
    for (;;) {
        const std::function<void(size_t, size_t)>* job;
        size_t n;
        {
            std::unique_lock lock(mutex_);
            work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
            job = job_;
            n = job_n_;
        }
        auto [b, e] = chunk(n, size(), index);
        if (b < e) (*job)(b, e);
        {
            std::lock_guard lock(mutex_);
            if (--pending_ == 0) done_cv_.notify_one();
        }
    }
}

} // namespace cflow
