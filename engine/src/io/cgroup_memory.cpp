// apply_cgroup_limits: the memory a Linux control group leaves to this process (system_memory.h).
// Plain file reads, so the tests run it on any OS against a tree of their own.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include "cflow/engine/io/system_memory.h"

namespace cflow {
namespace {

namespace fs = std::filesystem;

// cgroup v1 writes "no limit" as the largest page-aligned signed 64-bit value; anything above 2^60
// is no limit in practice.
constexpr uint64_t kNoLimitAbove = uint64_t{1} << 60;

std::optional<uint64_t> read_number(const fs::path& file) {
    std::ifstream in(file);
    std::string word;
    if (!(in >> word) || word == "max") return std::nullopt;
    uint64_t value = 0;
    for (char c : word) {
        if (c < '0' || c > '9' || value > (UINT64_MAX - 9) / 10) return std::nullopt;
        value = value * 10 + uint64_t(c - '0');
    }
    return value;
}

// The value of `key` in a memory.stat file (0 when absent).
uint64_t read_stat(const fs::path& file, std::string_view key) {
    std::ifstream in(file);
    std::string name;
    uint64_t value = 0;
    while (in >> name >> value)
        if (name == key) return value;
    return 0;
}

struct Hierarchy {
    int version = 0;        // 1 or 2
    fs::path mount;         // where its files are
    std::string path;       // the process's cgroup inside it ("/a/b")
};

// The memory hierarchy of the process: v1's "N:...memory...:/path" line wins over v2's "0::/path"
// (a hybrid system keeps memory accounting in v1).
std::optional<Hierarchy> memory_hierarchy(const std::string& proc_self_cgroup, const fs::path& root) {
    std::optional<Hierarchy> v2;
    std::istringstream lines(proc_self_cgroup);
    std::string line;
    while (std::getline(lines, line)) {
        const size_t first = line.find(':');
        const size_t second = first == std::string::npos ? first : line.find(':', first + 1);
        if (second == std::string::npos) continue;
        const std::string controllers = line.substr(first + 1, second - first - 1);
        const std::string path = line.substr(second + 1);
        if (line.compare(0, first, "0") == 0 && controllers.empty()) {
            v2 = Hierarchy{2, root, path};
            continue;
        }
        std::istringstream names(controllers);
        std::string name;
        while (std::getline(names, name, ','))
            if (name == "memory") return Hierarchy{1, root / "memory", path};
    }
    return v2;
}

} // namespace

SystemMemory apply_cgroup_limits(SystemMemory memory, const std::string& proc_self_cgroup, const std::string& cgroup_root) {
    const auto hierarchy = memory_hierarchy(proc_self_cgroup, fs::path(cgroup_root));
    if (!hierarchy) return memory;
    const bool v2 = hierarchy->version == 2;
    // The levels from the process's cgroup up to the mount. Inside a cgroup namespace the mount
    // already is the process's own cgroup and the listed path is "/"; a path whose folder is
    // missing under the mount (another namespace's view) is read as the mount alone.
    std::vector<fs::path> levels;
    fs::path inside;
    for (const fs::path& part : fs::path(hierarchy->path).relative_path()) {
        if (part.empty() || part == "." || part == "..") continue;
        inside /= part;
        levels.push_back(inside);
    }
    std::error_code ec;
    if (!levels.empty() && !fs::is_directory(hierarchy->mount / levels.back(), ec)) levels.clear();
    std::reverse(levels.begin(), levels.end());
    levels.push_back(fs::path());  // the mount itself
    uint64_t tightestHeadroom = UINT64_MAX, tightestLimit = 0;
    std::string source;
    for (const fs::path& rel : levels) {
        const fs::path level = rel.empty() ? hierarchy->mount : hierarchy->mount / rel;
        const auto limit = read_number(level / (v2 ? "memory.max" : "memory.limit_in_bytes"));
        if (!limit || *limit >= kNoLimitAbove) continue;
        const uint64_t used = read_number(level / (v2 ? "memory.current" : "memory.usage_in_bytes")).value_or(0);
        const uint64_t reclaimable = read_stat(level / "memory.stat", v2 ? "inactive_file" : "total_inactive_file");
        const uint64_t charged = used > reclaimable ? used - reclaimable : 0;
        const uint64_t headroom = *limit > charged ? *limit - charged : 0;
        if (headroom >= tightestHeadroom) continue;
        tightestHeadroom = headroom;
        tightestLimit = *limit;
        source = std::string(v2 ? "cgroup v2 /" : "cgroup v1 /") + rel.generic_string() +
                 (v2 ? " (memory.max)" : " (memory.limit_in_bytes)");
    }
    if (tightestLimit == 0) return memory;
    memory.limit_bytes = tightestLimit;
    memory.limit_source = source;
    memory.total_bytes = memory.total_bytes ? std::min(memory.total_bytes, tightestLimit) : tightestLimit;
    memory.available_bytes = memory.available_bytes ? std::min(memory.available_bytes, tightestHeadroom) : tightestHeadroom;
    return memory;
}

} // namespace cflow
