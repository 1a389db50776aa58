#pragma once
// The order and size of tiles in a tiled segment, derived from geometry alone.
// Writer and reader both use this, so a file's layout is never guessed: the
// reader checks each segment's byte count and tile headers against the plan.
#include <cstdint>
#include <vector>

#include "cflow/formats/cflow_layout.h"
#include "cflow/base/result.h"

namespace cflow {

struct TilePart {
    MatrixId matrix;
    uint32_t rows;  // output rows of this matrix
    DType dtype;    // of this part's tiles (SegmentEntry::part_dtype)
};

// parts with every dtype set to `dtype` (a segment whose parts share one type).
std::vector<TilePart> with_dtype(std::vector<TilePart> parts, DType dtype);

struct PlannedTile {
    uint8_t part;         // index into the segment's parts
    uint32_t row_offset;  // first output row
    uint32_t col_offset;  // first input column
    uint16_t rows;        // <= kTileRows
    uint16_t cols;        // <= kTileCols
    uint64_t offset;      // byte offset of the TileHeader, relative to the segment start
    uint64_t bytes;       // header + payload
};

// Payload bytes of one tile (without its 16-byte header). Overflow-safe for tile-sized inputs.
uint64_t tile_payload_bytes(DType dtype, uint32_t rows, uint32_t cols);

// TileHeader::quant_group of a tile of this dtype: 32 (Q4_0, Q8_0), the ggml block's weights for
// ggml-block tiles (256 for super-blocks, 32 for Q4_1 / Q5_0 / Q5_1 / IQ4_NL), 0 (F32, F16).
inline uint16_t tile_quant_group(DType dtype) {
    return is_block_quant(dtype) ? static_cast<uint16_t>(kQuantGroup) : static_cast<uint16_t>(ggml_tile_block_weights(dtype));
}

// Groups of 32 per tile row for block-quantized types: ceil(cols / 32).
inline uint32_t groups_per_row(uint32_t cols) { return (cols + kQuantGroup - 1) / kQuantGroup; }

// Tiles in compute order: for each output stripe s = 0, 1, ...: for each part whose
// rows extend past s*128: the column tiles j = 0, 1, ... of that stripe; each part's tiles
// are sized by its dtype.
// Fails (with a message naming the offending dimension) when a dimension is 0,
// cols > 65,536 (column tiles start at multiples of 256 and col_offset is a u16, so the
// last addressable tile starts at 65,280), a part's dtype is not a tile type, a ggml-block
// part's cols is not a multiple of its block (256 or 32), or the total size overflows uint64.
Result<std::vector<PlannedTile>> plan_tiles(const std::vector<TilePart>& parts, uint32_t cols);

// Total bytes of a planned segment (sum of tile bytes).
uint64_t planned_bytes(const std::vector<PlannedTile>& tiles);

} // namespace cflow
