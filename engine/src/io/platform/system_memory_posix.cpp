// /proc/meminfo: MemTotal and MemAvailable (the kernel's own estimate of what can be
// allocated without swapping, page cache that can be dropped included).
#include <cstdio>
#include <cstring>

#include "cflow/engine/io/system_memory.h"

namespace cflow {

SystemMemory query_system_memory() {
    SystemMemory out;
    std::FILE* f = std::fopen("/proc/meminfo", "r");
    if (!f) return out;
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
        unsigned long long kib = 0;
        if (std::sscanf(line, "MemTotal: %llu kB", &kib) == 1) out.total_bytes = kib * 1024;
        else if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) out.available_bytes = kib * 1024;
    }
    std::fclose(f);
    return out;
}

} // namespace cflow
