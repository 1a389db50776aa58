#pragma once
// How much memory this machine can give a model now (one file per OS under io/platform/), with
// the limit of the Linux control group the process runs in (a container, a systemd slice, a CI
// runner): MemAvailable alone says gigabytes where the cgroup allows a few hundred MiB, and a
// model copied into anonymous memory there is killed instead of mapped.
#include <cstdint>
#include <string>

namespace cflow {

struct SystemMemory {
    uint64_t total_bytes = 0;      // the machine's, or the cgroup limit where that is lower
    uint64_t available_bytes = 0;  // what can be allocated without swapping or hitting the cgroup limit
    uint64_t limit_bytes = 0;      // the tightest cgroup memory limit over the process's cgroup and its parents; 0: none
    std::string limit_source;      // where that limit is set, e.g. "cgroup v2 /user.slice/x (memory.max)"; "" when none
};

// Zeros when the OS does not say.
SystemMemory query_system_memory();

// `memory` with the cgroup limits applied: the process's cgroups as `proc_self_cgroup` lists them
// (the text of /proc/self/cgroup), read under `cgroup_root` (/sys/fs/cgroup; tests pass a tree of
// their own). cgroup v2 (memory.max, memory.current) and v1 (memory/memory.limit_in_bytes,
// memory.usage_in_bytes); each level up to the root counts, and its inactive page cache
// (memory.stat inactive_file / total_inactive_file) counts as free, since the kernel reclaims it
// before it kills. Files that cannot be read change nothing.
SystemMemory apply_cgroup_limits(SystemMemory memory, const std::string& proc_self_cgroup, const std::string& cgroup_root);

} // namespace cflow
