#include "io_uring_refused.h"

#include <thread>

#if defined(__linux__)
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#endif

namespace cflow::test {

bool run_with_io_uring_refused(const std::function<void()>& body, std::string& why) {
#if defined(__linux__) && defined(__NR_io_uring_setup)
    bool installed = false;
    std::thread worker([&] {
        sock_filter filter[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        sock_fprog program{static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
        // no_new_privs lets an unprivileged thread install a filter; it too binds only this thread.
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
            why = std::string("cannot install a seccomp filter: ") + std::strerror(errno);
            return;
        }
        installed = true;
        body();
    });
    worker.join();
    return installed;
#else
    (void)body;
    why = "seccomp filters are Linux-only";
    return false;
#endif
}

} // namespace cflow::test
