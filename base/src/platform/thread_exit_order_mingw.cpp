// mingw-w64's GCC 12 (emulated TLS on winpthreads) runs a thread's thread_local destructors after
// it has freed that thread's thread_local storage: both happen in pthread key destructors, called
// in key order, and emutls creates its key at the first thread_local access, before libstdc++'s
// __cxa_thread_atexit creates the key of its destructor list. So every thread_local with a
// destructor (the Jinja renderer's t_pending_release, lanes_arena's buffer) was destroyed in freed
// memory when a thread ended: the server's request threads, which render chat templates, end at
// stop, and the Windows server suite crashed there (a 64-byte probe lost 8 bytes to the heap's
// free list before its destructor ran, in a 20-line reproduction under wine).
// Registering one no-op thread-exit destructor before any thread_local is touched creates
// libstdc++'s key first, so destructors run while the storage is still there. cflow_base links
// this object into every executable (base/CMakeLists.txt: --undefined=anchor).
#if defined(__MINGW32__) && !defined(__clang__)
#include <cxxabi.h>

extern "C" {
// Referenced by the linker option so this object is taken from the static library.
extern const int cflow_thread_exit_order_anchor;
const int cflow_thread_exit_order_anchor = 1;
}

namespace {

void thread_exit_order_noop(void*) {}

struct ThreadExitOrderFirst {
    ThreadExitOrderFirst() { (void)__cxxabiv1::__cxa_thread_atexit(thread_exit_order_noop, nullptr, nullptr); }
};

// Priority 101: before every ordinary static initializer, which may touch a thread_local.
__attribute__((init_priority(101))) ThreadExitOrderFirst thread_exit_order_first;

} // namespace
#endif
