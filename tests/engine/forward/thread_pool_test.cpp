// ThreadPool: every index of every job is handled exactly once, jobs follow each other without
// a stale worker touching a finished job, and the pool shuts down from every state (busy,
// spinning, asleep). When the pool changes, also run these under ThreadSanitizer:
//   g++ -std=c++20 -O1 -g -fsanitize=thread -Iengine/include engine/src/thread_pool.cpp
//       tests/engine/thread_pool_test.cpp -lgtest -lgtest_main -pthread -o /tmp/tp_tsan && /tmp/tp_tsan
#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cflow/engine/forward/thread_pool.h"

namespace cflow {
namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
    for (unsigned threads : {1u, 2u, 3u, 8u}) {
        ThreadPool pool(threads);
        EXPECT_EQ(pool.size(), threads);
        for (size_t n : {size_t(0), size_t(1), size_t(2), size_t(7), size_t(31), size_t(32), size_t(33), size_t(1000)}) {
            std::vector<std::atomic<int>> hits(n);
            std::atomic<int> calls{0};
            pool.parallel_for(n, [&](size_t begin, size_t end) {
                ASSERT_LT(begin, end);
                ASSERT_LE(end, n);
                for (size_t i = begin; i < end; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
                calls.fetch_add(1, std::memory_order_relaxed);
            });
            for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "threads " << threads << ", n " << n << ", index " << i;
            // The work is split into several chunks per thread, never more than n.
            EXPECT_LE(size_t(calls.load()), n) << "n " << n;
            if (threads > 1 && n >= size_t(4) * threads) {
                EXPECT_GT(calls.load(), int(threads)) << "n " << n;
            }
        }
    }
}

// Results written by workers are visible to the caller when parallel_for returns, and a job's
// function (a lambda on the caller's stack) is never called after it returned: each job checks
// that its own generation is the current one.
TEST(ThreadPool, ManyShortJobsInARowSeeOnlyTheirOwnWork) {
    ThreadPool pool(4);
    std::vector<uint64_t> out(64);
    std::atomic<uint64_t> current{0};
    std::atomic<int> staleCalls{0};
    for (uint64_t job = 1; job <= 20000; ++job) {
        current.store(job);
        const size_t n = 1 + job % 64;
        pool.parallel_for(n, [&, job](size_t begin, size_t end) {
            if (current.load() != job) staleCalls.fetch_add(1);
            for (size_t i = begin; i < end; ++i) out[i] = job * 1000 + i;
        });
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], job * 1000 + i) << "job " << job;
    }
    EXPECT_EQ(staleCalls.load(), 0);
}

// A worker that the OS preempts (simulated: one chunk sleeps) delays only its own chunk: the
// caller and the other workers take the remaining chunks meanwhile.
TEST(ThreadPool, SlowChunkDoesNotSerialiseTheRest) {
    ThreadPool pool(2);
    constexpr size_t n = 8;  // 8 chunks for 2 threads
    std::vector<std::thread::id> who(n);
    pool.parallel_for(n, [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) {
            who[i] = std::this_thread::get_id();
            if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    });
    // The thread that slept on index 0 did that chunk only; the other did the remaining seven.
    size_t byFirst = 0;
    for (const auto& id : who) byFirst += id == who[0] ? 1 : 0;
    EXPECT_EQ(byFirst, 1u);
}

TEST(ThreadPool, ShutsDownWhileWorkersSleepOrSpin) {
    {
        ThreadPool pool(3);
        pool.parallel_for(10, [](size_t, size_t) {});
        // Past the spin period every worker sleeps on the generation counter.
        std::this_thread::sleep_for(std::chrono::nanoseconds(ThreadPool::kSpinNs) + std::chrono::milliseconds(20));
        std::atomic<size_t> sum{0};
        pool.parallel_for(100, [&](size_t b, size_t e) {
            for (size_t i = b; i < e; ++i) sum += i;
        });
        EXPECT_EQ(sum.load(), 4950u);  // woken from sleep
    }
    {
        ThreadPool pool(3);
        pool.parallel_for(10, [](size_t, size_t) {});  // destroyed while workers still spin
    }
    { ThreadPool pool(4); }  // never used
    SUCCEED();
}

} // namespace
} // namespace cflow
