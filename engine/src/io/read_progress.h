#pragma once
// One positioned read's progress through partial completions, shared by every read backend
// (DirectReader, the io_uring, overlapped and reader-pool AsyncReaders) so that short reads,
// the end of the file and a file that shrank mean the same thing everywhere.
//
// A read asks for [offset, offset + bytes) rounded out to sectors; the OS may deliver it in
// pieces (a short read, a signal, a chunk cap). The end of the file is fine only inside the
// rounded-out tail past the file's size at open; anywhere before it the file shrank and the
// destination would hold stale bytes, so that is an Io error naming the file and the byte.
#include <cstdint>
#include <string>

#include "cflow/base/result.h"

namespace cflow {

struct ReadProgress {
    uint64_t offset = 0;            // file offset of destination[0]
    uint64_t bytes = 0;             // the whole read
    uint8_t* destination = nullptr; // [bytes] bytes
    uint64_t doneBytes = 0;         // delivered so far, destination[0 .. doneBytes)

    // Where the next piece starts and how long it is: the rest, capped so that one request never
    // exceeds what a 32-bit length (ReadFile, io_uring sqe->len) can carry.
    static constexpr uint64_t kMaxPieceBytes = uint64_t(1) << 30;
    uint64_t next_offset() const { return offset + doneBytes; }
    uint8_t* next_destination() const { return destination + doneBytes; }
    uint32_t next_bytes() const;
};

// What the file is: the path for messages, its size when opened, whether reads bypass the cache.
struct ReadFileFacts {
    std::string path;
    uint64_t fileBytes = 0;
    uint64_t alignment = 4096;
    bool direct = false;
};

enum class PieceOutcome { Again, Finished };

// Accounts a piece that delivered `bytesRead` bytes (0: the OS reported the end of the file).
// Again: issue the next piece; Finished: the read is complete; an Io error when the file ended
// before the bytes asked for (see above).
Result<PieceOutcome> account_piece(ReadProgress& progress, uint64_t bytesRead, const ReadFileFacts& file);

// "PATH: read of N bytes at offset X failed: WHY": the message of an OS error on a piece.
Error read_failure(const ReadFileFacts& file, const ReadProgress& progress, const std::string& why);

// InvalidInput unless offset, bytes and destination are multiples of the file's alignment (only
// checked when reads are direct: O_DIRECT and FILE_FLAG_NO_BUFFERING refuse anything else).
Status check_alignment(const ReadFileFacts& file, uint64_t offset, uint64_t bytes, const void* destination);

} // namespace cflow
