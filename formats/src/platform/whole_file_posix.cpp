// POSIX side of whole_file.h: open with O_NONBLOCK (a FIFO's open would otherwise wait for a
// writer), fstat, refuse anything but a regular file, then read.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cflow/formats/whole_file.h"
#include "posix_fd.h"

namespace cflow {
namespace {

using posix::errno_message;
using posix::UniqueFd;

Status check_regular(const std::string& path, const struct stat& st) {
    if (S_ISREG(st.st_mode)) return {};
    const char* type = S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) ? "a character device"
                     : S_ISBLK(st.st_mode) ? "a block device" : S_ISSOCK(st.st_mode) ? "a socket" : "not a regular file";
    return make_error(path + ": is " + std::string(type) + ", not a regular file");
}

} // namespace

Status require_regular_file(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return make_error(ErrorKind::Io, errno_message(path, "cannot stat"));
    return check_regular(path, st);
}

Result<std::string> read_whole_file(const std::string& path, uint64_t max_bytes, const char* what) {
    UniqueFd file;
    file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (file.fd < 0) return make_error(ErrorKind::Io, errno_message(path, "cannot open"));
    struct stat st {};
    if (::fstat(file.fd, &st) != 0) return make_error(ErrorKind::Io, errno_message(path, "cannot stat"));
    if (Status regular = check_regular(path, st); !regular) return regular.take_error();
    const auto size = static_cast<uint64_t>(st.st_size);
    if (size > max_bytes)
        return make_error(path + ": " + std::to_string(size) + " bytes is more than the " + std::to_string(max_bytes) +
                          "-byte limit for " + what);
    std::string bytes(size, '\0');
    uint64_t done = 0;
    while (done < size) {
        const ssize_t n = ::read(file.fd, bytes.data() + done, size - done);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n < 0) return make_error(ErrorKind::Io, errno_message(path, "read failed"));
        if (n == 0) break;  // the file shrank while reading: keep what is there
        done += uint64_t(n);
    }
    bytes.resize(done);
    return bytes;
}

} // namespace cflow
