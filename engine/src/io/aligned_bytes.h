#pragma once
// A buffer whose start is aligned for direct I/O (DirectReader::alignment(): 4 KiB here, the
// sector size on Windows), in whole pages from the OS (page_memory.h), given back when freed. Shared between a fetcher's staging slot and the expert cache
// through std::shared_ptr, so an evicted expert stays valid while a slot still computes from it.
#include <cstdint>
#include <memory>

namespace cflow {

class AlignedBytes {
public:
    // nullptr when the allocation fails (callers report OutOfMemory; nothing throws).
    static std::shared_ptr<AlignedBytes> allocate(uint64_t alignment, uint64_t bytes);
    ~AlignedBytes();
    AlignedBytes(const AlignedBytes&) = delete;
    AlignedBytes& operator=(const AlignedBytes&) = delete;

    uint8_t* data() { return data_; }
    const uint8_t* data() const { return data_; }
    uint64_t size() const { return bytes_; }

private:
    AlignedBytes(uint8_t* data, uint64_t bytes) : data_(data), bytes_(bytes) {}
    uint8_t* data_;   // [bytes_] bytes, start aligned to the allocation's alignment
    uint64_t bytes_;
};

} // namespace cflow
