#pragma once
// Reads file ranges bypassing the page cache (O_DIRECT / FILE_FLAG_NO_BUFFERING) into
// sector-aligned buffers; one implementation file per OS under platform/. Where the file
// system refuses direct I/O (tmpfs, some network mounts) it falls back to buffered reads and
// says so through direct().
//
// Thread safety: read() may be called from several threads at once on one reader (positioned
// reads: pread / overlapped ReadFile, no shared file offset); the other members are immutable.
#include <cstdint>
#include <memory>
#include <string>

#include "cflow/base/result.h"

namespace cflow {

class DirectReader {
public:
    virtual ~DirectReader() = default;
    static Result<std::unique_ptr<DirectReader>> open(const std::string& path);

    // Offsets, sizes and destination addresses must be multiples of alignment().
    virtual Status read(uint64_t offset, uint64_t bytes, void* destination) = 0;
    virtual uint64_t alignment() const = 0;
    virtual bool direct() const = 0;  // false when the OS refused direct I/O for this file
    virtual uint64_t file_bytes() const = 0;
};

} // namespace cflow
