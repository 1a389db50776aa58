#pragma once
// What a model is loaded as when the user does not say (`--load auto`, the desktop app, the server).
#include <string>

#include "cflow/engine/forward/model.h"

namespace cflow {

struct LoadChoice {
    LoadOptions options;
    std::string name;    // "lanes" or "map", as --load spells it
    std::string reason;  // one clause: why, for the stats line and the log
};

// The lanes layout (LoadOptions::lanes) where the selected kernel path walks it
// (Kernels::tile_matvec_quantized_lanes: AVX-512 VNNI today, where it decoded 5-21% and prefilled
// 18-45% faster than the file mapping on the same weights in alternating pairs, BENCHMARKS.md), the file fits in
// three quarters of the memory available now (the copy is anonymous: it cannot be evicted like
// the page cache), and the experts are not streamed from the file (sync/staged expert fetch
// exists to keep them out of memory); the zero-copy file mapping otherwise.
LoadChoice choose_load_options(const std::string& path, bool expertsReadFromFile);

} // namespace cflow
