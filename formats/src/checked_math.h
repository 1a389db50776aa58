#pragma once
// Overflow-checked u64 arithmetic for sizes and offsets read from files or derived from
// untrusted geometry. Each returns false (leaving *out unspecified) on overflow.
#include <cstdint>
#include <limits>

namespace cflow::checked {

inline bool add(uint64_t a, uint64_t b, uint64_t* out) {
    if (a > std::numeric_limits<uint64_t>::max() - b) return false;
    *out = a + b;
    return true;
}

inline bool mul(uint64_t a, uint64_t b, uint64_t* out) {
    if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) return false;
    *out = a * b;
    return true;
}

// True when [offset, offset + size) lies inside [0, total).
inline bool range_inside(uint64_t offset, uint64_t size, uint64_t total) {
    return size <= total && offset <= total - size;
}

// Rounds value up to a multiple of alignment (a power of two); false on overflow.
inline bool align_up(uint64_t value, uint64_t alignment, uint64_t* out) {
    uint64_t bumped = 0;
    if (!add(value, alignment - 1, &bumped)) return false;
    *out = bumped & ~(alignment - 1);
    return true;
}

} // namespace cflow::checked
