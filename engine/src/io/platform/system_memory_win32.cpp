// GlobalMemoryStatusEx: physical memory in total and available now.
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include "cflow/engine/io/system_memory.h"

namespace cflow {

SystemMemory query_system_memory() {
    SystemMemory out;
    MEMORYSTATUSEX status{};
    status.dwLength = sizeof status;
    if (GlobalMemoryStatusEx(&status)) {
        out.total_bytes = status.ullTotalPhys;
        out.available_bytes = status.ullAvailPhys;
    }
    return out;
}

} // namespace cflow
