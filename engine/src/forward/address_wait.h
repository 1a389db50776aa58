#pragma once
// Sleeping until a 32-bit atomic changes, and waking its sleepers: the thread pool's hand-over
// (one file per OS in platform/). Not std::atomic::wait: on mingw-w64's libstdc++ (GCC 12, no
// futex) its waiter pool loses wake-ups, and two-thread generation hung under wine in 5 of 6
// runs (GCC PR 106772, fixed in GCC 13).
//
// Thread safety: any number of threads may wait on and wake the same word concurrently.
#include <atomic>
#include <cstdint>

namespace cflow::platform {

// Blocks while word == expected; may return spuriously, so callers re-check in a loop.
void wait_while_equal(const std::atomic<uint32_t>& word, uint32_t expected);
// Wakes every thread blocked in wait_while_equal on word.
void wake_all(std::atomic<uint32_t>& word);

} // namespace cflow::platform
