// Linux keeps AMX tile data (8 KiB per thread) out of every thread's saved state until the process
// asks for it: without this request the first tile instruction raises SIGILL even on a CPU that
// has AMX and a kernel that enables it in XCR0 (Linux 5.16 and later).
#include "kernels/kernels_internal.h"

#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__))
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace cflow::kernels {

bool request_amx_tile_permission() {
#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__))
    constexpr long kArchReqXcompPerm = 0x1023;  // ARCH_REQ_XCOMP_PERM (asm/prctl.h)
    constexpr long kXfeatureXtiledata = 18;     // the XTILEDATA state component
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;  // other POSIX systems: no AMX support assumed
#endif
}

} // namespace cflow::kernels
