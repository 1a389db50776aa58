// The portable AsyncReader: a pool of reader threads, each taking the oldest queued read and
// doing it with a blocking positioned read (DirectReader). What every OS can run, and what Auto
// falls back to where the OS's asynchronous API is unavailable. Costs a thread per read in
// flight and a wake-up per completion, which io_uring and overlapped I/O avoid.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "io/async_reader.h"
#include "io/direct_reader.h"
#include "io/read_progress.h"

namespace cflow {
namespace {

class ThreadPoolReader final : public AsyncReader {
public:
    explicit ThreadPoolReader(std::unique_ptr<DirectReader> reader) : reader_(std::move(reader)) {}

    // Starts the threads; std::system_error when the OS refuses one (open() turns it into Io).
    void start(unsigned threads) {
        for (unsigned i = 0; i < std::max(1u, threads); ++i) threads_.emplace_back([this] { loop(); });
    }

    ~ThreadPoolReader() override {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;  // queued reads never start; a thread finishes the read it is in
        }
        work_cv_.notify_all();
        for (auto& t : threads_) t.join();
    }

    Status submit(uint64_t offset, uint64_t bytes, void* destination, uint64_t tag) override {
        const ReadFileFacts facts{std::string(), reader_->file_bytes(), reader_->alignment(), reader_->direct()};
        if (Status st = check_alignment(facts, offset, bytes, destination); !st) return st;
        {
            std::lock_guard lock(mutex_);
            if (requests_.count(tag))
                return make_error(ErrorKind::InvalidInput, "read tag " + std::to_string(tag) + " is already in flight");
            requests_.emplace(tag, Request{offset, bytes, static_cast<uint8_t*>(destination), false, {}});
            queue_.push_back(tag);
        }
        work_cv_.notify_one();
        return {};
    }

    Status wait(uint64_t tag) override {
        std::unique_lock lock(mutex_);
        auto it = requests_.find(tag);
        if (it == requests_.end())
            return make_error(ErrorKind::InvalidInput, "no read with tag " + std::to_string(tag) + " is in flight");
        Request* r = &it->second;  // a node's address survives rehashing, its iterator need not
        done_cv_.wait(lock, [r] { return r->finished; });
        Status status = std::move(r->status);
        requests_.erase(tag);
        return status;
    }

    void reap(std::vector<ReadCompletion>& completed) override {
        std::lock_guard lock(mutex_);
        for (auto it = requests_.begin(); it != requests_.end();) {
            if (!it->second.finished) {
                ++it;
                continue;
            }
            completed.push_back({it->first, std::move(it->second.status)});
            it = requests_.erase(it);
        }
    }

    uint64_t alignment() const override { return reader_->alignment(); }
    bool direct() const override { return reader_->direct(); }
    uint64_t file_bytes() const override { return reader_->file_bytes(); }
    IoBackend backend() const override { return IoBackend::Threads; }

private:
    struct Request {
        uint64_t offset;
        uint64_t bytes;
        uint8_t* destination;  // [bytes] bytes, the caller's
        bool finished;
        Status status;
    };

    void loop() {
        for (;;) {
            uint64_t tag;
            Request job;
            {
                std::unique_lock lock(mutex_);
                work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
                if (stop_) return;
                tag = queue_.front();
                queue_.pop_front();
                job = requests_.at(tag);
            }
            Status st = reader_->read(job.offset, job.bytes, job.destination);
            {
                std::lock_guard lock(mutex_);
                Request& r = requests_.at(tag);  // only wait()/reap() erase, and only finished requests
                r.finished = true;
                r.status = std::move(st);
            }
            done_cv_.notify_all();
        }
    }

    std::unique_ptr<DirectReader> reader_;  // thread-safe positioned reads
    std::mutex mutex_;
    std::condition_variable work_cv_;
    std::condition_variable done_cv_;
    std::unordered_map<uint64_t, Request> requests_;  // by tag: queued, reading or finished
    std::deque<uint64_t> queue_;                      // tags not yet started, oldest first
    bool stop_ = false;
    std::vector<std::thread> threads_;
};

} // namespace

Result<std::unique_ptr<AsyncReader>> open_thread_pool_reader(const std::string& path, const AsyncReaderOptions& options) {
    auto reader = DirectReader::open(path);
    if (!reader) return reader.take_error();
    auto pool = std::make_unique<ThreadPoolReader>(std::move(reader.value()));
    try {
        pool->start(options.readerThreads);
    } catch (const std::system_error& e) {  // the destructor joins the threads that did start
        return make_error(ErrorKind::Io, path + ": cannot start expert reader threads: " + e.what());
    }
    return std::unique_ptr<AsyncReader>(std::move(pool));
}

} // namespace cflow
