#pragma once
// What a model is loaded as when the user does not say (`--load auto`, the desktop app, the server).
#include <functional>
#include <memory>
#include <string>

#include "cflow/engine/forward/model.h"

namespace cflow {

struct LoadChoice {
    LoadOptions options;
    std::string name;    // "lanes" or "map", as --load spells it
    std::string reason;  // one clause: why, for the stats line and the log
    bool automatic = false;  // chosen by choose_load_options, not named by the user
};

// The lanes layout (LoadOptions::lanes) where the selected kernel path walks it
// (Kernels::tile_matvec_quantized_lanes: AVX-512 VNNI today, where it decoded 5-21% and prefilled
// 18-45% faster than the file mapping on the same weights in alternating pairs, BENCHMARKS.md), the file fits in
// three quarters of the memory available now (the copy is anonymous: it cannot be evicted like
// the page cache), and the experts are not streamed from the file (sync/staged expert fetch
// exists to keep them out of memory); the zero-copy file mapping otherwise.
LoadChoice choose_load_options(const std::string& path, bool expertsReadFromFile);

// Model::load with `choice`; where the choice was automatic and the lanes copy ran out of memory
// (MemAvailable can shrink between the check and the copy), loads the file mapping instead and
// rewrites `choice` to say so. A choice the user named fails as named. A lanes load that kept no
// copy (Model::lanes_base() null: under half the file's tile bytes have a lanes layout, as in a
// K-quant model) is reported as the file mapping it is. `loader` is Model::load except in tests.
// Rewrites a lanes choice whose load kept no lanes copy as the file mapping it is, with the reason.
void note_no_lanes_copy(LoadChoice& choice);

using ModelLoader = std::function<Result<std::shared_ptr<const Model>>(const std::string&, const LoadOptions&)>;
Result<std::shared_ptr<const Model>> load_model(const std::string& path, LoadChoice& choice,
                                                const ModelLoader& loader = &Model::load);

} // namespace cflow
