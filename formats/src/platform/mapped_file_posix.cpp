// POSIX MappedFile: mmap for LoadMode::Map, read() into (transparent-huge-page advised)
// anonymous memory for LoadMode::ReadAnon.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "cflow/formats/mapped_file.h"
#include "posix_fd.h"

namespace cflow {
namespace {

using posix::errno_message;
using posix::UniqueFd;

class PosixMappedFile final : public MappedFile {
public:
    PosixMappedFile(std::string path, LoadMode mode, uint8_t* data, uint64_t size, uint64_t mapped_bytes)
        : path_(std::move(path)), mode_(mode), data_(data), size_(size), mapped_bytes_(mapped_bytes) {}
    ~PosixMappedFile() override {
        if (data_ && mapped_bytes_) munmap(data_, mapped_bytes_);
    }
    const uint8_t* data() const override { return data_; }
    uint64_t size() const override { return size_; }
    const std::string& path() const override { return path_; }
    LoadMode mode() const override { return mode_; }

    void advise_willneed(uint64_t offset, uint64_t bytes) const override {
        if (!data_ || mode_ != LoadMode::Map || offset >= size_) return;
        const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
        uint64_t start = offset & ~(page - 1);
        uint64_t end = offset + std::min(bytes, size_ - offset);
        madvise(data_ + start, end - start, MADV_WILLNEED);
    }

    void advise_unneeded(uint64_t offset, uint64_t bytes) const override {
        if (!data_ || mode_ != LoadMode::Map || offset >= size_) return;
        const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
        const uint64_t start = offset & ~(page - 1);
        const uint64_t end = offset + std::min(bytes, size_ - offset);
        madvise(data_ + start, end - start, MADV_DONTNEED);  // read-only file pages: refaulted if read again
    }

    uint64_t resident_bytes() const override {
        if (!data_) return 0;
        if (mode_ == LoadMode::ReadAnon) return size_;
        const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
        const uint64_t pages = (mapped_bytes_ + page - 1) / page;
        std::vector<unsigned char> vec(pages);
        if (mincore(data_, mapped_bytes_, vec.data()) != 0) return 0;
        uint64_t resident = 0;
        for (unsigned char v : vec) resident += (v & 1u) ? page : 0;
        return std::min(resident, size_);
    }

private:
    std::string path_;
    LoadMode mode_;
    uint8_t* data_;
    uint64_t size_;
    uint64_t mapped_bytes_;
};

} // namespace

Result<std::shared_ptr<MappedFile>> MappedFile::open(const std::string& path, LoadMode mode, const AnonTransform& transform) {
    UniqueFd file;
    // O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever (it has no effect on
    // regular files, the only kind accepted below).
    file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (file.fd < 0) return make_error(ErrorKind::Io, errno_message(path, "cannot open"));
    struct stat st {};
    if (fstat(file.fd, &st) != 0) return make_error(ErrorKind::Io, errno_message(path, "cannot stat"));
    if (S_ISDIR(st.st_mode)) return make_error(path + ": is a directory, not a file");
    if (!S_ISREG(st.st_mode)) return make_error(path + ": is not a regular file (a FIFO, device or socket)");
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    if (size == 0) return std::shared_ptr<MappedFile>(std::make_shared<PosixMappedFile>(path, mode, nullptr, 0, 0));

    if (mode == LoadMode::Map) {
        void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, file.fd, 0);
        if (p == MAP_FAILED) return make_error(ErrorKind::Io, errno_message(path, "mmap failed"));
        madvise(p, size, MADV_SEQUENTIAL);
        return std::shared_ptr<MappedFile>(
            std::make_shared<PosixMappedFile>(path, mode, static_cast<uint8_t*>(p), size, size));
    }

    // Anonymous copy, rounded up to 2 MiB so the kernel can back it with huge pages.
    constexpr uint64_t kHuge = 2ull << 20;
    const uint64_t mapped = (size + kHuge - 1) / kHuge * kHuge;
    void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return make_error(ErrorKind::OutOfMemory, errno_message(path, "cannot allocate memory for"));
#ifdef MADV_HUGEPAGE
    madvise(p, mapped, MADV_HUGEPAGE);
#endif
    auto* dst = static_cast<uint8_t*>(p);
    uint64_t done = 0;
    while (done < size) {
        ssize_t n = ::read(file.fd, dst + done, std::min<uint64_t>(size - done, 1ull << 30));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            std::string msg = n == 0 ? path + ": file shrank while reading (at byte " + std::to_string(done) + ")"
                                     : errno_message(path, ("read failed at byte " + std::to_string(done)).c_str());
            munmap(p, mapped);
            // A file that shrinks under us is the OS's view changing, not bad contents: Io either way.
            return make_error(ErrorKind::Io, msg);
        }
        done += static_cast<uint64_t>(n);
    }
    if (transform) transform(dst, size);
    mprotect(p, mapped, PROT_READ);
    return std::shared_ptr<MappedFile>(std::make_shared<PosixMappedFile>(path, mode, dst, size, mapped));
}

} // namespace cflow
