#pragma once
// Q4_0 / Q8_0 tile payloads with 16 rows in lanes: the layout LoadOptions::lanes rearranges a
// model's matrix tiles into while it reads them into memory, for the int8 kernels' decode walk.
//
// In the file's layout (tile_codec.h) a tile is [rows x G] f16 scales, then [rows x G] blocks,
// row-major; a kernel must sum each row's products across a vector and reduce it horizontally at
// the end of every tile. Here one 64-byte load holds 16 rows' weights at one 4-byte step, so
// vpdpbusd against one activation step broadcast to all lanes sums a whole block per row in its
// own int32 lane and no horizontal sum is needed (measured at 2.4x the row-major kernel's compute
// rate on L2-resident tiles: 29 vs 12 GB/s on a Xeon with AVX-512 VNNI).
//
// Layout, for each group of 16 rows (rg = 0 .. rows/16 - 1), rgBytes = G * 32 + G * W bytes:
//   scales [G][16] f16: the block scale of row rg*16 + lane for block g;
//   weights [G][W / 64][64 bytes]: chunk c of block g, lane l's 4 bytes at 4l:
//     Q4_0 (W = 256, 4 chunks): byte j has weight 8c + j of the block in its low nibble and weight
//          8c + 4 + j in its high nibble (nibble values as stored: q, not q - 8);
//     Q8_0 (W = 512, 8 chunks): byte j is weight 4c + j plus 128, as an unsigned byte.
// The byte count equals the file layout's (tile_payload_bytes), and the values are the same, so
// the int8 dot products are exact either way; only the order of f32 additions differs.
#include <cstddef>
#include <cstdint>

#include "cflow/formats/dtype.h"

namespace cflow {

inline constexpr uint32_t kLanesTileRows = 16;  // rows per lane group

// Tiles a lanes layout exists for: Q4_0 or Q8_0, rows a multiple of 16, whole 32-column blocks.
bool lanes_layout_supported(DType dtype, uint32_t rows, uint32_t cols);

// payload: the file layout, tile_payload_bytes(dtype, rows, cols) bytes; out: as many bytes, not
// overlapping payload. Only for lanes_layout_supported tiles.
void repack_tile_lanes(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, uint8_t* out);
// The inverse: the file layout back from the lanes layout (fallback paths, tests).
void unpack_tile_lanes(DType dtype, const uint8_t* lanes, uint32_t rows, uint32_t cols, uint8_t* out);

} // namespace cflow
