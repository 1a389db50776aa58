// Windows side of peak_rss.h (the whole file is empty elsewhere; the CLI globs every .cpp).
#ifdef _WIN32
#include <windows.h>
#include <psapi.h>

#include "peak_rss.h"

namespace cflow::cli {

uint64_t peak_rss_bytes() {
    PROCESS_MEMORY_COUNTERS counters{};
    if (!GetProcessMemoryInfo(GetCurrentProcess(), &counters, sizeof(counters))) return 0;
    return static_cast<uint64_t>(counters.PeakWorkingSetSize);
}

} // namespace cflow::cli
#endif
