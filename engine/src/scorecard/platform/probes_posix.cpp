// POSIX scorecard probes: L1-d miss counting through perf_event_open (Linux only; other POSIX
// systems report why not), the process's read byte count (/proc/self/io) and per-file page-cache
// eviction and residency (posix_fadvise, mincore).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#ifdef __linux__
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#endif

#include "scorecard/scorecard_internal.h"

namespace cflow::scorecard {
namespace {

#ifdef __linux__
class PerfL1dCounter final : public CacheMissCounter {
public:
    explicit PerfL1dCounter(int fd) : fd_(fd) {}
    ~PerfL1dCounter() override { ::close(fd_); }
    void start() override {
        ioctl(fd_, PERF_EVENT_IOC_RESET, 0);
        ioctl(fd_, PERF_EVENT_IOC_ENABLE, 0);
    }
    uint64_t stop() override {
        ioctl(fd_, PERF_EVENT_IOC_DISABLE, 0);
        uint64_t count = 0;
        if (::read(fd_, &count, sizeof count) != ssize_t(sizeof count)) return 0;
        return count;
    }

private:
    int fd_;
};
#endif

} // namespace

Result<std::unique_ptr<CacheMissCounter>> CacheMissCounter::open() {
#ifdef __linux__
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_HW_CACHE;
    attr.config = PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_READ << 8) | (PERF_COUNT_HW_CACHE_RESULT_MISS << 16);
    attr.disabled = 1;
    attr.exclude_kernel = 1;  // user-space misses only: allowed at perf_event_paranoid <= 2
    attr.exclude_hv = 1;
    const long fd = syscall(SYS_perf_event_open, &attr, 0 /* this thread */, -1 /* any cpu */, -1, 0);
    if (fd < 0) {
        const int err = errno;
        std::string why = std::string("perf_event_open(PERF_TYPE_HW_CACHE, L1D read miss) failed: ") + std::strerror(err);
        if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV)
            why += " (the kernel exposes no hardware cache event here: no PMU, or a VM that passes none through)";
        else if (err == EACCES || err == EPERM)
            why += " (/proc/sys/kernel/perf_event_paranoid forbids it for this user)";
        return make_error(ErrorKind::Unsupported, why);
    }
    return std::unique_ptr<CacheMissCounter>(new PerfL1dCounter(int(fd)));
#else
    return make_error(ErrorKind::Unsupported, "hardware cache counters are read through perf_event_open, which only Linux has");
#endif
}

int64_t process_read_bytes() {
#ifdef __linux__
    std::FILE* f = std::fopen("/proc/self/io", "r");
    if (!f) return -1;
    char line[128];
    long long rchar = -1;
    while (std::fgets(line, sizeof line, f))
        if (std::sscanf(line, "rchar: %lld", &rchar) == 1) break;
    std::fclose(f);
    return rchar;
#else
    return -1;
#endif
}

Status drop_file_cache(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return make_error(ErrorKind::Io, path + ": " + std::strerror(errno));
    // Dirty pages cannot be evicted: the file was just written, so write it back first.
    ::fsync(fd);
#if defined(POSIX_FADV_DONTNEED)
    const int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    if (rc != 0) return make_error(ErrorKind::Io, path + ": posix_fadvise(DONTNEED): " + std::strerror(rc));
    return {};
#else
    ::close(fd);
    return make_error(ErrorKind::Unsupported, "this OS has no posix_fadvise(DONTNEED) to evict one file's pages");
#endif
}

double file_cache_residency(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return -1;
    struct stat st{};
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
        ::close(fd);
        return -1;
    }
    const size_t bytes = size_t(st.st_size);
    void* map = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) return -1;
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> resident((bytes + page - 1) / page);  // [pages] bit 0 = resident
#ifdef __linux__
    const int rc = mincore(map, bytes, resident.data());
#else
    const int rc = mincore(static_cast<char*>(map), bytes, reinterpret_cast<char*>(resident.data()));
#endif
    munmap(map, bytes);
    if (rc != 0) return -1;
    size_t n = 0;
    for (unsigned char r : resident) n += r & 1u;
    return double(n) / double(resident.size());
}

} // namespace cflow::scorecard
