// Tile plan: the order and size of tiles in a tiled segment (stripe-interleaved).
#include "cflow/formats/tile_plan.h"

#include <algorithm>
#include <limits>
#include <new>
#include <string>

#include "checked_math.h"
#include "tile_geometry.h"

namespace cflow {
namespace tile_geometry {

uint64_t payload_bytes_per_row(DType dtype, uint32_t cols) {
    const uint64_t groups = groups_per_row(cols);
    switch (dtype) {
        case DType::F32: return uint64_t{4} * cols;
        case DType::F16: return uint64_t{2} * cols;
        case DType::Q8_0: return groups * (2 + 32);  // f16 scale + 32 x i8 per group
        case DType::Q4_0: return groups * (2 + 16);  // f16 scale + 16 nibble bytes per group
        case DType::BF16:
        case DType::GgmlBlock: break;
        default:
            // ggml-block tiles: the row's whole blocks (cols is a multiple of the block in a planned tile).
            if (const uint32_t weights = ggml_tile_block_weights(dtype))
                return (uint64_t{cols} + weights - 1) / weights * ggml_tile_block_bytes(dtype);
            break;
    }
    return 0;
}

Result<SegmentSize> segment_size(const std::vector<TilePart>& parts, uint32_t cols) {
    if (parts.empty()) return make_error("tiled segment has no parts");
    for (size_t p = 0; p < parts.size(); ++p) {
        const DType dtype = parts[p].dtype;
        if (!is_tile_dtype(dtype))
            return make_error(ErrorKind::Unsupported, "part " + std::to_string(p) + ": tile dtype " +
                                                          std::to_string(static_cast<unsigned>(dtype)) +
                                                          " is not a tile payload type");
        // Every tile row (256 columns, the last one cols % 256) must be whole ggml blocks.
        if (const uint32_t weights = ggml_tile_block_weights(dtype); weights && cols % weights != 0)
            return make_error("part " + std::to_string(p) + ": input dimension (cols) " + std::to_string(cols) +
                              " is not a multiple of " + std::to_string(weights) + ", as " + std::string(dtype_name(dtype)) +
                              (weights == kKQuantBlock ? " super-blocks need" : " blocks need"));
    }
    if (cols == 0) return make_error("input dimension (cols) is 0");
    if (cols > kMaxCols)
        return make_error("input dimension (cols) " + std::to_string(cols) + " exceeds " + std::to_string(kMaxCols) +
                          " (TileHeader.col_offset is 16-bit)");
    const uint64_t full_col_tiles = cols / kTileCols;
    const uint32_t edge_cols = cols % kTileCols;
    const uint64_t col_tiles = full_col_tiles + (edge_cols ? 1 : 0);

    SegmentSize total;
    for (size_t p = 0; p < parts.size(); ++p) {
        const uint32_t rows = parts[p].rows;
        if (rows == 0) return make_error("part " + std::to_string(p) + " has 0 output rows");
        // Every row of a part crosses each column tile once: row bytes are the same for all stripes.
        const uint64_t row_bytes = full_col_tiles * payload_bytes_per_row(parts[p].dtype, kTileCols) +
                                   (edge_cols ? payload_bytes_per_row(parts[p].dtype, edge_cols) : 0);
        const uint64_t stripes = (uint64_t{rows} + kTileRows - 1) / kTileRows;
        uint64_t tiles = 0, header_bytes = 0, payload = 0, part_bytes = 0;
        if (!checked::mul(stripes, col_tiles, &tiles) || !checked::mul(tiles, sizeof(TileHeader), &header_bytes) ||
            !checked::mul(rows, row_bytes, &payload) || !checked::add(header_bytes, payload, &part_bytes) ||
            !checked::add(total.bytes, part_bytes, &total.bytes) || !checked::add(total.n_tiles, tiles, &total.n_tiles))
            return make_error("segment size overflows 64 bits at part " + std::to_string(p) + " (" + std::to_string(rows) +
                              " rows x " + std::to_string(cols) + " cols)");
    }
    if (total.n_tiles > std::numeric_limits<uint32_t>::max())
        return make_error("segment would hold " + std::to_string(total.n_tiles) + " tiles, more than a u32 can count");
    return total;
}

} // namespace tile_geometry

uint64_t tile_payload_bytes(DType dtype, uint32_t rows, uint32_t cols) {
    // rows <= 128 and cols <= 65,536 for real tiles, but stay overflow-free for any u32 input.
    uint64_t bytes = 0;
    if (!checked::mul(rows, tile_geometry::payload_bytes_per_row(dtype, cols), &bytes))
        return std::numeric_limits<uint64_t>::max();
    return bytes;
}

std::vector<TilePart> with_dtype(std::vector<TilePart> parts, DType dtype) {
    for (TilePart& part : parts) part.dtype = dtype;
    return parts;
}

Result<std::vector<PlannedTile>> plan_tiles(const std::vector<TilePart>& parts, uint32_t cols) {
    auto size = tile_geometry::segment_size(parts, cols);
    if (!size) return size.take_error();
    if (parts.size() > 255) return make_error("tiled segment has more than 255 parts");

    uint32_t max_rows = 0;
    for (const TilePart& part : parts) max_rows = std::max(max_rows, part.rows);
    const uint64_t stripes = (uint64_t{max_rows} + kTileRows - 1) / kTileRows;

    std::vector<PlannedTile> tiles;
    try {
        tiles.reserve(static_cast<size_t>(size->n_tiles));
    } catch (const std::bad_alloc&) {
        return make_error(ErrorKind::OutOfMemory, "out of memory planning " + std::to_string(size->n_tiles) + " tiles");
    }
    uint64_t offset = 0;
    for (uint64_t s = 0; s < stripes; ++s) {
        const uint64_t row0 = s * kTileRows;
        for (size_t p = 0; p < parts.size(); ++p) {
            if (parts[p].rows <= row0) continue;  // this part has no rows left in stripe s
            const auto rows = static_cast<uint16_t>(std::min<uint64_t>(kTileRows, parts[p].rows - row0));
            for (uint32_t col0 = 0; col0 < cols; col0 += kTileCols) {  // cols <= 65,536: no wrap
                const auto tile_cols = static_cast<uint16_t>(std::min<uint32_t>(kTileCols, cols - col0));
                PlannedTile t;
                t.part = static_cast<uint8_t>(p);
                t.row_offset = static_cast<uint32_t>(row0);
                t.col_offset = col0;
                t.rows = rows;
                t.cols = tile_cols;
                t.offset = offset;
                t.bytes = sizeof(TileHeader) + tile_payload_bytes(parts[p].dtype, rows, tile_cols);
                offset += t.bytes;  // bounded by size->bytes, checked above
                tiles.push_back(t);
            }
        }
    }
    return tiles;
}

uint64_t planned_bytes(const std::vector<PlannedTile>& tiles) {
    uint64_t total = 0;
    for (const PlannedTile& t : tiles) total += t.bytes;
    return total;
}

} // namespace cflow
