#pragma once
// Sizes for the expert cache (SessionOptions::expert_cache_bytes).
#include <cstdint>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/io/system_memory.h"

namespace cflow {

// Bytes of all routed experts of the model (every layer's expert bank).
uint64_t expert_bank_bytes(const Model& model);

// "Fit to free memory": half of what the OS can give now, minus the model's resident bytes (the
// file less its expert banks: the dense weights, embeddings and tables a session keeps touching),
// capped at the whole bank (more caches nothing). Half, because the KV cache, the staging buffers,
// other programs and the page cache need the rest and MemAvailable moves. 0 when nothing is left
// or the OS does not say.
uint64_t expert_cache_fit_bytes(const Model& model, const SystemMemory& memory);

} // namespace cflow
