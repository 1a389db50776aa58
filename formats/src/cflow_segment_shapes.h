#pragma once
// What each segment role must look like, derived from the GlobalHeader/ModelParams
// geometry alone. The converter builds its segments from these shapes and the reader
// checks every SegmentEntry against them, so writer and reader cannot drift apart.
#include <cstdint>
#include <string>
#include <vector>

#include "cflow/formats/cflow_layout.h"
#include "cflow/base/result.h"
#include "cflow/formats/tile_plan.h"

namespace cflow::segment_shapes {

enum class Storage : uint8_t { Raw, Tiled, ExpertBank };

struct SegmentShape {
    Storage storage = Storage::Raw;
    // Tiled: the parts and shared input dimension. ExpertBank: parts {ExpertGate eff,
    // ExpertUp eff, ExpertDown d} with cols = d (the down part's input dim is eff).
    // segment_shape() leaves the parts' dtypes F32: the SegmentEntry (reader) or the
    // conversion plan (writer) sets them.
    std::vector<TilePart> parts;
    uint32_t cols = 0;      // tiled: input dim; raw: 4-byte elements per row
    uint32_t raw_rows = 0;  // raw only
};

const char* role_name(SegmentRole role);
const char* matrix_name(MatrixId id);
bool is_vocab_role(SegmentRole role);

// Fails when the header's dimensions cannot describe the role (e.g. a u32 overflow).
Result<SegmentShape> segment_shape(const GlobalHeader& header, const ModelParams& params, SegmentRole role);

// The two plans of one expert inside an ExpertBank shape: gate/up interleaved, then down.
std::vector<TilePart> expert_gate_up_parts(const SegmentShape& bank);
std::vector<TilePart> expert_down_parts(const SegmentShape& bank);
// The input dimension of the down part: the gate/up parts' rows.
inline uint32_t expert_down_cols(const SegmentShape& bank) { return bank.parts[0].rows; }

struct SegmentBytes {
    uint64_t bytes = 0;
    uint64_t n_tiles = 0;
    uint64_t expert_gate_up_bytes = 0;  // ExpertBank: bytes of one expert's gate/up tiles
    uint64_t expert_bytes = 0;          // ExpertBank: bytes of one expert (gate/up + down)
};

// Bytes (and tiles) a segment of this shape (its parts' dtypes set) occupies; overflow-checked.
Result<SegmentBytes> segment_bytes(const GlobalHeader& header, const SegmentShape& shape);

} // namespace cflow::segment_shapes
