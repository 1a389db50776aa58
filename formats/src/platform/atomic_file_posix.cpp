// POSIX side of atomic_file_platform.h.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "atomic_file_platform.h"
#include "posix_fd.h"

namespace cflow::atomic_file {
namespace {

using posix::errno_message;

const char* kind_of(mode_t mode) {
    return S_ISDIR(mode) ? "a directory" : S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device"
         : S_ISFIFO(mode) ? "a FIFO" : S_ISSOCK(mode) ? "a socket" : "not a regular file";
}

} // namespace

Result<Target> inspect_target(const std::string& final_path) {
    Target target;
    struct stat st {};
    // stat follows a symlinked target: the rename replaces the link, but what it names tells
    // whether the user meant a device (`-o /dev/sda`) or a folder.
    if (::stat(final_path.c_str(), &st) != 0) {
        if (errno != ENOENT) return make_error(ErrorKind::Io, errno_message(final_path, "cannot inspect the output"));
        target.mode = 0666;  // open() applies the umask, as for any new file
        return target;
    }
    if (!S_ISREG(st.st_mode))
        return make_error(final_path + ": the output is " + std::string(kind_of(st.st_mode)) +
                          ", not a regular file; refusing to replace it");
    target.exists = true;
    target.mode = static_cast<unsigned>(st.st_mode & 07777);
    return target;
}

Result<std::FILE*> create_exclusive(const std::string& temp_path, const Target& target, bool& name_taken) {
    name_taken = false;
    // 0600 until the mode is set below: a half-written file is nobody else's business.
    const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, target.exists ? 0600 : target.mode);
    if (fd < 0) {
        name_taken = errno == EEXIST || errno == ELOOP;
        return make_error(ErrorKind::Io, errno_message(temp_path, "cannot create temporary output file"));
    }
    // An existing target keeps its permission bits (a 0600 model stayed 0600 only by luck before).
    if (target.exists && ::fchmod(fd, static_cast<mode_t>(target.mode)) != 0) {
        const std::string message = errno_message(temp_path, "cannot set the output's mode");
        ::close(fd);
        ::unlink(temp_path.c_str());
        return make_error(ErrorKind::Io, message);
    }
    std::FILE* f = ::fdopen(fd, "wb");
    if (!f) {
        const std::string message = errno_message(temp_path, "cannot open temporary output file");
        ::close(fd);
        ::unlink(temp_path.c_str());
        return make_error(ErrorKind::Io, message);
    }
    // Held until the file is closed, and released by the kernel when the writer dies (kill -9):
    // is_being_written() tells a running conversion's file from a killed one's.
    (void)::flock(fd, LOCK_EX | LOCK_NB);
    return f;
}

bool is_being_written(const std::string& temp_path) {
    const int fd = ::open(temp_path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;
    const bool locked = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);
    return locked;
}

void start_writeback(std::FILE* f, uint64_t offset, uint64_t bytes) {
#if defined(__linux__)
    if (std::fflush(f) == 0)
        (void)::sync_file_range(::fileno(f), static_cast<off_t>(offset), static_cast<off_t>(bytes), SYNC_FILE_RANGE_WRITE);
#else
    (void)f;
    (void)offset;
    (void)bytes;
#endif
}

Status sync_and_close(std::FILE* f, const std::string& temp_path) {
    const bool flushed = std::fflush(f) == 0;
    int saved = flushed ? 0 : errno;
    bool synced = false;
    if (flushed) {
        synced = ::fsync(::fileno(f)) == 0;
        if (!synced) saved = errno;
    }
    const bool closed = std::fclose(f) == 0;
    if (!closed && saved == 0) saved = errno;
    if (!flushed || !synced || !closed) {
        errno = saved;
        return make_error(ErrorKind::Io, errno_message(temp_path, "flushing the output to disk failed (disk full?)"));
    }
    return {};
}

Status replace(const std::string& temp_path, const std::string& final_path) {
    if (::rename(temp_path.c_str(), final_path.c_str()) != 0)
        return make_error(ErrorKind::Io, errno_message(final_path, "cannot move finished file into place"));
    // The rename is a change of the folder: without its fsync a crash can forget it.
    std::string dir = std::filesystem::path(final_path).parent_path().string();
    if (dir.empty()) dir = ".";
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return make_error(ErrorKind::Io, errno_message(dir, "cannot open the output folder to sync it"));
    const bool synced = ::fsync(fd) == 0 || errno == EINVAL;  // some file systems cannot sync a folder
    const std::string message = synced ? std::string() : errno_message(dir, "cannot sync the output folder");
    ::close(fd);
    if (!synced) return make_error(ErrorKind::Io, message);
    return {};
}

} // namespace cflow::atomic_file
