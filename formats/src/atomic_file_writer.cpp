// AtomicFileWriter: stdio-based, portable; the rename makes the result appear all at once.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include "cflow/formats/mapped_file.h"

namespace cflow {
namespace {
FILE* as_file(void* h) { return static_cast<FILE*>(h); }

std::string errno_text() { return std::strerror(errno); }

int seek64(FILE* f, uint64_t offset, int whence) {
#ifdef _WIN32
    return _fseeki64(f, static_cast<long long>(offset), whence);
#else
    return fseeko(f, static_cast<off_t>(offset), whence);
#endif
}
} // namespace

AtomicFileWriter::AtomicFileWriter(std::string final_path) : final_path_(std::move(final_path)) {
    std::random_device rd;
    temp_path_ = final_path_ + ".tmp-" + std::to_string(rd() % 1000000);
}

AtomicFileWriter::~AtomicFileWriter() {
    if (handle_) std::fclose(as_file(handle_));
    if (!committed_) {
        std::error_code ec;
        std::filesystem::remove(temp_path_, ec);
    }
}

Status AtomicFileWriter::open() {
    handle_ = std::fopen(temp_path_.c_str(), "wb");
    if (!handle_)
        return make_error(ErrorKind::Io, temp_path_ + ": cannot create temporary output file: " + errno_text());
    return {};
}

Status AtomicFileWriter::write(const void* data, uint64_t bytes) {
    if (!handle_) return make_error(ErrorKind::Internal, temp_path_ + ": write to a file that is not open");
    if (bytes && std::fwrite(data, 1, bytes, as_file(handle_)) != bytes)
        return make_error(ErrorKind::Io, temp_path_ + ": write failed at byte " + std::to_string(bytes_written_) +
                                             ": " + errno_text());
    bytes_written_ += bytes;
    return {};
}

Status AtomicFileWriter::write_at(uint64_t offset, const void* data, uint64_t bytes) {
    if (!handle_) return make_error(ErrorKind::Internal, temp_path_ + ": write to a file that is not open");
    FILE* f = as_file(handle_);
    if (std::fflush(f) != 0 || seek64(f, offset, SEEK_SET) != 0)
        return make_error(ErrorKind::Io,
                          temp_path_ + ": seek to byte " + std::to_string(offset) + " failed: " + errno_text());
    if (bytes && std::fwrite(data, 1, bytes, f) != bytes)
        return make_error(ErrorKind::Io,
                          temp_path_ + ": write failed at byte " + std::to_string(offset) + ": " + errno_text());
    if (std::fflush(f) != 0 || seek64(f, 0, SEEK_END) != 0)
        return make_error(ErrorKind::Io, temp_path_ + ": seek to end failed: " + errno_text());
    return {};
}

Status AtomicFileWriter::commit() {
    if (!handle_) return make_error(ErrorKind::Internal, temp_path_ + ": commit of a file that is not open");
    FILE* f = as_file(handle_);
    handle_ = nullptr;
    const bool flushed = std::fflush(f) == 0;
    const bool closed = std::fclose(f) == 0;
    if (!flushed || !closed)
        return make_error(ErrorKind::Io, temp_path_ + ": flushing the output failed (disk full?): " + errno_text());
    std::error_code ec;
    std::filesystem::rename(temp_path_, final_path_, ec);
    if (ec) return make_error(ErrorKind::Io, final_path_ + ": cannot move finished file into place: " + ec.message());
    committed_ = true;
    return {};
}

} // namespace cflow
