#pragma once
// A fixed pool of worker threads for the matvecs of one inference session.
// parallel_for blocks the calling thread, which also takes a share of the work.
//
// Decode issues a parallel_for every few microseconds (one per matvec, one per attention), so
// handing work over must cost far less than that: workers spin briefly on an atomic generation
// counter before sleeping on it (a condition-variable hand-over cost more than the matvecs of a
// d=256 model and made two threads slower than one). Work is split into more chunks than
// threads and claimed dynamically, so a thread that the OS preempts (the GUI repainting, another
// process) holds the others up by at most the chunk it is in. Waiting threads spin only briefly
// and then sleep: a spinning thread keeps its core busy, so the kernel would not move the
// preempted thread onto it.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace cflow {

// A non-owning reference to a callable taking (begin, end): parallel_for runs every few
// microseconds during decode, and a std::function holding a capturing lambda would allocate
// on each call. The callable must outlive the call it is passed to (always true for a lambda
// argument of parallel_for).
class RangeFn {
public:
    template <class F>
    RangeFn(const F& fn) : object_(&fn), call_([](const void* o, size_t b, size_t e) { (*static_cast<const F*>(o))(b, e); }) {}
    void operator()(size_t begin, size_t end) const { call_(object_, begin, end); }

private:
    const void* object_;
    void (*call_)(const void*, size_t, size_t);
};

class ThreadPool {
public:
    // Total threads including the caller; 0 = hardware concurrency. Throws std::system_error when
    // the OS refuses a thread (after joining those it started); Session::create reports it.
    explicit ThreadPool(unsigned threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }

    // Calls fn(begin, end) on disjoint ranges covering [0, n), possibly several per thread;
    // returns when all are done. One caller at a time (the session's thread).
    void parallel_for(size_t n, RangeFn fn);

    // How long an idle worker spins for new work before it sleeps: longer than the gaps between
    // the matvecs of one token, far shorter than a GUI frame.
    static constexpr int64_t kSpinNs = 50'000;

private:
    struct Job {
        const RangeFn* fn = nullptr;
        size_t n = 0;
        uint32_t chunks = 0;
        std::atomic<uint32_t> next{0};     // next chunk to claim
        std::atomic<uint32_t> done{0};     // chunks finished; the caller sleeps on it (platform/address_wait)
        std::atomic<bool> callerAsleep{false};
    };
    static void run_chunks(Job& job);
    void shut_down();
    void worker_loop();

    std::vector<std::thread> workers_;
    std::atomic<Job*> job_{nullptr};        // the running parallel_for's job, null between jobs
    std::atomic<uint32_t> generation_{0};   // bumped for every job and at shutdown; workers sleep on it
                                            // (32 bits: a futex word; only != is ever asked)
    std::atomic<unsigned> inJob_{0};        // workers that may still touch *job_
    std::atomic<uint32_t> sleepingWorkers_{0};  // workers asleep on generation_ (or about to be)
    std::atomic<bool> stop_{false};
};

} // namespace cflow
