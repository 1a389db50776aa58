#pragma once
// The process's peak resident memory, for `cflow bench` (platform parts in
// peak_rss_posix.cpp / peak_rss_win32.cpp).
#include <cstdint>

namespace cflow::cli {

// Peak resident set size of this process so far, in bytes; 0 when the OS does not say.
uint64_t peak_rss_bytes();

} // namespace cflow::cli
