#include "io/platform/open_direct_posix.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cflow {

Result<OpenedFile> open_for_direct_reads(const std::string& path) {
    bool direct = true;
#ifdef O_DIRECT
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
    if (fd < 0 && errno == EINVAL) {
        direct = false;
        fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    }
#else
    direct = false;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
#endif
    if (fd < 0) return make_error(ErrorKind::Io, path + ": cannot open for expert reads: " + std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        return make_error(ErrorKind::Io, path + ": cannot stat: " + std::strerror(err));
    }
    // 4096: a multiple of every logical block size O_DIRECT asks for on the disks we meet.
    return OpenedFile{fd, ReadFileFacts{path, uint64_t(st.st_size), 4096, direct}};
}

} // namespace cflow
