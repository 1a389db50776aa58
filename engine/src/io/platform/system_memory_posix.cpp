// /proc/meminfo: MemTotal and MemAvailable (the kernel's own estimate of what can be
// allocated without swapping, page cache that can be dropped included), then the limits of the
// process's memory cgroup (apply_cgroup_limits).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cflow/engine/io/system_memory.h"

namespace cflow {

SystemMemory query_system_memory() {
    SystemMemory out;
    std::FILE* f = std::fopen("/proc/meminfo", "r");
    if (!f) return out;  // no /proc: nothing else to read either
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
        unsigned long long kib = 0;
        if (std::sscanf(line, "MemTotal: %llu kB", &kib) == 1) out.total_bytes = kib * 1024;
        else if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) out.available_bytes = kib * 1024;
    }
    std::fclose(f);
    std::ifstream cgroups("/proc/self/cgroup");
    std::ostringstream text;
    text << cgroups.rdbuf();
    return apply_cgroup_limits(out, text.str(), "/sys/fs/cgroup");
}

} // namespace cflow
