#pragma once
// Size of a tiled segment computed arithmetically from its geometry, without
// materialising the tile list. The reader checks a segment's byte count against this
// before it plans tiles, so a corrupt part_rows can never make it allocate a huge plan.
#include <cstdint>
#include <string>
#include <vector>

#include "cflow/base/result.h"
#include "cflow/formats/tile_plan.h"

namespace cflow::tile_geometry {

// Largest input dimension a TileHeader can address: col_offset is a u16 and column
// tiles start at multiples of 256, so the last tile starts at most at 65,280 and
// covers columns up to 65,536.
inline constexpr uint32_t kMaxCols = 65536;

struct SegmentSize {
    uint64_t n_tiles = 0;
    uint64_t bytes = 0;  // headers + payloads
};

// Bytes of one tile row's payload for a tile of `cols` columns.
uint64_t payload_bytes_per_row(DType dtype, uint32_t cols);

// Fails with a message naming the offending dimension (zero rows/cols, cols too wide,
// unknown tile dtype, ggml-block tile cols not whole blocks, size or tile count overflowing).
Result<SegmentSize> segment_size(const std::vector<TilePart>& parts, uint32_t cols);

} // namespace cflow::tile_geometry
