#include "interrupt.h"

#include <atomic>
#include <csignal>

namespace cflow::cli {
namespace {
// A signal handler can only reach process-wide state; this is the one place that holds it.
std::atomic<CancelToken*> g_interrupt_target{nullptr};

// The first signal cancels the job (it then winds down and removes what it was writing); a
// second one, of any of the installed kinds, ends the process the default way.
extern "C" void on_signal(int sig) {
    std::signal(sig, SIG_DFL);
    if (CancelToken* t = g_interrupt_target.exchange(nullptr))
        t->cancel();
    else
        std::raise(sig);
}
} // namespace

InterruptGuard::InterruptGuard(CancelToken& token, InterruptSignals signals) {
    g_interrupt_target.store(&token);
    signals_[count_++] = SIGINT;
    if (signals == InterruptSignals::InterruptAndTermination) {
        signals_[count_++] = SIGTERM;
#ifdef SIGHUP
        signals_[count_++] = SIGHUP;
#endif
    }
    for (int i = 0; i < count_; ++i) {
        previous_[i] = std::signal(signals_[i], on_signal);
        if (previous_[i] == SIG_IGN) std::signal(signals_[i], SIG_IGN);  // nohup's SIGHUP stays ignored
    }
}

InterruptGuard::~InterruptGuard() {
    g_interrupt_target.store(nullptr);
    for (int i = 0; i < count_; ++i) std::signal(signals_[i], previous_[i] == SIG_ERR ? SIG_DFL : previous_[i]);
}

} // namespace cflow::cli
