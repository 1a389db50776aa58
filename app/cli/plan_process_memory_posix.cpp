// POSIX side of plan_process_memory.h (the whole file is empty on Windows; the CLI globs every .cpp).
#ifndef _WIN32
#include <unistd.h>

#include <cstdio>

#include "plan_process_memory.h"
#include "peak_rss.h"

namespace cflow::cli {

uint64_t plan_process_resident_bytes() {
    // Linux: /proc/self/statm's second field is the resident pages. Elsewhere (macOS) the peak,
    // which is this process's own there.
    if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
        unsigned long long sizePages = 0, residentPages = 0;
        const int read = std::fscanf(f, "%llu %llu", &sizePages, &residentPages);
        std::fclose(f);
        const long page = sysconf(_SC_PAGESIZE);
        if (read == 2 && page > 0) return residentPages * static_cast<uint64_t>(page);
    }
    return peak_rss_bytes();
}

} // namespace cflow::cli
#endif
