#pragma once
// Read-only file mapping behind one interface; one implementation file per OS
// (mapped_file_posix.cpp: mmap; mapped_file_win32.cpp: CreateFileMapping/MapViewOfFile).
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cflow/base/result.h"

namespace cflow {

enum class LoadMode : uint8_t {
    Map = 0,        // zero-copy mapping of the file (page-cache backed)
    ReadAnon = 1,   // read the whole file into anonymous memory (huge pages where the OS allows)
};

class MappedFile {
public:
    virtual ~MappedFile() = default;
    virtual const uint8_t* data() const = 0;
    virtual uint64_t size() const = 0;
    virtual const std::string& path() const = 0;
    virtual LoadMode mode() const = 0;
    // Advises the OS that [offset, offset+bytes) will be read soon / sequentially. Best effort.
    virtual void advise_willneed(uint64_t offset, uint64_t bytes) const = 0;
    // Advises the OS that [offset, offset+bytes) will not be read through this object again, so
    // its pages can leave the process's resident set (a file mapping's pages stay in the page cache
    // and come back on the next read). Best effort; nothing where the OS or the mode has no such hint.
    virtual void advise_unneeded(uint64_t offset, uint64_t bytes) const { (void)offset, (void)bytes; }
    // Bytes of the mapping currently resident in RAM (0 where the OS cannot tell).
    virtual uint64_t resident_bytes() const = 0;

    // Whether the bytes read through data() are still the file's as opened. Fails with
    // ErrorKind::Io, "PATH changed on disk while in use (...)", once the opened file was truncated
    // or written (its size or modification time moved) or a read of the mapping faulted. On POSIX a
    // read past the end of a truncated mapping raises SIGBUS: a guard maps a page of zeros there
    // and records the fault, so the process lives and the caller learns it here (check after the
    // reads, before using what they produced). A file replaced by rename is not a change: the
    // mapping keeps the old file, which stays whole. A ReadAnon copy never changes. Windows refuses
    // to truncate a mapped file, and a writer needs a handle this process does not share while
    // opening; the default there is always ok.
    virtual Status check_unchanged() const { return {}; }

    // Called once with a ReadAnon copy's writable bytes, after the file is read and before the copy
    // is made read-only: the engine rearranges tiles there for its kernels (LoadOptions::lanes).
    using AnonTransform = std::function<void(uint8_t* bytes, uint64_t size)>;

    // Opens path read-only. Errors name the path and the OS reason. An empty file maps
    // to size() == 0 with data() == nullptr. `transform` applies to LoadMode::ReadAnon only.
    static Result<std::shared_ptr<MappedFile>> open(const std::string& path, LoadMode mode = LoadMode::Map,
                                                    const AnonTransform& transform = {});
};

// Writes a file atomically: the caller writes to temp_path(), then commit() renames it
// over the final path; destruction without commit() removes the temp file. The temp file is
// created exclusively under a random name beside the target (never through a planted link),
// takes an existing target's permission bits, and is flushed to the disk with its folder
// around the rename. A target that is a directory, device, FIFO or socket is refused by open().
class AtomicFileWriter {
public:
    // Checks the finished temp file (e.g. loads it as its reader would) before the rename.
    using VerifyFn = std::function<Status(const std::string& temp_path)>;

    explicit AtomicFileWriter(std::string final_path);
    ~AtomicFileWriter();
    AtomicFileWriter(const AtomicFileWriter&) = delete;
    AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

    Status open();                                   // creates the temp file
    Status write(const void* data, uint64_t bytes);  // appends; reports ENOSPC etc. with the path
    Status write_at(uint64_t offset, const void* data, uint64_t bytes);  // patches an earlier range
    uint64_t bytes_written() const { return bytes_written_; }
    // Flush, fsync, close, run verify (an error keeps the target as it was), rename over the
    // final path, fsync the folder.
    Status commit(const VerifyFn& verify = {});
    const std::string& temp_path() const { return temp_path_; }

    // Temp files of this target left by earlier runs that were killed (kill -9, power loss),
    // found by open(): those no live writer holds (a lock the OS drops when the writer dies) or
    // untouched for kStaleTempAge are removed; ones a running conversion writes are only listed.
    static constexpr std::chrono::hours kStaleTempAge{1};
    const std::vector<std::string>& removed_stale_temp_files() const { return removed_stale_; }
    const std::vector<std::string>& recent_temp_files() const { return recent_temps_; }

private:
    void sweep_earlier_temp_files();


    std::string final_path_;
    std::string temp_path_;
    void* handle_ = nullptr;  // FILE*
    uint64_t bytes_written_ = 0;
    static constexpr uint64_t kWritebackBytes = uint64_t{64} << 20;
    uint64_t writeback_started_ = 0;  // bytes [0, this) have had their disk writes started
    std::vector<std::string> removed_stale_;
    std::vector<std::string> recent_temps_;
    bool created_ = false;
    bool committed_ = false;
};

} // namespace cflow
