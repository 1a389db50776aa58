#pragma once
// A fixed pool of worker threads for the matvecs of one inference session.
// parallel_for blocks the calling thread, which also takes a share of the work.
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cflow {

class ThreadPool {
public:
    explicit ThreadPool(unsigned threads);  // total threads including the caller; 0 = hardware concurrency
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }

    // Calls fn(begin, end) on disjoint chunks covering [0, n); returns when all are done.
    void parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn);

private:
    void worker_loop(unsigned index);

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable work_cv_;
    std::condition_variable done_cv_;
    const std::function<void(size_t, size_t)>* job_ = nullptr;
    size_t job_n_ = 0;
    size_t generation_ = 0;
    unsigned pending_ = 0;
    bool stop_ = false;
};

} // namespace cflow
