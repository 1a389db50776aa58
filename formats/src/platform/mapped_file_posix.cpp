// POSIX MappedFile: mmap for LoadMode::Map, read() into (transparent-huge-page advised)
// anonymous memory for LoadMode::ReadAnon.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "cflow/formats/mapped_file.h"
#include "posix_fd.h"

namespace cflow {
namespace {

using posix::errno_message;
using posix::UniqueFd;

// ---- The SIGBUS guard ----
// A mapped file truncated by another process raises SIGBUS on the next read past its new end,
// which kills the process without a word. The handler replaces the faulting page of a registered
// mapping with a page of zeros and counts the fault; the read resumes, and the reader's next
// check_unchanged() reports the change. A signal handler can only reach static storage, hence
// this one table (a fixed size: registering allocates nothing); faults elsewhere go to the
// disposition that was there before.
struct GuardedRange {
    std::atomic<uintptr_t> begin{0};  // 0: free; kReserved: being filled
    std::atomic<uintptr_t> end{0};
    std::atomic<uint64_t> faults{0};
};
constexpr uintptr_t kReserved = 1;
constexpr size_t kGuardedRanges = 256;  // beyond that many open mappings, the newest go unguarded
std::array<GuardedRange, kGuardedRanges> g_guarded;
struct sigaction g_previous_sigbus {};
uintptr_t g_page_bytes = 4096;
std::once_flag g_guard_installed;

void forward_sigbus(int signal_number, siginfo_t* info, void* context) {
    if ((g_previous_sigbus.sa_flags & SA_SIGINFO) != 0 && g_previous_sigbus.sa_sigaction != nullptr) {
        g_previous_sigbus.sa_sigaction(signal_number, info, context);
        return;
    }
    if (g_previous_sigbus.sa_handler != SIG_DFL && g_previous_sigbus.sa_handler != SIG_IGN) {
        g_previous_sigbus.sa_handler(signal_number);
        return;
    }
    // Default: pending until the handler returns (SIGBUS is blocked inside it), then the default
    // action (a core), whether the signal came from a fault or from kill().
    ::signal(SIGBUS, SIG_DFL);
    ::raise(signal_number);
}

void on_sigbus(int signal_number, siginfo_t* info, void* context) {
    const auto address = reinterpret_cast<uintptr_t>(info->si_addr);
    // si_code <= 0: sent by kill()/raise(), not a fault; si_addr means nothing then.
    for (GuardedRange& range : g_guarded) {
        if (info->si_code <= 0) break;
        const uintptr_t begin = range.begin.load(std::memory_order_acquire);
        if (begin <= kReserved || address < begin || address >= range.end.load(std::memory_order_acquire)) continue;
        const uintptr_t page = address & ~(g_page_bytes - 1);
        const int saved_errno = errno;
        void* zeros = mmap(reinterpret_cast<void*>(page), g_page_bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                           -1, 0);
        errno = saved_errno;
        if (zeros == MAP_FAILED) break;
        range.faults.fetch_add(1, std::memory_order_release);
        return;
    }
    forward_sigbus(signal_number, info, context);
}

void install_sigbus_guard() {
    g_page_bytes = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, &g_previous_sigbus);
}

// The slot guarding [data, data + bytes), or -1 when the table is full.
int guard_range(const uint8_t* data, uint64_t bytes) {
    std::call_once(g_guard_installed, install_sigbus_guard);
    for (size_t i = 0; i < kGuardedRanges; ++i) {
        uintptr_t expected = 0;
        if (!g_guarded[i].begin.compare_exchange_strong(expected, kReserved, std::memory_order_acq_rel)) continue;
        g_guarded[i].faults.store(0, std::memory_order_relaxed);
        g_guarded[i].end.store(reinterpret_cast<uintptr_t>(data) + bytes, std::memory_order_release);
        g_guarded[i].begin.store(reinterpret_cast<uintptr_t>(data), std::memory_order_release);
        return static_cast<int>(i);
    }
    return -1;
}

void unguard_range(int slot) {
    if (slot < 0) return;
    g_guarded[static_cast<size_t>(slot)].begin.store(kReserved, std::memory_order_release);
    g_guarded[static_cast<size_t>(slot)].end.store(0, std::memory_order_release);
    g_guarded[static_cast<size_t>(slot)].begin.store(0, std::memory_order_release);
}

// What identifies the opened file's contents for check_unchanged().
struct FileStamp {
    uint64_t size = 0;
    int64_t mtime_ns = 0;
};

FileStamp stamp_of(const struct stat& st) {
    return {static_cast<uint64_t>(st.st_size), int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

class PosixMappedFile final : public MappedFile {
public:
    PosixMappedFile(std::string path, LoadMode mode, uint8_t* data, uint64_t size, uint64_t mapped_bytes)
        : path_(std::move(path)), mode_(mode), data_(data), size_(size), mapped_bytes_(mapped_bytes) {}
    // A file mapping: keeps `fd` to watch the opened file (not whatever the path names later).
    PosixMappedFile(std::string path, uint8_t* data, uint64_t size, int fd, FileStamp stamp)
        : PosixMappedFile(std::move(path), LoadMode::Map, data, size, size) {
        fd_ = fd;
        stamp_ = stamp;
        guard_slot_ = guard_range(data, size);
    }
    ~PosixMappedFile() override {
        unguard_range(guard_slot_);
        if (data_ && mapped_bytes_) munmap(data_, mapped_bytes_);
        if (fd_ >= 0) ::close(fd_);
    }

    Status check_unchanged() const override {
        if (fd_ < 0) return {};
        std::string what;
        if (guard_slot_ >= 0) {
            const uint64_t faults = g_guarded[static_cast<size_t>(guard_slot_)].faults.load(std::memory_order_acquire);
            if (faults > 0) what = std::to_string(faults) + " read(s) past its end";
        }
        struct stat st {};
        if (fstat(fd_, &st) == 0) {
            const FileStamp now = stamp_of(st);
            if (now.size != stamp_.size)
                what += (what.empty() ? "" : "; ") + std::string("was ") + std::to_string(stamp_.size) + " bytes, now " +
                        std::to_string(now.size);
            else if (now.mtime_ns != stamp_.mtime_ns)
                what += (what.empty() ? "" : "; ") + std::string("rewritten in place");
        }
        if (what.empty()) return {};
        return make_error(ErrorKind::Io, path_ + " changed on disk while in use (" + what +
                                             "): its weights can no longer be trusted; load the model again");
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
    int fd_ = -1;  // file mappings only
    FileStamp stamp_;
    int guard_slot_ = -1;
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
        const int kept_fd = file.fd;
        file.fd = -1;  // the mapping object owns it now
        return std::shared_ptr<MappedFile>(
            std::make_shared<PosixMappedFile>(path, static_cast<uint8_t*>(p), size, kept_fd, stamp_of(st)));
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
