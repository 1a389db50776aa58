#include "interrupt.h"

#include <atomic>
#include <csignal>

namespace cflow::cli {
namespace {
// A signal handler can only reach process-wide state; this is the one place that holds it.
std::atomic<CancelToken*> g_interrupt_target{nullptr};

extern "C" void on_sigint(int) {
    if (CancelToken* t = g_interrupt_target.load()) {
        t->cancel();
        g_interrupt_target.store(nullptr);
        std::signal(SIGINT, SIG_DFL);
    }
}
} // namespace

InterruptGuard::InterruptGuard(CancelToken& token) {
    g_interrupt_target.store(&token);
    std::signal(SIGINT, on_sigint);
}

InterruptGuard::~InterruptGuard() {
    g_interrupt_target.store(nullptr);
    std::signal(SIGINT, SIG_DFL);
}

} // namespace cflow::cli
