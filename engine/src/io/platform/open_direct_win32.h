#pragma once
// Opens a file for expert reads that bypass the cache (FILE_FLAG_NO_BUFFERING), or buffered where
// the file system refuses it: shared by the blocking DirectReader and the overlapped AsyncReader
// so both decide alike. Windows only.
#include <string>

#include "cflow/base/result.h"
#include "io/read_progress.h"

namespace cflow {

struct OpenedWinFile {
    void* handle = nullptr;  // a HANDLE; the caller closes it (CloseHandle)
    ReadFileFacts facts;     // path, size at open, 4096-byte alignment, direct or not
};

// overlapped: adds FILE_FLAG_OVERLAPPED (every ReadFile then needs an OVERLAPPED and may pend).
// Io naming the path and the Windows error when the file cannot be opened.
Result<OpenedWinFile> open_for_direct_reads(const std::string& path, bool overlapped);

std::string windows_error_text(unsigned long code);  // "Windows error N: <the system's message>"

} // namespace cflow
