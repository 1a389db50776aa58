// Windows side of atomic_file_platform.h.
#include <fcntl.h>
#include <io.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "atomic_file_platform.h"
#include "cflow/base/utf8_path.h"

namespace cflow::atomic_file {

Result<Target> inspect_target(const std::string& final_path) {
    Target target;
    std::error_code ec;
    const auto status = std::filesystem::status(path_from_utf8(final_path), ec);
    if (ec || !std::filesystem::exists(status)) return target;
    if (!std::filesystem::is_regular_file(status))
        return make_error(final_path + ": the output is not a regular file (a folder or a device); refusing to replace it");
    target.exists = true;
    return target;
}

Result<std::FILE*> create_exclusive(const std::string& temp_path, const Target&, bool& name_taken) {
    name_taken = false;
    // _O_EXCL is CREATE_NEW: an existing file or link of that name is never opened.
    const int fd = ::_wopen(path_from_utf8(temp_path).c_str(), _O_WRONLY | _O_CREAT | _O_EXCL | _O_BINARY | _O_NOINHERIT,
                            _S_IREAD | _S_IWRITE);
    if (fd < 0) {
        name_taken = errno == EEXIST;
        return make_error(ErrorKind::Io, temp_path + ": cannot create temporary output file: " + std::strerror(errno));
    }
    std::FILE* f = ::_fdopen(fd, "wb");
    if (!f) {
        ::_close(fd);
        ::_wunlink(path_from_utf8(temp_path).c_str());
        return make_error(ErrorKind::Io, temp_path + ": cannot open temporary output file");
    }
    return f;
}

void start_writeback(std::FILE*, uint64_t, uint64_t) {}  // FlushFileBuffers would wait: nothing to start

Status sync_and_close(std::FILE* f, const std::string& temp_path) {
    const bool flushed = std::fflush(f) == 0;
    const bool synced = flushed && ::_commit(::_fileno(f)) == 0;
    const bool closed = std::fclose(f) == 0;
    if (!flushed || !synced || !closed)
        return make_error(ErrorKind::Io, temp_path + ": flushing the output to disk failed (disk full?): " + std::strerror(errno));
    return {};
}

// A file another process has open cannot be removed on Windows (the C runtime opens without
// FILE_SHARE_DELETE): the sweep's removal itself fails for a running writer's file.
bool is_being_written(const std::string&) { return false; }

Status replace(const std::string& temp_path, const std::string& final_path) {
    std::error_code ec;
    std::filesystem::rename(path_from_utf8(temp_path), path_from_utf8(final_path), ec);  // MoveFileEx, replacing
    if (ec) return make_error(ErrorKind::Io, final_path + ": cannot move finished file into place: " + ec.message());
    return {};
}

} // namespace cflow::atomic_file
