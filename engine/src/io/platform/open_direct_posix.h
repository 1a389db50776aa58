#pragma once
// Opens a file for expert reads that bypass the page cache (O_DIRECT), or buffered where the file
// system refuses O_DIRECT (tmpfs, some network mounts): shared by the pread DirectReader and the
// io_uring AsyncReader so both decide alike.
#include <string>

#include "cflow/base/result.h"
#include "io/read_progress.h"

namespace cflow {

struct OpenedFile {
    int fd = -1;            // the caller closes it
    ReadFileFacts facts;    // path, size at open, 4096-byte alignment, direct or not
};

// Io naming the path when the file cannot be opened or stat'ed.
Result<OpenedFile> open_for_direct_reads(const std::string& path);

} // namespace cflow
