#pragma once
// Runs a function on a thread whose system calls pass a seccomp filter that refuses
// io_uring_setup with EPERM, as a container's default profile does: the one way to see the
// io_uring backend's fallback on a machine whose kernel allows io_uring. The filter binds only
// that thread (and threads it starts), not the test process. Linux only.
#include <functional>
#include <string>

namespace cflow::test {

// False, with the reason in `why`, where the filter cannot be installed (not Linux, or the
// kernel refuses seccomp); then `body` did not run.
bool run_with_io_uring_refused(const std::function<void()>& body, std::string& why);

} // namespace cflow::test
