// dequantize_ggml_row on hand-built blocks whose values are worked out by hand from the block
// layouts (one or two weights per type, at positions that exercise the packing), and the block
// table. The exhaustive comparison with an independent decoder is
// tests/parity/ggml/ggml_dequant_parity_test.cpp; these run without Python.
#include <cstring>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "cflow/formats/ggml_blocks.h"
#include "cflow/formats/gguf.h"

namespace cflow {
namespace {

constexpr uint16_t kHalfOne = 0x3C00, kHalfHalf = 0x3800, kHalfQuarter = 0x3400, kHalfTwo = 0x4000,
                   kHalfMinusOne = 0xBC00;

void put16(std::vector<uint8_t>& b, size_t at, uint16_t v) { std::memcpy(b.data() + at, &v, 2); }

std::vector<float> decode(uint32_t type, const std::vector<uint8_t>& block) {
    const GgmlBlockType* t = find_ggml_block_type(type);
    EXPECT_NE(t, nullptr);
    EXPECT_EQ(block.size(), t->block_bytes);
    std::vector<float> out(t->block_elements, -999.0f);
    dequantize_ggml_row(type, block.data(), t->block_elements, out.data());
    return out;
}

TEST(GgmlBlocks, TableMatchesTheGgmlNamesAndSizes) {
    for (const GgmlBlockType& t : ggml_block_types()) {
        EXPECT_EQ(ggml_type_name(t.ggml_type), t.name);
        EXPECT_EQ(find_ggml_block_type(t.ggml_type), &t);
    }
    // bytes per block as gguf.md / ggml-common.h give them
    const std::vector<std::pair<uint32_t, uint32_t>> sizes = {
        {kGgmlQ4_0, 18}, {kGgmlQ4_1, 20}, {kGgmlQ5_0, 22}, {kGgmlQ5_1, 24}, {kGgmlQ8_0, 34},  {kGgmlIQ4_NL, 18},
        {kGgmlQ2_K, 84}, {kGgmlQ3_K, 110}, {kGgmlQ4_K, 144}, {kGgmlQ5_K, 176}, {kGgmlQ6_K, 210}, {kGgmlQ8_K, 292}};
    for (auto [type, bytes] : sizes) {
        ASSERT_NE(find_ggml_block_type(type), nullptr) << type;
        EXPECT_EQ(find_ggml_block_type(type)->block_bytes, bytes) << ggml_type_name(type);
        EXPECT_EQ(find_ggml_block_type(type)->block_elements, type >= kGgmlQ2_K && type <= kGgmlQ8_K ? 256u : 32u);
    }
    EXPECT_EQ(find_ggml_block_type(9), nullptr);   // Q8_1: an activation type, never in model files
    EXPECT_EQ(find_ggml_block_type(16), nullptr);  // IQ2_XXS
    EXPECT_EQ(supported_ggml_type_names(), "F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ4_NL, IQ4_XS, BF16, MXFP4");
    ASSERT_NE(find_ggml_block_type(kGgmlMXFP4), nullptr);
    EXPECT_EQ(find_ggml_block_type(kGgmlMXFP4)->block_bytes, 17u);  // ggml-common.h block_mxfp4
    EXPECT_EQ(find_ggml_block_type(kGgmlMXFP4)->block_elements, 32u);
    ASSERT_NE(find_ggml_block_type(kGgmlIQ4_XS), nullptr);
    EXPECT_EQ(find_ggml_block_type(kGgmlIQ4_XS)->block_bytes, 136u);  // ggml-common.h block_iq4_xs
    EXPECT_EQ(find_ggml_block_type(kGgmlIQ4_XS)->block_elements, 256u);
}

// MXFP4 (ggml dequantize_row_mxfp4): 2^(e - 128) times kvalues_mxfp4 (twice E2M1), low nibbles
// weights 0..15, high nibbles 16..31; e < 2 gives ggml's denormal halves.
TEST(GgmlBlocks, Mxfp4) {
    std::vector<uint8_t> block(17, 0);
    block[0] = 130;   // 2^(130 - 128) = 4
    block[1] = 0x7F;  // weight 0: nibble 15 = -12, weight 16: nibble 7 = 12
    block[2] = 0x95;  // weight 1: nibble 5 = 6, weight 17: nibble 9 = -1
    auto y = decode(kGgmlMXFP4, block);
    EXPECT_EQ(y[0], -48.0f);
    EXPECT_EQ(y[16], 48.0f);
    EXPECT_EQ(y[1], 24.0f);
    EXPECT_EQ(y[17], -4.0f);
    EXPECT_EQ(y[2], 0.0f);
    block[0] = 1;  // 2^-127, a denormal
    block[1] = 0x01;
    y = decode(kGgmlMXFP4, block);
    EXPECT_EQ(y[0], std::ldexp(1.0f, -127));
    block[0] = 0;
    y = decode(kGgmlMXFP4, block);
    EXPECT_EQ(y[0], std::ldexp(1.0f, -128));
}

TEST(GgmlBlocks, LegacyTypes) {
    std::vector<uint8_t> q4_1(20, 0);
    put16(q4_1, 0, kHalfHalf);      // d
    put16(q4_1, 2, kHalfMinusOne);  // m
    q4_1[4] = 0x3A;                 // weight 0: 10, weight 16: 3
    auto y = decode(kGgmlQ4_1, q4_1);
    EXPECT_EQ(y[0], 0.5f * 10 - 1);
    EXPECT_EQ(y[16], 0.5f * 3 - 1);
    EXPECT_EQ(y[1], -1.0f);

    std::vector<uint8_t> q5_0(22, 0);
    put16(q5_0, 0, kHalfOne);
    const uint32_t qh = (1u << 0) | (1u << 16);  // fifth bit of weights 0 and 16
    std::memcpy(q5_0.data() + 2, &qh, 4);
    q5_0[6] = 0x21;
    y = decode(kGgmlQ5_0, q5_0);
    EXPECT_EQ(y[0], 1.0f);    // (1 | 16) - 16
    EXPECT_EQ(y[16], 2.0f);   // (2 | 16) - 16
    EXPECT_EQ(y[1], -16.0f);  // 0 - 16

    std::vector<uint8_t> q5_1(24, 0);
    put16(q5_1, 0, kHalfTwo);
    put16(q5_1, 2, kHalfHalf);
    std::memcpy(q5_1.data() + 4, &qh, 4);
    q5_1[8 + 15] = 0xF0;  // weight 31: 15 (no fifth bit)
    y = decode(kGgmlQ5_1, q5_1);
    EXPECT_EQ(y[0], 2.0f * 16 + 0.5f);
    EXPECT_EQ(y[31], 2.0f * 15 + 0.5f);

    std::vector<uint8_t> iq4(18, 0);
    put16(iq4, 0, kHalfOne);
    iq4[2 + 3] = 0xF0;
    y = decode(kGgmlIQ4_NL, iq4);
    EXPECT_EQ(y[3], -127.0f);  // codebook[0]
    EXPECT_EQ(y[19], 113.0f);  // codebook[15]
}

TEST(GgmlBlocks, Q2_K) {
    std::vector<uint8_t> b(84, 0);  // scales[16] qs[64] d dmin
    b[6] = 0x25;                    // sub-block 6: scale 5, min 2
    b[16 + 4] = 0xC0;               // weight 100 = half 0, group 3, lane 4: bits 6-7 of qs[4]
    put16(b, 80, kHalfTwo);
    put16(b, 82, kHalfQuarter);
    auto y = decode(kGgmlQ2_K, b);
    EXPECT_EQ(y[100], 2.0f * 5 * 3 - 0.25f * 2);
    EXPECT_EQ(y[96], -0.5f);  // same sub-block, q 0
    EXPECT_EQ(y[0], 0.0f);
}

TEST(GgmlBlocks, Q3_K) {
    std::vector<uint8_t> b(110, 0);  // hmask[32] qs[64] scales[12] d
    b[96 + 1] = 0x50;                // scale 9: low 4 bits = high nibble of scales[1]
    b[96 + 9] = 0x30;                // its top 2 bits: bits 4-5 of scales[8 + 9 % 4]
    b[32 + 54] = 0x02;               // weight 150 = half 1, group 0, lane 22: bits 0-1 of qs[32 + 22]
    b[22] = 0x00;                    // hmask[22] bit 4 clear: minus 4
    b[23] = 0x10;                    // hmask[23] bit 4 set: weight 151 keeps q = 0
    put16(b, 108, kHalfHalf);
    auto y = decode(kGgmlQ3_K, b);
    EXPECT_EQ(y[150], 0.5f * (53 - 32) * (2 - 4));
    EXPECT_EQ(y[151], 0.0f);
    EXPECT_EQ(y[152], 0.5f * 21 * -4);
}

TEST(GgmlBlocks, Q4_K) {
    std::vector<uint8_t> b(144, 0);  // d dmin scales[12] qs[128]
    put16(b, 0, kHalfOne);
    put16(b, 2, kHalfHalf);
    // sub-block 5: scale 43 = 0b10'1011 (low nibble of scales[9], top bits of scales[1]),
    //              min 49 = 0b11'0001 (high nibble of scales[9], top bits of scales[5])
    b[4 + 9] = 0x1B;
    b[4 + 1] = 0x80;
    b[4 + 5] = 0xC0;
    b[16 + 64] = 0x70;  // weight 160 (sub-block 5, lane 0): high nibble of qs[64]
    auto y = decode(kGgmlQ4_K, b);
    EXPECT_EQ(y[160], 43.0f * 7 - 0.5f * 49);
    EXPECT_EQ(y[161], -0.5f * 49);
    EXPECT_EQ(y[128], 0.0f);  // sub-block 4: low nibble of qs[64] = 0, scale and min 0
    EXPECT_EQ(y[32], 0.0f);   // sub-block 1: scales[1] & 63 = 0
}

TEST(GgmlBlocks, Q5_K) {
    std::vector<uint8_t> b(176, 0);  // d dmin scales[12] qh[32] qs[128]
    put16(b, 0, kHalfOne);
    put16(b, 2, kHalfOne);
    b[4 + 3] = 10;       // sub-block 3 scale
    b[4 + 7] = 4;        // sub-block 3 min
    b[16 + 4] = 0x08;    // weight 100 (sub-block 3, lane 4): fifth bit = bit 3 of qh[4]
    b[48 + 36] = 0x90;   // its low 4 bits: high nibble of qs[32 + 4]
    auto y = decode(kGgmlQ5_K, b);
    EXPECT_EQ(y[100], 10.0f * (9 + 16) - 4);
    EXPECT_EQ(y[101], -4.0f);
}

TEST(GgmlBlocks, Q6_K) {
    std::vector<uint8_t> b(210, 0);  // ql[128] qh[64] scales[16] d
    b[72] = 0x50;                    // weight 200 = half 1, group 2, lane 8: high nibble of ql[64 + 8]
    b[128 + 40] = 0x20;              // its top 2 bits: bits 4-5 of qh[32 + 8]
    b[192 + 12] = static_cast<uint8_t>(-3);  // scale of weights 192..207
    put16(b, 208, kHalfQuarter);
    auto y = decode(kGgmlQ6_K, b);
    EXPECT_EQ(y[200], 0.25f * -3 * ((5 | (2 << 4)) - 32));
    EXPECT_EQ(y[201], 0.25f * -3 * -32);
    EXPECT_EQ(y[72], 0.0f);  // scale 0
}

TEST(GgmlBlocks, Q8_KAndQ8_0) {
    std::vector<uint8_t> b(292, 0);  // f32 d, qs[256], bsums[16]
    const float d = 0.5f;
    std::memcpy(b.data(), &d, 4);
    b[4 + 255] = 0x80;  // -128
    auto y = decode(kGgmlQ8_K, b);
    EXPECT_EQ(y[255], -64.0f);
    EXPECT_EQ(y[0], 0.0f);

    std::vector<uint8_t> q8(34, 0);
    put16(q8, 0, kHalfTwo);
    q8[2 + 31] = 0x7F;
    EXPECT_EQ(decode(kGgmlQ8_0, q8)[31], 254.0f);
}

TEST(GgmlBlocks, RowsOfSeveralBlocks) {
    std::vector<uint8_t> row(2 * 18, 0);
    put16(row, 0, kHalfOne);
    put16(row, 18, kHalfTwo);  // second block, at an even but not 4-aligned offset
    row[18 + 2] = 0x09;
    std::vector<float> y(64);
    dequantize_ggml_row(kGgmlQ4_0, row.data(), 64, y.data());
    EXPECT_EQ(y[0], -8.0f);
    EXPECT_EQ(y[32], 2.0f * (9 - 8));
    EXPECT_EQ(y[48], 2.0f * -8);
}

} // namespace
} // namespace cflow
