#include "../process_exit.h"

#include <cstdio>

#include <windows.h>

namespace cflow::studio {

int end_process(int status) {
    std::fflush(nullptr);  // every open stdio stream: the self-test's lines, a redirected log
    TerminateProcess(GetCurrentProcess(), static_cast<UINT>(status));
    return status;  // not reached: TerminateProcess on the current process does not return
}

} // namespace cflow::studio
