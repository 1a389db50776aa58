#pragma once
// How much memory this machine can give a model now (one file per OS under io/platform/).
#include <cstdint>

namespace cflow {

struct SystemMemory {
    uint64_t total_bytes = 0;
    uint64_t available_bytes = 0;  // what can be allocated without swapping (Linux MemAvailable)
};

// Zeros when the OS does not say.
SystemMemory query_system_memory();

} // namespace cflow
