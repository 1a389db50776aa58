#pragma once
// Cancellation token shared between a long job (conversion, generation, perplexity, model load)
// and whoever may cancel it. A job that sees it set stops within one unit of work (a token, a
// tile row, a window) and returns cancelled_error() (ErrorKind::Cancelled); generation reports
// the counts of what it already delivered through its stats_so_far argument.
//
// Thread safety: cancel() and is_cancelled() may be called from any thread at any time.
// reset() re-arms the token for the next job; call it only while no job is using the token.
#include <atomic>

namespace cflow {

class CancelToken {
public:
    void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
    bool is_cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
    void reset() { cancelled_.store(false, std::memory_order_relaxed); }

private:
    std::atomic<bool> cancelled_{false};
};

} // namespace cflow
