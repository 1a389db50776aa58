// POSIX side of peak_rss.h (the whole file is empty on Windows; the CLI globs every .cpp).
#ifndef _WIN32
#include <sys/resource.h>

#include "peak_rss.h"

namespace cflow::cli {

uint64_t peak_rss_bytes() {
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
