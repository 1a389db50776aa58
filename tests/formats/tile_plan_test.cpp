// Tile plan: counts, sizes, stripe-interleaved order and rejection of bad geometry.
#include <gtest/gtest.h>

#include "cflow/formats/tile_plan.h"

namespace cflow {
namespace {

TEST(TilePlan, FullQ4Tile_Is18448BytesWithHeader) {
    // 16-byte header + 128*256/32 f16 scales (2,048 B) + 128*256/2 nibble bytes (16,384 B): the paper's 3.2.2 figure.
    EXPECT_EQ(tile_payload_bytes(DType::Q4_0, 128, 256), 2048u + 16384u);
    auto plan = plan_tiles({{MatrixId::O, 128}}, 256, DType::Q4_0);
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
    auto plan = plan_tiles({{MatrixId::Down, 300}}, 600, DType::Q8_0);
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
    auto plan = plan_tiles({{MatrixId::Q, 256}, {MatrixId::K, 64}, {MatrixId::V, 64}}, 300, DType::F16);
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
    auto zero_cols = plan_tiles({{MatrixId::Q, 8}}, 0, DType::F32);
    ASSERT_FALSE(zero_cols.ok());
    EXPECT_EQ(zero_cols.kind(), ErrorKind::InvalidInput) << zero_cols.error();
    EXPECT_NE(zero_cols.error().find("cols"), std::string::npos) << zero_cols.error();
    auto zero_rows = plan_tiles({{MatrixId::Q, 8}, {MatrixId::K, 0}}, 64, DType::F32);
    ASSERT_FALSE(zero_rows.ok());
    EXPECT_NE(zero_rows.error().find("part 1 has 0 output rows"), std::string::npos) << zero_rows.error();
    EXPECT_FALSE(plan_tiles({}, 64, DType::F32).ok());
}

TEST(TilePlan, RejectsColumnsBeyondU16Offsets) {
    // The last column tile of 65,536 inputs starts at 65,280: still addressable.
    EXPECT_TRUE(plan_tiles({{MatrixId::Q, 1}}, 65536, DType::Q4_0).ok());
    auto wide = plan_tiles({{MatrixId::Q, 1}}, 65537, DType::Q4_0);
    ASSERT_FALSE(wide.ok());
    EXPECT_NE(wide.error().find("65537"), std::string::npos) << wide.error();
    EXPECT_NE(wide.error().find("col_offset"), std::string::npos) << wide.error();
    EXPECT_FALSE(plan_tiles({{MatrixId::Q, 1}}, 65791, DType::Q4_0).ok());
}

TEST(TilePlan, RejectsTileCountOverflowWithoutAllocating) {
    // 4 parts x 2^32-1 rows x 65,536 cols: 2^25 stripes x 256 column tiles x 4 parts > 2^32 tiles.
    const uint32_t rows = 0xFFFFFFFFu;
    auto huge = plan_tiles({{MatrixId::Q, rows}, {MatrixId::K, rows}, {MatrixId::V, rows}, {MatrixId::O, rows}}, 65536,
                           DType::F32);
    ASSERT_FALSE(huge.ok());
    EXPECT_EQ(huge.kind(), ErrorKind::InvalidInput) << huge.error();  // refused up front, not an OutOfMemory
    EXPECT_NE(huge.error().find("tiles"), std::string::npos) << huge.error();
}

TEST(TilePlan, NonTileDtypeIsUnsupported) {
    auto bf16 = plan_tiles({{MatrixId::Q, 8}}, 64, DType::BF16);
    ASSERT_FALSE(bf16.ok());
    EXPECT_EQ(bf16.kind(), ErrorKind::Unsupported) << bf16.error();
}

TEST(TilePlan, RejectsNonTileDtype) { EXPECT_FALSE(plan_tiles({{MatrixId::Q, 8}}, 64, DType::BF16).ok()); }

} // namespace
} // namespace cflow
