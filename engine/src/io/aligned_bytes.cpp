#include "io/aligned_bytes.h"

#include <cstdlib>
#include <new>

namespace cflow {

std::shared_ptr<AlignedBytes> AlignedBytes::allocate(uint64_t alignment, uint64_t bytes) {
    // aligned_alloc wants a size that is a multiple of the alignment; callers pass sector multiples.
    const uint64_t rounded = (bytes + alignment - 1) / alignment * alignment;
#ifdef _WIN32
    auto* p = static_cast<uint8_t*>(_aligned_malloc(size_t(rounded), size_t(alignment)));
#else
    auto* p = static_cast<uint8_t*>(std::aligned_alloc(size_t(alignment), size_t(rounded)));
#endif
    if (!p) return nullptr;
    AlignedBytes* raw = new (std::nothrow) AlignedBytes(p, rounded);
    if (!raw) {
#ifdef _WIN32
        _aligned_free(p);
#else
        std::free(p);
#endif
        return nullptr;
    }
    try {
        return std::shared_ptr<AlignedBytes>(raw);
    } catch (const std::bad_alloc&) {  // the control block; shared_ptr deletes raw itself
        return nullptr;
    }
}

AlignedBytes::~AlignedBytes() {
#ifdef _WIN32
    _aligned_free(data_);
#else
    std::free(data_);
#endif
}

} // namespace cflow
