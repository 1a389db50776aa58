// page_memory on VirtualAlloc: 64 KiB-aligned committed pages, released when freed.
#include <windows.h>

#include "io/page_memory.h"

namespace cflow {

uint8_t* page_memory_allocate(uint64_t alignment, uint64_t bytes) {
    constexpr uint64_t kAllocationGranularity = 64 * 1024;  // VirtualAlloc's reservation alignment
    if (bytes == 0 || alignment > kAllocationGranularity) return nullptr;
    return static_cast<uint8_t*>(VirtualAlloc(nullptr, SIZE_T(bytes), MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE));
}

void page_memory_free(uint8_t* data, uint64_t /*bytes*/) {
    if (data) VirtualFree(data, 0, MEM_RELEASE);
}

} // namespace cflow
