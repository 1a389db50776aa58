#include "io/aligned_bytes.h"

#include <new>

#include "io/page_memory.h"

namespace cflow {

std::shared_ptr<AlignedBytes> AlignedBytes::allocate(uint64_t alignment, uint64_t bytes) {
    // Direct I/O reads whole sectors: callers pass sector multiples; round up to be sure.
    const uint64_t rounded = (bytes + alignment - 1) / alignment * alignment;
    uint8_t* p = page_memory_allocate(alignment, rounded);
    if (!p) return nullptr;
    AlignedBytes* raw = new (std::nothrow) AlignedBytes(p, rounded);
    if (!raw) {
        page_memory_free(p, rounded);
        return nullptr;
    }
    try {
        return std::shared_ptr<AlignedBytes>(raw);
    } catch (const std::bad_alloc&) {  // the control block; shared_ptr deletes raw itself
        return nullptr;
    }
}

AlignedBytes::~AlignedBytes() { page_memory_free(data_, bytes_); }

} // namespace cflow
