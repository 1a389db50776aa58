#pragma once
// Ctrl-C handling for long CLI jobs: the first SIGINT cancels the job's token, the second
// terminates the process as usual.
#include "cflow/base/cancel.h"

namespace cflow::cli {

// Installs a SIGINT handler that cancels `token` until the returned guard is destroyed.
class InterruptGuard {
public:
    explicit InterruptGuard(CancelToken& token);
    ~InterruptGuard();
    InterruptGuard(const InterruptGuard&) = delete;
    InterruptGuard& operator=(const InterruptGuard&) = delete;
};

} // namespace cflow::cli
