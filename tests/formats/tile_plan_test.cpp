// Tile plan: counts, sizes, stripe-interleaved order and rejection of bad geometry.
#include <gtest/gtest.h>

#include "cflow/formats/ggml_blocks.h"
#include "cflow/formats/tile_plan.h"

namespace cflow {
namespace {

TEST(TilePlan, FullQ4Tile_Is18448BytesWithHeader) {
    // 16-byte header + 128*256/32 f16 scales (2,048 B) + 128*256/2 nibble bytes (16,384 B): the paper's 3.2.2 figure.
    EXPECT_EQ(tile_payload_bytes(DType::Q4_0, 128, 256), 2048u + 16384u);
    auto plan = plan_tiles(with_dtype({{MatrixId::O, 128}}, DType::Q4_0), 256);
    ASSERT_TRUE(plan.ok()) << plan.error();
    ASSERT_EQ(plan->size(), 1u);
    EXPECT_EQ((*plan)[0].bytes, 18448u);
    EXPECT_EQ(planned_bytes(*plan), 18448u);
}

TEST(TilePlan, PayloadBytesPerDtype) {
    EXPECT_EQ(tile_payload_bytes(DType::F32, 3, 5), 3u * 5 * 4);
    EXPECT_EQ(tile_payload_bytes(DType::F16, 3, 5), 3u * 5 * 2);
    // 40 columns = 2 groups (one partial, padded): Q8_0 2+32 B per group, Q4_0 2+16 B per group.
    EXPECT_EQ(tile_payload_bytes(DType::Q8_0, 3, 40), 3u * 2 * 34);
    EXPECT_EQ(tile_payload_bytes(DType::Q4_0, 3, 40), 3u * 2 * 18);
    EXPECT_EQ(groups_per_row(1), 1u);
    EXPECT_EQ(groups_per_row(32), 1u);
    EXPECT_EQ(groups_per_row(33), 2u);
}

TEST(TilePlan, EdgeTilesAreSmallerAndOffsetsContiguous) {
    // 300 x 600: stripes of 128,128,44 rows; column tiles of 256,256,88.
    auto plan = plan_tiles(with_dtype({{MatrixId::Down, 300}}, DType::Q8_0), 600);
    ASSERT_TRUE(plan.ok()) << plan.error();
    ASSERT_EQ(plan->size(), 9u);
    const PlannedTile& last = plan->back();
    EXPECT_EQ(last.row_offset, 256u);
    EXPECT_EQ(last.col_offset, 512u);
    EXPECT_EQ(last.rows, 44u);
    EXPECT_EQ(last.cols, 88u);
    EXPECT_EQ(last.bytes, 16u + tile_payload_bytes(DType::Q8_0, 44, 88));
    uint64_t offset = 0;
    for (const PlannedTile& t : *plan) {
        EXPECT_EQ(t.offset, offset);
        offset += t.bytes;
    }
    EXPECT_EQ(planned_bytes(*plan), offset);
}

TEST(TilePlan, StripeInterleavedOrderAcrossParts) {
    // Q has 256 rows (2 stripes), K and V have 64 rows (1 stripe); cols 300 -> 2 column tiles.
    auto plan = plan_tiles(with_dtype({{MatrixId::Q, 256}, {MatrixId::K, 64}, {MatrixId::V, 64}}, DType::F16), 300);
    ASSERT_TRUE(plan.ok()) << plan.error();
    struct Expected {
        uint8_t part;
        uint32_t row, col;
        uint16_t rows, cols;
    };
    const Expected expected[] = {
        {0, 0, 0, 128, 256},   {0, 0, 256, 128, 44}, {1, 0, 0, 64, 256}, {1, 0, 256, 64, 44},
        {2, 0, 0, 64, 256},    {2, 0, 256, 64, 44},  {0, 128, 0, 128, 256}, {0, 128, 256, 128, 44},
    };
    ASSERT_EQ(plan->size(), std::size(expected));
    for (size_t i = 0; i < plan->size(); ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ((*plan)[i].part, expected[i].part);
        EXPECT_EQ((*plan)[i].row_offset, expected[i].row);
        EXPECT_EQ((*plan)[i].col_offset, expected[i].col);
        EXPECT_EQ((*plan)[i].rows, expected[i].rows);
        EXPECT_EQ((*plan)[i].cols, expected[i].cols);
    }
}

TEST(TilePlan, RejectsZeroDimensions) {
    auto zero_cols = plan_tiles(with_dtype({{MatrixId::Q, 8}}, DType::F32), 0);
    ASSERT_FALSE(zero_cols.ok());
    EXPECT_EQ(zero_cols.kind(), ErrorKind::InvalidInput) << zero_cols.error();
    EXPECT_NE(zero_cols.error().find("cols"), std::string::npos) << zero_cols.error();
    auto zero_rows = plan_tiles(with_dtype({{MatrixId::Q, 8}, {MatrixId::K, 0}}, DType::F32), 64);
    ASSERT_FALSE(zero_rows.ok());
    EXPECT_NE(zero_rows.error().find("part 1 has 0 output rows"), std::string::npos) << zero_rows.error();
    EXPECT_FALSE(plan_tiles(with_dtype({}, DType::F32), 64).ok());
}

TEST(TilePlan, RejectsColumnsBeyondU16Offsets) {
    // The last column tile of 65,536 inputs starts at 65,280: still addressable.
    EXPECT_TRUE(plan_tiles(with_dtype({{MatrixId::Q, 1}}, DType::Q4_0), 65536).ok());
    auto wide = plan_tiles(with_dtype({{MatrixId::Q, 1}}, DType::Q4_0), 65537);
    ASSERT_FALSE(wide.ok());
    EXPECT_NE(wide.error().find("65537"), std::string::npos) << wide.error();
    EXPECT_NE(wide.error().find("col_offset"), std::string::npos) << wide.error();
    EXPECT_FALSE(plan_tiles(with_dtype({{MatrixId::Q, 1}}, DType::Q4_0), 65791).ok());
}

TEST(TilePlan, RejectsTileCountOverflowWithoutAllocating) {
    // 4 parts x 2^32-1 rows x 65,536 cols: 2^25 stripes x 256 column tiles x 4 parts > 2^32 tiles.
    const uint32_t rows = 0xFFFFFFFFu;
    auto huge = plan_tiles(with_dtype({{MatrixId::Q, rows}, {MatrixId::K, rows}, {MatrixId::V, rows}, {MatrixId::O, rows}},
                           DType::F32), 65536);
    ASSERT_FALSE(huge.ok());
    EXPECT_EQ(huge.kind(), ErrorKind::InvalidInput) << huge.error();  // refused up front, not an OutOfMemory
    EXPECT_NE(huge.error().find("tiles"), std::string::npos) << huge.error();
}

TEST(TilePlan, NonTileDtypeIsUnsupported) {
    auto bf16 = plan_tiles(with_dtype({{MatrixId::Q, 8}}, DType::BF16), 64);
    ASSERT_FALSE(bf16.ok());
    EXPECT_EQ(bf16.kind(), ErrorKind::Unsupported) << bf16.error();
}

TEST(TilePlan, KQuantTileRowIsOneSuperBlock) {
    // One ggml super-block (256 weights) per tile row, bytes as GGUF stores them.
    EXPECT_EQ(tile_payload_bytes(DType::Q4_K, 128, 256), 128u * 144);
    EXPECT_EQ(tile_payload_bytes(DType::Q5_K, 7, 256), 7u * 176);
    EXPECT_EQ(tile_payload_bytes(DType::Q6_K, 1, 256), 210u);
    EXPECT_EQ(tile_quant_group(DType::Q6_K), 256u);
    EXPECT_EQ(tile_quant_group(DType::Q4_0), 32u);
    EXPECT_EQ(tile_quant_group(DType::F16), 0u);
}

TEST(TilePlan, MixedPartDtypesSizeEachPartByItsOwnType) {
    // Q4_K_M's attention: Q and K in Q4_K, V in Q6_K, one fused segment; 512 cols = 2 column tiles.
    const std::vector<TilePart> parts{{MatrixId::Q, 256, DType::Q4_K}, {MatrixId::K, 64, DType::Q4_K},
                                      {MatrixId::V, 64, DType::Q6_K}};
    auto plan = plan_tiles(parts, 512);
    ASSERT_TRUE(plan.ok()) << plan.error();
    ASSERT_EQ(plan->size(), 2u * (2 + 1 + 1));
    uint64_t expected = 0;
    for (const PlannedTile& t : *plan) {
        SCOPED_TRACE(t.offset);
        EXPECT_EQ(t.cols, 256u);
        EXPECT_EQ(t.bytes, 16u + tile_payload_bytes(parts[t.part].dtype, t.rows, t.cols));
        expected += t.bytes;
    }
    EXPECT_EQ(expected, 16u * 8 + 2 * (256u * 144 + 64u * 144 + 64u * 210));
    EXPECT_EQ(planned_bytes(*plan), expected);
}

TEST(TilePlan, KQuantNeedsWholeSuperBlocksPerRow) {
    // 300 columns would leave a 44-column edge tile: no K-quant block covers it.
    auto plan = plan_tiles({{MatrixId::Q, 8, DType::Q4_0}, {MatrixId::V, 8, DType::Q5_K}}, 300);
    ASSERT_FALSE(plan.ok());
    EXPECT_NE(plan.error().find("part 1: input dimension (cols) 300 is not a multiple of 256, as q5_k super-blocks need"),
              std::string::npos)
        << plan.error();
    EXPECT_TRUE(plan_tiles({{MatrixId::Q, 8, DType::Q4_0}, {MatrixId::V, 8, DType::Q5_K}}, 768).ok());
}

// The other ggml-block tiles: a tile row's payload is the bytes of 256 weights of the type
// (ggml-common.h block sizes), cross-checked against the ggml block table the GGUF reader uses.
TEST(TilePlan, GgmlTileRowIsBytesPer256Weights) {
    struct Expect {
        DType dtype;
        uint32_t per256;  // bytes of one full tile row
        uint16_t group;   // TileHeader::quant_group: weights per block
    };
    const Expect cases[] = {{DType::Q2_K, 84, 256},  {DType::Q3_K, 110, 256}, {DType::IQ4_XS, 136, 256},
                            {DType::Q4_1, 160, 32},  {DType::Q5_0, 176, 32},  {DType::Q5_1, 192, 32},
                            {DType::IQ4_NL, 144, 32}};
    for (const Expect& e : cases) {
        SCOPED_TRACE(std::string(dtype_name(e.dtype)));
        EXPECT_TRUE(is_tile_dtype(e.dtype));
        EXPECT_TRUE(is_ggml_tile(e.dtype));
        EXPECT_FALSE(is_kquant(e.dtype));              // no int8 kernels, no quantiser
        EXPECT_FALSE(is_quantisation_target(e.dtype));
        EXPECT_EQ(ggml_tile_bytes_per_256(e.dtype), e.per256);
        EXPECT_EQ(tile_payload_bytes(e.dtype, 128, 256), 128u * e.per256);
        EXPECT_EQ(tile_payload_bytes(e.dtype, 7, 256), 7u * e.per256);
        EXPECT_EQ(tile_quant_group(e.dtype), e.group);
        const GgmlBlockType* block = find_ggml_block_type(ggml_tile_ggml_type(e.dtype));
        ASSERT_NE(block, nullptr);
        EXPECT_EQ(block->block_elements, ggml_tile_block_weights(e.dtype));
        EXPECT_EQ(block->block_bytes, ggml_tile_block_bytes(e.dtype));
        EXPECT_EQ(parse_dtype(dtype_name(e.dtype)), e.dtype);
    }
    // The K-quants keep their sizes and stay quantisation targets.
    for (DType k : {DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
        EXPECT_EQ(ggml_tile_bytes_per_256(k), kquant_block_bytes(k));
        EXPECT_EQ(ggml_tile_ggml_type(k), kquant_ggml_type(k));
        EXPECT_TRUE(is_quantisation_target(k));
    }
    EXPECT_FALSE(is_tile_dtype(static_cast<DType>(17)));
    EXPECT_EQ(ggml_tile_bytes_per_256(DType::Q4_0), 0u);  // Q4_0 tiles have their own split layout
}

// A 32-weight-block part keeps widths that are not whole 256-column tiles: the edge tile's rows
// hold (cols % 256) / 32 blocks. Widths that are not whole 32-weight blocks are refused.
TEST(TilePlan, ThirtyTwoWeightBlockTypesKeepEdgeTiles) {
    const std::vector<TilePart> parts{{MatrixId::Q, 130, DType::Q5_0}, {MatrixId::V, 8, DType::IQ4_NL}};
    auto plan = plan_tiles(parts, 288);  // one full column tile, one 32-column edge tile
    ASSERT_TRUE(plan.ok()) << plan.error();
    ASSERT_EQ(plan->size(), 2u * (2 + 1));  // stripes 0 and 1 of Q, stripe 0 of V; two column tiles each
    uint64_t total = 0;
    for (const PlannedTile& t : *plan) {
        const uint32_t block_bytes = ggml_tile_block_bytes(parts[t.part].dtype);
        EXPECT_EQ(t.bytes, 16u + uint64_t{t.rows} * (t.cols / 32) * block_bytes);
        total += t.bytes;
    }
    EXPECT_EQ(total, 6 * 16u + 130u * 9 * 22 + 8u * 9 * 18);  // 9 blocks per 288-weight row
    EXPECT_EQ(planned_bytes(*plan), total);

    auto odd = plan_tiles({{MatrixId::Q, 8, DType::Q4_1}}, 300);
    ASSERT_FALSE(odd.ok());
    EXPECT_NE(odd.error().find("part 0: input dimension (cols) 300 is not a multiple of 32, as q4_1 blocks need"),
              std::string::npos)
        << odd.error();
    for (DType super : {DType::Q2_K, DType::Q3_K, DType::IQ4_XS}) {
        auto refused = plan_tiles({{MatrixId::Q, 8, super}}, 288);
        ASSERT_FALSE(refused.ok()) << dtype_name(super);
        EXPECT_NE(refused.error().find("is not a multiple of 256, as " + std::string(dtype_name(super)) + " super-blocks need"),
                  std::string::npos)
            << refused.error();
    }
}

TEST(TilePlan, RejectsNonTileDtype) { EXPECT_FALSE(plan_tiles(with_dtype({{MatrixId::Q, 8}}, DType::BF16), 64).ok()); }

} // namespace
} // namespace cflow
