// Windows side of plan_process_memory.h (the whole file is empty elsewhere; the CLI globs every .cpp).
#ifdef _WIN32
#include <windows.h>
#include <psapi.h>

#include "plan_process_memory.h"

namespace cflow::cli {

uint64_t plan_process_resident_bytes() {
    PROCESS_MEMORY_COUNTERS counters{};
    if (!GetProcessMemoryInfo(GetCurrentProcess(), &counters, sizeof(counters))) return 0;
    return static_cast<uint64_t>(counters.WorkingSetSize);
}

} // namespace cflow::cli
#endif
