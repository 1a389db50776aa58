#pragma once
// Builds a Model's lanes copy (LoadOptions::lanes; lanes_arena.cpp).
#include <cstdint>
#include <string>

#include "cflow/base/result.h"
#include "cflow/engine/forward/model.h"

namespace cflow {

// Reads the model's file a second time into anonymous memory, rearranging every matrix whose
// tiles fit the lanes layout, and records which segments and expert banks that covers.
Status build_lanes_arena(Model& model, const std::string& path);

// Where the lanes copy holds tile t of a segment (or expert bank) the model has in lanes.
inline const uint8_t* lanes_payload(const Model& model, const TileRef& t) {
    return model.lanes_base() + (t.payload - model.file().file().data());
}

// A lanes tile back in the file layout, for kernel paths without a lanes kernel: written into a
// buffer of the calling thread (grown once, so no allocation per matvec), valid until its next call.
const uint8_t* unpack_lanes_for_kernel(DType dtype, const uint8_t* lanes, uint32_t rows, uint32_t cols);

} // namespace cflow
