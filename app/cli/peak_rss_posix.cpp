// POSIX side of peak_rss.h (the whole file is empty on Windows; the CLI globs every .cpp).
#ifndef _WIN32
#include <sys/resource.h>

#include <cstdio>
#include <cstring>

#include "peak_rss.h"

namespace cflow::cli {

namespace {

// Linux: VmHWM of /proc/self/status, the peak of this process's own address space. getrusage's
// ru_maxrss is kept across fork and exec, so a command started by a large process (a test
// runner, an IDE) reported its parent's peak instead of its own. 0 when unreadable.
uint64_t linux_vm_hwm_bytes() {
#if defined(__linux__)
    std::FILE* status = std::fopen("/proc/self/status", "r");
    if (!status) return 0;
    char line[256];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, status))
        found = std::strncmp(line, "VmHWM:", 6) == 0 && std::sscanf(line + 6, "%llu", &kib) == 1;
    std::fclose(status);
    return found ? static_cast<uint64_t>(kib) * 1024 : 0;
#else
    return 0;
#endif
}

} // namespace

uint64_t peak_rss_bytes() {
    if (const uint64_t hwm = linux_vm_hwm_bytes(); hwm > 0) return hwm;
    rusage usage{};
    if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
#if defined(__APPLE__)
    return static_cast<uint64_t>(usage.ru_maxrss);         // bytes on macOS
#else
    return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // KiB on Linux
#endif
}

} // namespace cflow::cli
#endif
