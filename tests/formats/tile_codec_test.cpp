// Tile codec: f16 conversions at the edges, ggml-exact Q4_0/Q8_0 rounding on
// hand-computed blocks, and encode/decode round trips with their error bounds.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cflow/formats/tile_codec.h"
#include "cflow/formats/tile_plan.h"

namespace cflow {
namespace {

TEST(TileCodec, F16EdgeValues) {
    EXPECT_EQ(f32_to_f16(0.0f), 0x0000);
    EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
    EXPECT_EQ(f32_to_f16(1.0f), 0x3C00);
    EXPECT_EQ(f32_to_f16(-2.0f), 0xC000);
    EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);                              // largest finite
    EXPECT_EQ(f32_to_f16(65519.99f), 0x7BFF);                             // still rounds down
    EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);                              // tie rounds to even: infinity
    EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7C00);
    EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::infinity()), 0xFC00);
    const uint16_t nan = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
    EXPECT_EQ(nan & 0x7C00, 0x7C00);
    EXPECT_NE(nan & 0x03FF, 0);
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14)), 0x0400);   // smallest normal
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);   // smallest subnormal
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);   // half of it: tie to even (0)
    EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -24)), 0x0002);   // 1.5 ulp: tie to even (2)
    EXPECT_EQ(f32_to_f16(std::ldexp(2.5f, -24)), 0x0002);   // 2.5 ulp: tie to even (2)
    EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);   // 1.5 ulp again via another exponent
    // 1 + 2^-11 is exactly half way between 1 and the next f16: ties to even (1.0).
    EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
    EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie between 0x3C01 and 0x3C02 -> even
    EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);  // above the tie
    // Subnormal that rounds up into the smallest normal.
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)), 0x0400);

    EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(f16_to_f32(0x03FF), std::ldexp(1023.0f, -24));
    EXPECT_EQ(f16_to_f32(0x7BFF), 65504.0f);
    EXPECT_TRUE(std::isinf(f16_to_f32(0x7C00)));
    EXPECT_TRUE(std::isnan(f16_to_f32(0x7E00)));
    EXPECT_TRUE(std::signbit(f16_to_f32(0x8000)));
    EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
    EXPECT_EQ(bf16_to_f32(0xC040), -3.0f);
}

TEST(TileCodec, F16RoundTripsEveryFiniteHalf) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        if ((h & 0x7C00) == 0x7C00) continue;  // inf / nan
        const auto bits = static_cast<uint16_t>(h);
        ASSERT_EQ(f32_to_f16(f16_to_f32(bits)), bits) << std::hex << h;
    }
}

TEST(TileCodec, ConvertToF32) {
    const uint16_t halves[3] = {0x3C00, 0xC000, 0x3800};  // 1, -2, 0.5
    const uint16_t bf16[2] = {0x3F80, 0x4040};            // 1, 3
    const float f32[2] = {1.25f, -7.5f};
    float out[3];
    convert_to_f32(DType::F16, reinterpret_cast<const uint8_t*>(halves), 3, out);
    EXPECT_EQ(out[0], 1.0f);
    EXPECT_EQ(out[1], -2.0f);
    EXPECT_EQ(out[2], 0.5f);
    convert_to_f32(DType::BF16, reinterpret_cast<const uint8_t*>(bf16), 2, out);
    EXPECT_EQ(out[0], 1.0f);
    EXPECT_EQ(out[1], 3.0f);
    convert_to_f32(DType::F32, reinterpret_cast<const uint8_t*>(f32), 2, out);
    EXPECT_EQ(out[0], 1.25f);
    EXPECT_EQ(out[1], -7.5f);
}

// Hand-computed ggml Q4_0: the element of largest magnitude m gives d = m / -8.
TEST(TileCodec, Q4RoundingMatchesGgmlWhenMaxIsNegative) {
    float x[32] = {};
    x[0] = -8.0f;  // max magnitude, negative: d = 1, id = 1
    x[1] = 3.0f;   // 3 + 8.5 = 11.5 -> 11
    x[2] = -2.6f;  // -2.6 + 8.5 = 5.9 -> 5 (truncation, as ggml)
    x[3] = 7.9f;   // 16.4 -> 16 -> clamped to 15
    x[16] = 0.49f; // 8.99 -> 8
    x[17] = -0.5f; // 8.0 -> 8
    x[31] = 1.5f;  // 10.0 -> 10
    uint16_t scale = 0;
    uint8_t q[16];
    quantize_block_q4_0(x, &scale, q);
    EXPECT_EQ(scale, f32_to_f16(1.0f));
    EXPECT_EQ(q[0] & 0x0F, 0);       // -8 -> 0
    EXPECT_EQ(q[1] & 0x0F, 11);
    EXPECT_EQ(q[2] & 0x0F, 5);
    EXPECT_EQ(q[3] & 0x0F, 15);
    EXPECT_EQ(q[4] & 0x0F, 8);       // zeros -> 8
    EXPECT_EQ(q[0] >> 4, 8);         // x[16]
    EXPECT_EQ(q[1] >> 4, 8);         // x[17]
    EXPECT_EQ(q[15] >> 4, 10);       // x[31]
}

TEST(TileCodec, Q4RoundingMatchesGgmlWhenMaxIsPositive) {
    float x[32] = {};
    x[5] = 4.0f;    // max magnitude, positive: d = -0.5, id = -2
    x[6] = -4.0f;   // -4 * -2 + 8.5 = 16.5 -> 16 -> 15 (the asymmetric end ggml clips)
    x[7] = 1.0f;    // -2 + 8.5 = 6.5 -> 6
    x[20] = -1.2f;  // 2.4 + 8.5 = 10.9 -> 10
    uint16_t scale = 0;
    uint8_t q[16];
    quantize_block_q4_0(x, &scale, q);
    EXPECT_EQ(scale, f32_to_f16(-0.5f));
    EXPECT_EQ(q[5] & 0x0F, 0);   // 4 * -2 + 8.5 = 0.5 -> 0: value -0.5 * (0 - 8) = 4 exactly
    EXPECT_EQ(q[6] & 0x0F, 15);  // decodes to -0.5 * 7 = -3.5
    EXPECT_EQ(q[7] & 0x0F, 6);
    EXPECT_EQ(q[4] >> 4, 10);    // x[20]
    EXPECT_EQ(q[0] & 0x0F, 8);
}

TEST(TileCodec, Q8RoundingMatchesGgml) {
    float x[32] = {};
    x[0] = 127.0f;  // d = 1
    x[1] = -2.5f;   // roundf: half away from zero -> -3
    x[2] = 2.5f;    // -> 3
    x[3] = 0.49f;   // -> 0
    x[4] = -127.0f;
    uint16_t scale = 0;
    int8_t q[32];
    quantize_block_q8_0(x, &scale, q);
    EXPECT_EQ(scale, f32_to_f16(1.0f));
    EXPECT_EQ(q[0], 127);
    EXPECT_EQ(q[1], -3);
    EXPECT_EQ(q[2], 3);
    EXPECT_EQ(q[3], 0);
    EXPECT_EQ(q[4], -127);
    EXPECT_EQ(q[5], 0);
}

TEST(TileCodec, AllZeroBlocksDecodeToZero) {
    const float x[32] = {};
    uint16_t scale = 1;
    uint8_t q4[16];
    quantize_block_q4_0(x, &scale, q4);
    EXPECT_EQ(scale, 0x8000);  // ggml computes d = 0 / -8 = -0.0f
    EXPECT_EQ(f16_to_f32(scale), 0.0f);
    for (uint8_t b : q4) EXPECT_EQ(b, 0x88);
}

struct RoundTripCase {
    DType dtype;
    uint32_t rows, cols;
    float tolerance;  // max |error| / max |row| per 32-block
};

class TileCodecRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

// Error bound per block, relative to the block's amax: Q8_0 <= 1/254 (half a step) plus the f16 scale
// rounding; Q4_0 <= 1/8, because ggml maps the signed maximum m to -8 and clips the opposite extreme
// -m (which would need q = 16) to 15, an error of one full step d = amax/8; every other weight is within d/2.
TEST_P(TileCodecRoundTrip, DecodedWithinBoundIncludingPaddedEdge) {
    const RoundTripCase c = GetParam();
    std::mt19937 rng(42 + c.cols);
    std::normal_distribution<float> dist(0.0f, 0.3f);
    const uint32_t stride = c.cols + 7;  // a source stride wider than the tile
    std::vector<float> src(uint64_t{c.rows} * stride);  // [rows x stride] f32
    for (float& v : src) v = dist(rng);
    std::vector<uint8_t> payload(tile_payload_bytes(c.dtype, c.rows, c.cols) + 64, 0xAB);
    encode_tile(c.dtype, src.data(), stride, c.rows, c.cols, payload.data());
    for (size_t i = tile_payload_bytes(c.dtype, c.rows, c.cols); i < payload.size(); ++i)
        ASSERT_EQ(payload[i], 0xAB) << "encode wrote past the payload";

    std::vector<float> row(c.cols + 1, 99.0f);
    double worst = 0.0;
    for (uint32_t r = 0; r < c.rows; ++r) {
        decode_tile_row(c.dtype, payload.data(), c.rows, c.cols, r, row.data());
        ASSERT_EQ(row[c.cols], 99.0f) << "decode wrote past cols";
        for (uint32_t g = 0; g * 32 < c.cols; ++g) {
            float amax = 0.0f;
            const uint32_t end = std::min(c.cols, g * 32 + 32);
            for (uint32_t j = g * 32; j < end; ++j) amax = std::max(amax, std::fabs(src[r * stride + j]));
            for (uint32_t j = g * 32; j < end; ++j) {
                const double err = std::fabs(row[j] - src[r * stride + j]);
                // Q4_0: only the clipped far end (|x| >= 7.5/8 of amax, opposite sign to the max) may exceed half a step.
                if (c.dtype == DType::Q4_0 && err > amax * (1.0 / 16 + 1.0 / 256)) {
                    ASSERT_GE(std::fabs(src[r * stride + j]), amax * 7.5f / 8.0f * 0.999f) << "row " << r << " col " << j;
                }
                if (c.dtype == DType::F32) {
                    ASSERT_EQ(row[j], src[r * stride + j]);
                }
                worst = std::max(worst, amax > 0 ? err / amax : err);
            }
        }
    }
    EXPECT_LE(worst, c.tolerance) << dtype_name(c.dtype) << " " << c.rows << "x" << c.cols;

    if (is_block_quant(c.dtype) && c.cols % 32 != 0) {
        // The padded tail of the last group must encode weight 0 (q = 8 for Q4_0, 0 for Q8_0).
        const uint32_t groups = groups_per_row(c.cols);
        const uint8_t* data = payload.data() + uint64_t{c.rows} * groups * 2;
        const uint32_t used = c.cols % 32;
        for (uint32_t r = 0; r < c.rows; ++r) {
            const uint64_t b = uint64_t{r} * groups + groups - 1;
            for (uint32_t j = used; j < 32; ++j) {
                if (c.dtype == DType::Q4_0) {
                    const uint8_t byte = data[b * 16 + j % 16];
                    ASSERT_EQ(j < 16 ? (byte & 15) : (byte >> 4), 8) << "row " << r << " pad " << j;
                } else {
                    ASSERT_EQ(static_cast<int8_t>(data[b * 32 + j]), 0) << "row " << r << " pad " << j;
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
    Tiles, TileCodecRoundTrip,
    ::testing::Values(RoundTripCase{DType::F32, 128, 256, 0.0f}, RoundTripCase{DType::F32, 5, 77, 0.0f},
                      RoundTripCase{DType::F16, 128, 256, 1.0f / 1024}, RoundTripCase{DType::F16, 3, 45, 1.0f / 1024},
                      RoundTripCase{DType::Q8_0, 128, 256, 1.0f / 254 + 1.0f / 1024},
                      RoundTripCase{DType::Q8_0, 17, 100, 1.0f / 254 + 1.0f / 1024},
                      RoundTripCase{DType::Q8_0, 2, 7, 1.0f / 254 + 1.0f / 1024},
                      RoundTripCase{DType::Q4_0, 128, 256, 1.0f / 8 + 1.0f / 256},
                      RoundTripCase{DType::Q4_0, 44, 88, 1.0f / 8 + 1.0f / 256},
                      RoundTripCase{DType::Q4_0, 1, 33, 1.0f / 8 + 1.0f / 256}));

TEST(TileCodec, Q4PayloadLayoutIsScalesThenNibbles) {
    // Two rows of 64 columns: scales [r0g0, r0g1, r1g0, r1g1], then 4 x 16 nibble bytes in the same order.
    std::vector<float> src(2 * 64, 0.0f);
    src[0] = -8.0f;        // r0 g0: d = 1
    src[32] = -16.0f;      // r0 g1: d = 2
    src[64 + 0] = -4.0f;   // r1 g0: d = 0.5
    src[64 + 32] = 24.0f;  // r1 g1: d = -3
    std::vector<uint8_t> payload(tile_payload_bytes(DType::Q4_0, 2, 64));
    ASSERT_EQ(payload.size(), 4u * 2 + 4u * 16);
    encode_tile(DType::Q4_0, src.data(), 64, 2, 64, payload.data());
    uint16_t scales[4];
    std::memcpy(scales, payload.data(), 8);
    EXPECT_EQ(scales[0], f32_to_f16(1.0f));
    EXPECT_EQ(scales[1], f32_to_f16(2.0f));
    EXPECT_EQ(scales[2], f32_to_f16(0.5f));
    EXPECT_EQ(scales[3], f32_to_f16(-3.0f));
    for (int b = 0; b < 4; ++b) EXPECT_EQ(payload[8 + b * 16] & 0x0F, 0) << "block " << b << " weight 0 maps to q=0";
}

} // namespace
} // namespace cflow
