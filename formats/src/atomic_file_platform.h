#pragma once
// The OS half of AtomicFileWriter (platform/atomic_file_posix.cpp, platform/atomic_file_win32.cpp):
// creating the temporary file so nothing already there (a planted symlink, another run's file)
// is opened, flushing it to the disk, and renaming it over the target durably.
#include <cstdint>
#include <cstdio>
#include <string>

#include "cflow/base/result.h"

namespace cflow::atomic_file {

// The target as it is before writing: refused when it exists and is not a regular file (a
// directory, a device node the rename would replace, a FIFO, a socket). `mode` is what the
// finished file gets: the existing target's permission bits, else the default for new files.
struct Target {
    bool exists = false;
    unsigned mode = 0;
};
Result<Target> inspect_target(const std::string& final_path);

// Creates temp_path exclusively (O_EXCL | O_NOFOLLOW on POSIX, CREATE_NEW semantics on
// Windows) with target.mode and opens it for binary writing. `name_taken` is set when a file
// of that name already exists, so the caller can try another random name.
Result<std::FILE*> create_exclusive(const std::string& temp_path, const Target& target, bool& name_taken);

// Whether a live process still writes temp_path (created by create_exclusive, which locks it
// until it is closed; a killed writer's lock is gone). False where the OS cannot say.
bool is_being_written(const std::string& temp_path);
// Starts the disk writes of bytes [offset, offset + bytes) already written to f without waiting
// for them (Linux: fflush + sync_file_range(SYNC_FILE_RANGE_WRITE)), so that the final fsync has
// only the tail left; a no-op where the OS has no such call. Failures are ignored: the fsync in
// sync_and_close is what decides.
void start_writeback(std::FILE* f, uint64_t offset, uint64_t bytes);

// Flushes the C buffers and the OS cache of f to the disk (fsync / _commit) and closes f.
Status sync_and_close(std::FILE* f, const std::string& temp_path);

// Renames temp_path over final_path and makes the rename itself durable (fsync of the folder
// where the OS has one).
Status replace(const std::string& temp_path, const std::string& final_path);

} // namespace cflow::atomic_file
