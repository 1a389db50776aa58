#pragma once
// Cancellation token shared between a long job (conversion, generation, model load) and whoever may cancel it.
#include <atomic>

namespace cflow {

struct CancelToken {
    std::atomic<bool> cancelled{false};
    void cancel() { cancelled.store(true, std::memory_order_relaxed); }
    bool is_cancelled() const { return cancelled.load(std::memory_order_relaxed); }
};

} // namespace cflow
