// The lanes layout (lanes_layout.h), written and read back with plain loops: it runs once per
// tile at load, and this code is the specification the tests hold the SIMD kernels to.
#include "cflow/engine/kernels/lanes_layout.h"

#include <cstring>

#include "cflow/formats/tile_plan.h"

namespace cflow {
namespace {

constexpr uint32_t kChunkBytes = 64;  // one zmm: 16 lanes x 4 bytes

uint32_t block_bytes(DType dtype) { return dtype == DType::Q4_0 ? kQuantGroup / 2 : kQuantGroup; }

// Bytes of one lane group's weights for one block: 16 rows' blocks.
uint32_t lane_block_bytes(DType dtype) { return kLanesTileRows * block_bytes(dtype); }

// Little-endian 4-byte words (byte j of the word is byte j in memory; x86, the only host with kernels).
uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}
void store_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, sizeof(v)); }

// Walks every (row, block, weight byte position) once and hands the matching byte addresses of
// both layouts to `visit(fileScale, lanesScale, fileBlock, lanesRowBlock)`.
template <class Visit>
void for_each_block(DType dtype, uint32_t rows, uint32_t cols, Visit&& visit) {
    const uint32_t groups = groups_per_row(cols);
    const size_t fileScalesBytes = size_t(rows) * groups * sizeof(uint16_t);  // [rows x G] f16
    const size_t rgBytes = size_t(groups) * (kLanesTileRows * sizeof(uint16_t) + lane_block_bytes(dtype));
    for (uint32_t r = 0; r < rows; ++r) {
        const uint32_t rg = r / kLanesTileRows, lane = r % kLanesTileRows;
        for (uint32_t g = 0; g < groups; ++g) {
            const size_t fileScale = (size_t(r) * groups + g) * sizeof(uint16_t);
            const size_t fileBlock = fileScalesBytes + (size_t(r) * groups + g) * block_bytes(dtype);
            const size_t lanesBase = size_t(rg) * rgBytes;
            const size_t lanesScale = lanesBase + (size_t(g) * kLanesTileRows + lane) * sizeof(uint16_t);
            const size_t lanesWeights = lanesBase + size_t(groups) * kLanesTileRows * sizeof(uint16_t) +
                                        size_t(g) * lane_block_bytes(dtype);
            visit(fileScale, lanesScale, fileBlock, lanesWeights, lane);
        }
    }
}

} // namespace

bool lanes_layout_supported(DType dtype, uint32_t rows, uint32_t cols) {
    return (dtype == DType::Q4_0 || dtype == DType::Q8_0) && rows > 0 && rows % kLanesTileRows == 0 && cols > 0 &&
           cols % kQuantGroup == 0;
}

void repack_tile_lanes(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, uint8_t* out) {
    for_each_block(dtype, rows, cols, [&](size_t fileScale, size_t lanesScale, size_t fileBlock, size_t lanesWeights, uint32_t lane) {
        std::memcpy(out + lanesScale, payload + fileScale, sizeof(uint16_t));
        const uint8_t* block = payload + fileBlock;
        uint8_t* chunks = out + lanesWeights;  // [chunks][64]
        // Four bytes at a time (a load pass over the whole model). With w(i) weight i of the block
        // as stored (Q4_0: i < 16 the low nibble of byte i, else the high nibble of byte i - 16;
        // Q8_0: byte i + 128 as unsigned), byte j of chunk c is w(8c + j) | w(8c + 4 + j) << 4
        // for Q4_0 and w(4c + j) for Q8_0, as unpack_tile_lanes reads them back byte by byte.
        if (dtype == DType::Q4_0) {
            for (uint32_t c = 0; c < 4; ++c) {
                const uint32_t at = c < 2 ? 8 * c : 8 * c - 16;  // weights 16..31 are the high nibbles of bytes 0..15
                const uint32_t shift = c < 2 ? 0 : 4;
                const uint32_t low = (load_u32(block + at) >> shift) & 0x0F0F0F0Fu;
                const uint32_t high = (load_u32(block + at + 4) >> shift) & 0x0F0F0F0Fu;
                store_u32(chunks + c * kChunkBytes + 4 * lane, low | (high << 4));
            }
        } else {
            for (uint32_t c = 0; c < 8; ++c) store_u32(chunks + c * kChunkBytes + 4 * lane, load_u32(block + 4 * c) ^ 0x80808080u);
        }
    });
}

void unpack_tile_lanes(DType dtype, const uint8_t* lanes, uint32_t rows, uint32_t cols, uint8_t* out) {
    for_each_block(dtype, rows, cols, [&](size_t fileScale, size_t lanesScale, size_t fileBlock, size_t lanesWeights, uint32_t lane) {
        std::memcpy(out + fileScale, lanes + lanesScale, sizeof(uint16_t));
        uint8_t* block = out + fileBlock;
        const uint8_t* chunks = lanes + lanesWeights;
        if (dtype == DType::Q4_0) {
            uint8_t w[kQuantGroup];
            for (uint32_t c = 0; c < 4; ++c)
                for (uint32_t j = 0; j < 4; ++j) {
                    const uint8_t b = chunks[c * kChunkBytes + 4 * lane + j];
                    w[8 * c + j] = b & 0x0F;
                    w[8 * c + 4 + j] = b >> 4;
                }
            for (uint32_t i = 0; i < 16; ++i) block[i] = static_cast<uint8_t>(w[i] | (w[i + 16] << 4));
        } else {
            for (uint32_t c = 0; c < 8; ++c)
                for (uint32_t j = 0; j < 4; ++j) block[4 * c + j] = static_cast<uint8_t>(chunks[c * kChunkBytes + 4 * lane + j] ^ 0x80u);
        }
    });
}

} // namespace cflow
