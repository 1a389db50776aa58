#include "io/read_progress.h"

#include <algorithm>

namespace cflow {

uint32_t ReadProgress::next_bytes() const { return uint32_t(std::min(bytes - doneBytes, kMaxPieceBytes)); }

Result<PieceOutcome> account_piece(ReadProgress& progress, uint64_t bytesRead, const ReadFileFacts& file) {
    progress.doneBytes += std::min(bytesRead, progress.bytes - progress.doneBytes);
    if (progress.doneBytes == progress.bytes) return PieceOutcome::Finished;
    const uint64_t reached = progress.next_offset();
    // The end of the file: reported as a 0-byte piece, or (direct I/O) as a piece that stops off a
    // sector boundary, which O_DIRECT / NO_BUFFERING only return at the end of the file; reading
    // on from there would be refused as misaligned rather than return 0.
    const bool ended = bytesRead == 0 || (file.direct && reached % file.alignment != 0);
    if (!ended) return PieceOutcome::Again;
    if (reached >= file.fileBytes) return PieceOutcome::Finished;  // the sector tail past the end
    return make_error(ErrorKind::Io, file.path + ": ended at byte " + std::to_string(reached) +
                                         " while reading expert data up to byte " +
                                         std::to_string(std::min(progress.offset + progress.bytes, file.fileBytes)) +
                                         " (read at offset " + std::to_string(progress.offset) + "; the file was " +
                                         std::to_string(file.fileBytes) + " bytes when opened: did it shrink?)");
}

Error read_failure(const ReadFileFacts& file, const ReadProgress& progress, const std::string& why) {
    return make_error(ErrorKind::Io, file.path + ": read of " + std::to_string(progress.next_bytes()) +
                                         " bytes at offset " + std::to_string(progress.next_offset()) +
                                         " failed: " + why);
}

Status check_alignment(const ReadFileFacts& file, uint64_t offset, uint64_t bytes, const void* destination) {
    if (!file.direct) return {};
    const uint64_t a = file.alignment;
    if (offset % a == 0 && bytes % a == 0 && reinterpret_cast<uintptr_t>(destination) % a == 0) return {};
    return make_error(ErrorKind::InvalidInput, file.path + ": direct read of " + std::to_string(bytes) +
                                                   " bytes at offset " + std::to_string(offset) +
                                                   " is not aligned to " + std::to_string(a) + " bytes");
}

} // namespace cflow
