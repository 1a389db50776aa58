// Windows scorecard probes: no hardware cache counters (perf_event_open is Linux's), the
// process's read bytes from GetProcessIoCounters, no per-file page-cache eviction.
#include <windows.h>

#include "scorecard/scorecard_internal.h"

namespace cflow::scorecard {

Result<std::unique_ptr<CacheMissCounter>> CacheMissCounter::open() {
    return make_error(ErrorKind::Unsupported,
                      "hardware cache counters are read through perf_event_open, which Windows does not have");
}

int64_t process_read_bytes() {
    IO_COUNTERS counters{};
    if (!GetProcessIoCounters(GetCurrentProcess(), &counters)) return -1;
    return int64_t(counters.ReadTransferCount);
}

Status drop_file_cache(const std::string& path) {
    return make_error(ErrorKind::Unsupported, path + ": Windows offers no per-file page-cache eviction to an application");
}

double file_cache_residency(const std::string&) { return -1; }

} // namespace cflow::scorecard
