#pragma once
// The threads that answer HTTP requests: httplib's TaskQueue, started before the server listens
// so that a thread the OS refuses is an error for start() to report. httplib's own ThreadPool
// creates its threads in its constructor, and one that fails there leaves the ones already made
// joinable, so the exception ends the process (std::terminate; `--parallel 64 --queue 4096`
// under a memory limit died with SIGABRT).
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <httplib.h>

#include "cflow/base/result.h"

namespace cflow::server {

class RequestThreads final : public httplib::TaskQueue {
public:
    RequestThreads() = default;
    ~RequestThreads() override { shutdown(); }
    RequestThreads(const RequestThreads&) = delete;
    RequestThreads& operator=(const RequestThreads&) = delete;

    // Runs on the worker thread after each job (one connection served), outside the lock.
    // Set before start().
    void set_after_job(std::function<void()> after_job) { after_job_ = std::move(after_job); }
    // Called with how many queued connections wait for a thread (none idle), whenever that
    // changes; under the queue's lock, so it must not call back. Set before start().
    void set_on_waiting(std::function<void(size_t waiting)> on_waiting) { on_waiting_ = std::move(on_waiting); }

    // Starts `count` threads. Fails with ErrorKind::Io naming how many started when the OS
    // refuses one; those are then stopped and joined again.
    Status start(size_t count);

    void enqueue(std::function<void()> job) override;
    void shutdown() override;  // runs what is queued, then joins; idempotent

private:
    void work();
    void report_waiting_locked();

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> jobs_;
    std::vector<std::thread> threads_;
    size_t idle_ = 0;  // threads waiting for a job
    bool stopping_ = false;
    std::function<void()> after_job_;
    std::function<void(size_t)> on_waiting_;
};

} // namespace cflow::server
