#pragma once
// Owns a worker QObject on a QThread of its own (the engine's, the remote client's): the worker
// is moved to the fresh thread and deleted there when it finishes; destruction shuts the worker
// down (what it runs is cancelled and later requests become no-ops), then quits and joins the
// thread. Worker: a QObject with a default constructor and a thread-safe shutdown().
#include <QObject>
#include <QString>
#include <QThread>

namespace cflow::ui {

template <class Worker>
class WorkerThread {
public:
    explicit WorkerThread(const QString& threadName) : worker_(new Worker) {
        thread_.setObjectName(threadName);
        worker_->moveToThread(&thread_);
        QObject::connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
        thread_.start();
    }
    ~WorkerThread() {
        worker_->shutdown();
        thread_.quit();
        thread_.wait();
    }
    WorkerThread(const WorkerThread&) = delete;
    WorkerThread& operator=(const WorkerThread&) = delete;

    Worker* worker() const { return worker_; }

private:
    QThread thread_;
    Worker* worker_;  // deleted on its thread when the thread finishes
};

} // namespace cflow::ui
