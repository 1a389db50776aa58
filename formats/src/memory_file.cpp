// MemoryFile: an owned byte buffer behind the MappedFile interface.
#include "cflow/formats/memory_file.h"

#include <limits>
#include <new>

namespace cflow {

Result<std::shared_ptr<MemoryFile>> MemoryFile::allocate(std::string label, uint64_t bytes) {
    const std::string what = label + ": " + std::to_string(bytes) + "-byte buffer";
    if (bytes > std::numeric_limits<size_t>::max()) return out_of_memory_error(what);
    try {
        // Uninitialised on purpose: generators overwrite every byte, and zero-filling hundreds
        // of MiB first would cost a second pass over memory.
        std::unique_ptr<uint8_t[]> buffer(new uint8_t[static_cast<size_t>(bytes)]);
        return std::shared_ptr<MemoryFile>(new MemoryFile(std::move(label), std::move(buffer), bytes));
    } catch (const std::bad_alloc&) {
        return out_of_memory_error(what);
    }
}

} // namespace cflow
