// POSIX side of address_wait.h: the futex system call on Linux (what std::atomic::wait uses
// there too), std::atomic::wait elsewhere.
#include "forward/address_wait.h"

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#endif

namespace cflow::platform {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "a futex word is a plain 32-bit integer");

void wait_while_equal(const std::atomic<uint32_t>& word, uint32_t expected) {
#if defined(__linux__)
    // The kernel compares and sleeps atomically with respect to wakes; EAGAIN (changed) and
    // EINTR are returns like any other.
    syscall(SYS_futex, reinterpret_cast<const uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
#else
    word.wait(expected, std::memory_order_acquire);
#endif
}

void wake_all(std::atomic<uint32_t>& word) {
#if defined(__linux__)
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
#else
    word.notify_all();
#endif
}

} // namespace cflow::platform
