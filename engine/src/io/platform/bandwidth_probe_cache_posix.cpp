// Where the shared read-bandwidth figure lives and which CPU measured it, on Linux and other
// POSIX systems: the XDG cache folder and /proc/cpuinfo.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cflow/engine/io/bandwidth_probe_cache.h"

namespace cflow {

std::string default_bandwidth_probe_path() {
    // XDG: a relative XDG_CACHE_HOME is invalid and ignored.
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0] == '/') return std::string(xdg) + "/cflow/read-bandwidth.json";
    const char* home = std::getenv("HOME");
    if (home && home[0] == '/') return std::string(home) + "/.cache/cflow/read-bandwidth.json";
    return {};
}

std::string this_cpu_model() {
    std::FILE* f = std::fopen("/proc/cpuinfo", "r");
    if (!f) return {};
    char line[512];  // one "key\t: value" line
    std::string model;
    while (model.empty() && std::fgets(line, sizeof line, f)) {
        // x86 names it "model name"; ARM kernels "Hardware" or "Processor".
        for (const char* key : {"model name", "Hardware", "Processor"}) {
            const size_t n = std::strlen(key);
            if (std::strncmp(line, key, n) != 0) continue;
            const char* colon = std::strchr(line + n, ':');
            if (!colon) continue;
            model = colon + 1;
            break;
        }
    }
    std::fclose(f);
    while (!model.empty() && (model.front() == ' ' || model.front() == '\t')) model.erase(model.begin());
    while (!model.empty() && (model.back() == '\n' || model.back() == ' ' || model.back() == '\r')) model.pop_back();
    return model;
}

} // namespace cflow
