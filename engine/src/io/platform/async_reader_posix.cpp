// The OS's asynchronous AsyncReader on POSIX systems: Linux io_uring through liburing. Reads are
// queued in the kernel straight from the forward thread and completions are collected when the
// fetcher waits (or reaps), so no reader thread wakes per expert and O_DIRECT reads on a local
// file system go to the device without an intermediate thread. Built only where CMake found
// liburing (CFLOW_HAVE_LIBURING); elsewhere, and where the kernel refuses io_uring_queue_init (a
// kernel before 5.1, kernel.io_uring_disabled, a container's seccomp filter), open reports
// Unsupported with the reason and IoBackend::Auto takes the reader pool.
#include "io/async_reader.h"

#if defined(CFLOW_HAVE_LIBURING)
#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>
#include <unordered_map>

#include "io/platform/open_direct_posix.h"
#include "io/read_progress.h"
#endif

namespace cflow {

IoBackend os_async_backend() { return IoBackend::Uring; }

#if defined(CFLOW_HAVE_LIBURING)
namespace {

constexpr uint64_t kCancelTag = ~uint64_t(0);  // user_data of the destructor's cancel request
// Pieces of one read that may come back -EAGAIN / -EINTR before the read fails: a device that
// keeps refusing is reported rather than retried for ever.
constexpr unsigned kMaxRetriesPerRead = 1000;

std::string errno_text(int err) { return std::strerror(err); }

class UringReader final : public AsyncReader {
public:
    explicit UringReader(OpenedFile file) : fd_(file.fd), facts_(std::move(file.facts)) {}

    // Unsupported when the kernel refuses the ring.
    Status init(unsigned queueDepth) {
        depth_ = std::max(1u, queueDepth);
        const int ret = io_uring_queue_init(depth_, &ring_, 0);
        if (ret < 0)
            return make_error(ErrorKind::Unsupported,
                              "io_uring_queue_init(" + std::to_string(depth_) + ") failed: " + errno_text(-ret) +
                                  " (a kernel before 5.1, kernel.io_uring_disabled, or a seccomp filter refusing it)");
        ringReady_ = true;
        return {};
    }

    ~UringReader() override {
        if (ringReady_) {
            drain();
            io_uring_queue_exit(&ring_);
        }
        ::close(fd_);
    }

    Status submit(uint64_t offset, uint64_t bytes, void* destination, uint64_t tag) override {
        if (tag == kCancelTag) return make_error(ErrorKind::InvalidInput, "read tag " + std::to_string(tag) + " is reserved");
        if (Status st = check_alignment(facts_, offset, bytes, destination); !st) return st;
        if (broken_) return *broken_;
        if (requests_.count(tag))
            return make_error(ErrorKind::InvalidInput, "read tag " + std::to_string(tag) + " is already in flight");
        Request& r = requests_[tag];
        r.progress = ReadProgress{offset, bytes, static_cast<uint8_t*>(destination)};
        if (bytes == 0) {
            r.finished = true;
            return {};
        }
        if (inKernel_ < depth_) {
            issue(tag, r);
        } else {
            backlog_.push_back(tag);  // the ring is full: issued when a read completes
        }
        return {};
    }

    Status wait(uint64_t tag) override {
        auto it = requests_.find(tag);
        if (it == requests_.end())
            return make_error(ErrorKind::InvalidInput, "no read with tag " + std::to_string(tag) + " is in flight");
        Request* r = &it->second;  // nodes keep their address when the map rehashes
        while (!r->finished) {
            if (broken_ || inKernel_ == 0) {
                // Nothing left that could finish it: the ring failed (or a bug left it unissued).
                finish(*r, broken_ ? *broken_ : make_error(ErrorKind::Internal, "expert read " + std::to_string(tag) +
                                                                                     " was never issued"));
                break;
            }
            // Submits anything a transient failure left in the submission queue, then sleeps in
            // the kernel until a completion arrives.
            const int ret = io_uring_submit_and_wait(&ring_, 1);
            if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
                broken_ = make_error(ErrorKind::Io, facts_.path + ": io_uring_submit_and_wait failed: " + errno_text(-ret));
                continue;
            }
            collect_completions();
        }
        Status status = std::move(r->status);
        requests_.erase(tag);
        return status;
    }

    void reap(std::vector<ReadCompletion>& completed) override {
        if (!broken_) {
            const int ret = io_uring_submit(&ring_);  // no system call when nothing is pending
            if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
                broken_ = make_error(ErrorKind::Io, facts_.path + ": io_uring_submit failed: " + errno_text(-ret));
            collect_completions();
        }
        for (auto it = requests_.begin(); it != requests_.end();) {
            if (!it->second.finished) {
                ++it;
                continue;
            }
            completed.push_back({it->first, std::move(it->second.status)});
            it = requests_.erase(it);
        }
    }

    uint64_t alignment() const override { return facts_.alignment; }
    bool direct() const override { return facts_.direct; }
    uint64_t file_bytes() const override { return facts_.fileBytes; }
    IoBackend backend() const override { return IoBackend::Uring; }

private:
    struct Request {
        ReadProgress progress;   // destination: the caller's [bytes] bytes
        bool finished = false;
        Status status;
        unsigned retries = 0;    // -EAGAIN / -EINTR pieces so far
    };

    static void finish(Request& r, Status status) {
        r.finished = true;
        r.status = std::move(status);
    }

    // Puts the read's next piece in the ring and submits it (inKernel_ < depth_ here, so the
    // submission queue has room: every issued entry is submitted at once).
    void issue(uint64_t tag, Request& r) {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        if (!sqe) {  // only after a transient submit failure left entries queued
            (void)io_uring_submit(&ring_);
            sqe = io_uring_get_sqe(&ring_);
        }
        if (!sqe) {
            finish(r, make_error(ErrorKind::Io, facts_.path + ": the io_uring submission queue stays full"));
            return;
        }
        io_uring_prep_read(sqe, fd_, r.progress.next_destination(), r.progress.next_bytes(), r.progress.next_offset());
        io_uring_sqe_set_data64(sqe, tag);
        ++inKernel_;
        const int ret = io_uring_submit(&ring_);
        // -EAGAIN / -EBUSY / -EINTR: the entry stays in the queue; wait() submits it again.
        if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
            broken_ = make_error(ErrorKind::Io, facts_.path + ": io_uring_submit failed: " + errno_text(-ret));
    }

    // Handles every completion already in the ring, then moves waiting reads into the room freed.
    void collect_completions() {
        io_uring_cqe* cqe = nullptr;
        while (io_uring_peek_cqe(&ring_, &cqe) == 0 && cqe) {
            const uint64_t tag = io_uring_cqe_get_data64(cqe);
            const int res = cqe->res;
            io_uring_cqe_seen(&ring_, cqe);
            --inKernel_;
            on_piece(tag, res);
        }
        while (!backlog_.empty() && inKernel_ < depth_ && !broken_) {
            const uint64_t tag = backlog_.front();
            backlog_.pop_front();
            issue(tag, requests_.at(tag));
        }
    }

    void on_piece(uint64_t tag, int res) {
        auto it = requests_.find(tag);
        if (it == requests_.end()) return;  // kCancelTag's own completion
        Request& r = it->second;
        if (res == -EAGAIN || res == -EINTR) {
            if (++r.retries <= kMaxRetriesPerRead) return issue(tag, r);  // inKernel_ just dropped: room
            return finish(r, read_failure(facts_, r.progress, errno_text(-res) + ", " +
                                                                  std::to_string(kMaxRetriesPerRead) + " times"));
        }
        if (res < 0) return finish(r, read_failure(facts_, r.progress, errno_text(-res)));
        auto outcome = account_piece(r.progress, uint64_t(res), facts_);
        if (!outcome) return finish(r, outcome.take_error());
        if (*outcome == PieceOutcome::Finished) return finish(r, {});
        issue(tag, r);  // a short read: the rest, from where it stopped
    }

    // The destructor's half: reads the kernel holds write into their destinations until they
    // complete, so ask it to cancel them all and wait until every one has come back. Reads still
    // in the backlog never reached the kernel.
    void drain() {
        backlog_.clear();
        if (inKernel_ == 0) return;
        if (io_uring_sqe* sqe = io_uring_get_sqe(&ring_)) {
            // A kernel before 5.19 answers -EINVAL (no CANCEL_ANY): then the reads just finish.
            io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
            io_uring_sqe_set_data64(sqe, kCancelTag);
            ++inKernel_;
        }
        while (inKernel_ > 0) {
            io_uring_cqe* cqe = nullptr;
            const int ret = io_uring_submit_and_wait(&ring_, 1);
            if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) break;  // the ring is gone
            while (io_uring_peek_cqe(&ring_, &cqe) == 0 && cqe) {
                io_uring_cqe_seen(&ring_, cqe);
                --inKernel_;
            }
        }
    }

    int fd_;
    ReadFileFacts facts_;
    io_uring ring_{};
    bool ringReady_ = false;
    unsigned depth_ = 1;
    unsigned inKernel_ = 0;                           // entries submitted whose completion is not seen
    std::unordered_map<uint64_t, Request> requests_;  // by tag, until waited for or reaped
    std::deque<uint64_t> backlog_;                    // tags not yet issued (the ring was full)
    std::optional<Error> broken_;                     // the ring itself failed: every read fails with it
};

} // namespace

Result<std::unique_ptr<AsyncReader>> open_os_async_reader(const std::string& path, const AsyncReaderOptions& options) {
    auto file = open_for_direct_reads(path);
    if (!file) return file.take_error();
    auto reader = std::make_unique<UringReader>(std::move(file.value()));
    if (Status st = reader->init(options.queueDepth); !st) return st.take_error();
    return std::unique_ptr<AsyncReader>(std::move(reader));
}

#else

Result<std::unique_ptr<AsyncReader>> open_os_async_reader(const std::string&, const AsyncReaderOptions&) {
    return make_error(ErrorKind::Unsupported, "this build has no io_uring (liburing was not found by pkg-config at "
                                              "configure time, or the OS is not Linux)");
}

#endif

} // namespace cflow
