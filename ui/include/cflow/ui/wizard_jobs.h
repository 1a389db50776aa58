#pragma once
// The background work of a wizard (the conversion and comparison wizards): each job runs on Qt's
// thread pool and its result comes back on the GUI thread while the job's context object (a page)
// lives; one token cancels every job; the wizard waits for all of them before it goes, since a
// job may still read what its pages share. LatestProgress is the hand-over of a job's progress:
// the worker writes it, the page's timer reads the newest.
#include <atomic>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <QFuture>
#include <QFutureWatcher>
#include <QObject>
#include <QtConcurrent/QtConcurrentRun>

#include "cflow/base/cancel.h"

namespace cflow::ui {

class WizardJobs {
public:
    WizardJobs() = default;
    WizardJobs(const WizardJobs&) = delete;
    WizardJobs& operator=(const WizardJobs&) = delete;
    ~WizardJobs() { cancelAndWait(); }

    // The token every job watches; reset() it before a new run.
    const std::shared_ptr<CancelToken>& cancelToken() const { return cancel_; }
    bool busy() const { return busy_->load() > 0; }

    // Runs fn() -> R on the pool; done(R) on the GUI thread, unless `context` is gone by then.
    template <typename R, typename Fn, typename Done>
    void run(QObject* context, Fn fn, Done done) {
        auto* watcher = new QFutureWatcher<R>(context);
        auto busy = busy_;
        ++*busy;
        QObject::connect(watcher, &QFutureWatcherBase::finished, context, [watcher, busy, done = std::move(done)] {
            --*busy;
            done(watcher->result());
            watcher->deleteLater();
        });
        QFuture<R> future = QtConcurrent::run(std::move(fn));
        workers_.push_back(QFuture<void>(future));
        watcher->setFuture(future);
    }

    // Cancels every job and blocks until each has returned (jobs stop within a step of their work).
    void cancelAndWait() {
        cancel_->cancel();
        for (QFuture<void>& worker : workers_) worker.waitForFinished();
        workers_.clear();
    }

private:
    std::shared_ptr<CancelToken> cancel_ = std::make_shared<CancelToken>();
    std::shared_ptr<std::atomic<int>> busy_ = std::make_shared<std::atomic<int>>(0);
    std::vector<QFuture<void>> workers_;
};

// The newest progress report of a job: written on the worker, read by the page's timer.
template <typename T>
class LatestProgress {
public:
    void set(const T& value) {
        std::lock_guard lock(mutex_);
        value_ = value;
    }
    T get() const {
        std::lock_guard lock(mutex_);
        return value_;
    }

private:
    mutable std::mutex mutex_;
    T value_{};
};

} // namespace cflow::ui
