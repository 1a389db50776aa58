// Windows side of address_wait.h: WaitOnAddress / WakeByAddressAll (Windows 8 and later, and
// wine), compared and woken by the kernel like a futex.
#include "forward/address_wait.h"

#include <windows.h>
#include <synchapi.h>

namespace cflow::platform {

void wait_while_equal(const std::atomic<uint32_t>& word, uint32_t expected) {
    auto* address = const_cast<std::atomic<uint32_t>*>(&word);
    WaitOnAddress(address, &expected, sizeof(expected), INFINITE);
}

void wake_all(std::atomic<uint32_t>& word) { WakeByAddressAll(&word); }

} // namespace cflow::platform
