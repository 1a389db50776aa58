#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "io/direct_reader.h"

namespace cflow {
namespace {

class PosixDirectReader final : public DirectReader {
public:
    PosixDirectReader(std::string path, int fd, bool direct, uint64_t size)
        : path_(std::move(path)), fd_(fd), direct_(direct), size_(size) {}
    ~PosixDirectReader() override { ::close(fd_); }

    Status read(uint64_t offset, uint64_t bytes, void* destination) override {
        auto* dst = static_cast<uint8_t*>(destination);
        uint64_t done = 0;
        while (done < bytes) {
            const ssize_t n = ::pread(fd_, dst + done, bytes - done, off_t(offset + done));
            if (n < 0 && errno == EINTR) continue;
            if (n < 0)
                return make_error(ErrorKind::Io, path_ + ": read of " + std::to_string(bytes) + " bytes at offset " +
                                                     std::to_string(offset) + " failed: " + std::strerror(errno));
            if (n == 0) {
                // End of file: fine inside the aligned tail past the file's end, an error
                // anywhere before it (the file shrank: the staged bytes would be stale).
                if (offset + done < size_)
                    return make_error(ErrorKind::Io, path_ + ": ended at byte " + std::to_string(offset + done) +
                                                         " while reading expert data up to byte " +
                                                         std::to_string(std::min(offset + bytes, size_)) +
                                                         " (the file is " + std::to_string(size_) + " bytes: did it shrink?)");
                break;
            }
            done += uint64_t(n);
        }
        return {};
    }
    uint64_t alignment() const override { return 4096; }
    bool direct() const override { return direct_; }
    uint64_t file_bytes() const override { return size_; }

private:
    std::string path_;
    int fd_;
    bool direct_;
    uint64_t size_;
};

} // namespace

Result<std::unique_ptr<DirectReader>> DirectReader::open(const std::string& path) {
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
        ::close(fd);
        return make_error(ErrorKind::Io, path + ": cannot stat: " + std::strerror(errno));
    }
    return std::unique_ptr<DirectReader>(new PosixDirectReader(path, fd, direct, uint64_t(st.st_size)));
}

} // namespace cflow
