// page_memory on mmap: page-aligned anonymous mappings, unmapped when freed.
#include <sys/mman.h>
#include <unistd.h>

#include "io/page_memory.h"

namespace cflow {

uint8_t* page_memory_allocate(uint64_t alignment, uint64_t bytes) {
    const long page = sysconf(_SC_PAGESIZE);
    if (bytes == 0 || page <= 0 || alignment > uint64_t(page)) return nullptr;
    void* p = mmap(nullptr, size_t(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

void page_memory_free(uint8_t* data, uint64_t bytes) {
    if (data) munmap(data, size_t(bytes));
}

} // namespace cflow
