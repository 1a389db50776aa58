#pragma once
// Buffers taken from the OS in whole pages and given back to it when freed (one file per OS under
// io/platform/). Expert staging buffers and cached experts are megabytes each, allocated and
// freed every few tokens: from the C heap they left it fragmented (glibc raises its mmap
// threshold after the first large free, so the next ones come from the brk heap), and a process
// streaming a 115 MiB expert bank through a 16 MiB cache held 143 MiB of heap.
#include <cstdint>

namespace cflow {

// [bytes] zero-filled bytes starting at an address aligned to `alignment` (at most the page size
// on POSIX, 64 KiB on Windows; direct I/O asks for 512 or 4096); nullptr when the OS refuses.
uint8_t* page_memory_allocate(uint64_t alignment, uint64_t bytes);
// Gives back what page_memory_allocate(alignment, bytes) returned.
void page_memory_free(uint8_t* data, uint64_t bytes);

} // namespace cflow
