#pragma once
// Ctrl-C handling for long CLI jobs: the first SIGINT cancels the job's token, the second
// terminates the process as usual. A job that leaves files behind when killed (convert's
// temporary output) also turns SIGTERM and SIGHUP into a cancellation, so it cleans up.
#include "cflow/base/cancel.h"

namespace cflow::cli {

enum class InterruptSignals {
    Interrupt,                 // SIGINT only: SIGTERM still ends generate/chat at once
    InterruptAndTermination,   // SIGINT, SIGTERM and (where it exists) SIGHUP
};

// Installs handlers that cancel `token` until the guard is destroyed, then restores the
// previous handlers. A signal the process ignores (SIGHUP under nohup) stays ignored.
class InterruptGuard {
public:
    explicit InterruptGuard(CancelToken& token, InterruptSignals signals = InterruptSignals::Interrupt);
    ~InterruptGuard();
    InterruptGuard(const InterruptGuard&) = delete;
    InterruptGuard& operator=(const InterruptGuard&) = delete;

private:
    static constexpr int kMaxSignals = 3;
    int signals_[kMaxSignals] = {};
    void (*previous_[kMaxSignals])(int) = {};
    int count_ = 0;
};

} // namespace cflow::cli
