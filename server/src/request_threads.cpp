#include "request_threads.h"

#include <string>
#include <system_error>

namespace cflow::server {

Status RequestThreads::start(size_t count) {
    threads_.reserve(count);
    try {
        for (size_t i = 0; i < count; ++i) threads_.emplace_back([this] { work(); });
    } catch (const std::system_error& e) {
        const size_t started = threads_.size();
        shutdown();
        return make_error(ErrorKind::Io, "cannot start " + std::to_string(count) + " request threads (the OS refused after " +
                                             std::to_string(started) + ": " + e.what() +
                                             "): lower --parallel or --queue");
    }
    return {};
}

void RequestThreads::enqueue(std::function<void()> job) {
    {
        std::lock_guard lock(mutex_);
        jobs_.push_back(std::move(job));
        report_waiting_locked();
    }
    wake_.notify_one();
}

void RequestThreads::shutdown() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_)
        if (t.joinable()) t.join();
    threads_.clear();
}

void RequestThreads::report_waiting_locked() {
    if (on_waiting_) on_waiting_(jobs_.size() > idle_ ? jobs_.size() - idle_ : 0);
}

void RequestThreads::work() {
    for (;;) {
        std::function<void()> job;
        {
            std::unique_lock lock(mutex_);
            ++idle_;
            report_waiting_locked();
            wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
            --idle_;
            if (jobs_.empty()) return;  // stopping, nothing left
            job = std::move(jobs_.front());
            jobs_.pop_front();
            report_waiting_locked();
        }
        job();
        if (after_job_) after_job_();
    }
}

} // namespace cflow::server
