#pragma once
// This process's resident bytes now, for `cflow plan`'s figure of the process before a model
// (platform parts in plan_process_memory_posix.cpp / _win32.cpp). Not peak_rss_bytes(): on Linux
// getrusage's maximum is inherited through fork and exec, so a cflow started by a large parent
// (a Python harness, an IDE) would report the parent's size as its own.
#include <cstdint>

namespace cflow::cli {

// 0 when the OS does not say.
uint64_t plan_process_resident_bytes();

} // namespace cflow::cli
