#include "cflow/engine/forward/thread_pool.h"

#include "forward/address_wait.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
#include <immintrin.h>
#endif

namespace cflow {
namespace {

// Chunks per thread: enough that a preempted thread's share is taken by the others, few
// enough that claiming stays negligible next to a chunk's work.
constexpr size_t kChunksPerThread = 4;
// How long the caller spins for the last chunks before it sleeps.
constexpr std::chrono::nanoseconds kCallerSpin{20'000};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Spins (relaxing the core) until the value differs from `old` or `spin` has passed; returns
// the value last seen.
template <class T>
T spin_while_equal(const std::atomic<T>& value, T old, std::chrono::nanoseconds spin) {
    const auto start = std::chrono::steady_clock::now();
    T now = value.load(std::memory_order_acquire);
    for (unsigned i = 1; now == old; ++i) {
        cpu_relax();
        if (i % 64 == 0 && std::chrono::steady_clock::now() - start > spin) break;
        now = value.load(std::memory_order_acquire);
    }
    return now;
}

} // namespace

ThreadPool::ThreadPool(unsigned threads) {
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    try {
        for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
    } catch (...) {
        // A thread the OS refused: stop and join the ones already running (their std::thread
        // objects would terminate the process if destroyed joinable), then report it.
        shut_down();
        throw;
    }
}

ThreadPool::~ThreadPool() { shut_down(); }

void ThreadPool::shut_down() {
    stop_.store(true, std::memory_order_seq_cst);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    platform::wake_all(generation_);
    for (auto& t : workers_) t.join();
    workers_.clear();
}

void ThreadPool::run_chunks(Job& job) {
    for (;;) {
        const uint32_t c = job.next.fetch_add(1, std::memory_order_relaxed);
        if (c >= job.chunks) return;
        // Chunk c of `chunks` over [0, n): contiguous, sizes differ by at most one.
        const size_t begin = c * job.n / job.chunks, end = (c + 1) * job.n / job.chunks;
        if (begin < end) (*job.fn)(begin, end);
        // seq_cst pairs with the caller's callerAsleep store / done re-check: either the caller
        // sees the last chunk done, or this thread sees the caller asleep and wakes it.
        if (job.done.fetch_add(1, std::memory_order_seq_cst) + 1 == job.chunks &&
            job.callerAsleep.load(std::memory_order_seq_cst))
            platform::wake_all(job.done);
    }
}

void ThreadPool::parallel_for(size_t n, RangeFn fn) {
    if (n == 0) return;
    if (workers_.empty() || n == 1) {
        fn(0, n);
        return;
    }
    Job job;
    job.fn = &fn;
    job.n = n;
    job.chunks = uint32_t(std::min(n, size_t(size()) * kChunksPerThread));
    job_.store(&job, std::memory_order_seq_cst);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    // A system call only when a worker sleeps. seq_cst on both sides: either that worker's
    // wait sees the new generation, or this load sees it counted (then the wake reaches it).
    if (sleepingWorkers_.load(std::memory_order_seq_cst) != 0) platform::wake_all(generation_);
    run_chunks(job);
    // Chunks other threads hold: spin briefly, then sleep so that this core is free for a
    // preempted worker to finish on.
    const auto start = std::chrono::steady_clock::now();
    for (unsigned i = 1; job.done.load(std::memory_order_acquire) != job.chunks; ++i) {
        cpu_relax();
        if (i % 64 == 0 && std::chrono::steady_clock::now() - start > kCallerSpin) {
            job.callerAsleep.store(true, std::memory_order_seq_cst);
            for (uint32_t done; (done = job.done.load(std::memory_order_seq_cst)) != job.chunks;)
                platform::wait_while_equal(job.done, done);
            break;
        }
    }
    // No worker may enter the job after this store; wait for those that did (a worker counts
    // itself in before it reads job_, so one that saw &job is counted here). They leave right
    // after finding no chunk to claim.
    job_.store(nullptr, std::memory_order_seq_cst);
    while (inJob_.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
}

void ThreadPool::worker_loop() {
    uint32_t seen = 0;
    for (;;) {
        uint32_t now = spin_while_equal(generation_, seen, std::chrono::nanoseconds(kSpinNs));
        if (now == seen) {
            sleepingWorkers_.fetch_add(1, std::memory_order_seq_cst);
            while ((now = generation_.load(std::memory_order_seq_cst)) == seen) platform::wait_while_equal(generation_, seen);
            sleepingWorkers_.fetch_sub(1, std::memory_order_seq_cst);
        }
        seen = now;
        if (stop_.load(std::memory_order_acquire)) return;
        inJob_.fetch_add(1, std::memory_order_seq_cst);
        if (Job* job = job_.load(std::memory_order_seq_cst)) run_chunks(*job);
        inJob_.fetch_sub(1, std::memory_order_seq_cst);
    }
}

} // namespace cflow
