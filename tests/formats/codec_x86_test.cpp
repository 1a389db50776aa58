// The converter's AVX2 and AVX-512 paths (formats/src/codec_x86.h) against the scalar codec they replace:
// every one of the 65,536 f16 values converts to the same f32 bits (a signalling NaN comes out
// quiet, the one named difference), and Q4_0 blocks quantise to the same scale and nibbles on
// random, tied-maximum, all-zero, signed-zero, subnormal (also with an infinite 1/d), huge and
// non-finite inputs; Q8_0 rows from F32, F16 and BF16 likewise, with values on the .5 rounding ties.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "../../formats/src/codec_x86.h"
#include "cflow/formats/tile_codec.h"

namespace cflow {
namespace {

TEST(CodecX86, EveryF16ValueConvertsAsTheScalarPath) {
    const auto fast = codec_x86::f16_row();
    if (!fast) GTEST_SKIP() << "this CPU (or build) has no AVX2 + F16C: the scalar path is the only one";
    std::vector<uint8_t> src(65536 * 2);
    for (uint32_t h = 0; h < 65536; ++h) std::memcpy(&src[h * 2], &h, 2);
    std::vector<float> out(65536 + 3);
    fast(src.data(), 65536, out.data());
    uint32_t quieted = 0;
    for (uint32_t h = 0; h < 65536; ++h) {
        uint32_t want = std::bit_cast<uint32_t>(f16_to_f32(uint16_t(h)));
        const uint32_t got = std::bit_cast<uint32_t>(out[h]);
        const bool signalling_nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0 && (h & 0x200u) == 0;
        if (signalling_nan) {
            want |= 0x00400000u;
            ++quieted;
        }
        ASSERT_EQ(got, want) << "f16 0x" << std::hex << h;
    }
    EXPECT_EQ(quieted, 2u * 511u);
    // A length that is not a multiple of 8 takes the scalar tail.
    fast(src.data() + 2 * 1000, 13, out.data());
    for (uint32_t i = 0; i < 13; ++i) EXPECT_EQ(out[i], f16_to_f32(uint16_t(1000 + i)));
}

void expect_same_q4_0(codec_x86::Q4BlockFn fast, const float* x, const char* what) {
    uint16_t want_scale = 0, got_scale = 0;
    uint8_t want[16] = {}, got[16] = {};
    quantize_block_q4_0_scalar(x, &want_scale, want);
    if (!fast(x, &got_scale, got)) {
        bool non_finite = false;
        for (int j = 0; j < 32; ++j) non_finite = non_finite || !std::isfinite(x[j]);
        EXPECT_TRUE(non_finite) << what << ": the fast path refused a finite block";
        return;
    }
    EXPECT_EQ(got_scale, want_scale) << what;
    EXPECT_EQ(std::memcmp(got, want, 16), 0) << what;
}

void expect_q4_0_path_matches_scalar(codec_x86::Q4BlockFn fast) {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    float x[32];
    for (int trial = 0; trial < 200000; ++trial) {
        const float spread = std::ldexp(1.0f, int(rng() % 60) - 40);  // 2^-40 .. 2^19
        for (float& v : x) v = normal(rng) * spread;
        if (trial % 7 == 0) x[rng() % 32] = -x[rng() % 32];       // equal magnitudes, opposite signs
        if (trial % 11 == 0) x[rng() % 32] = x[rng() % 32];       // a tied maximum: the first one counts
        expect_same_q4_0(fast, x, "random");
        if (::testing::Test::HasFailure()) return;
    }
    for (float& v : x) v = 0.0f;
    expect_same_q4_0(fast, x, "all +0");
    for (float& v : x) v = -0.0f;
    expect_same_q4_0(fast, x, "all -0");
    for (int j = 0; j < 32; ++j) x[j] = (j % 2 ? -1.0f : 1.0f) * std::numeric_limits<float>::denorm_min() * float(j + 1);
    expect_same_q4_0(fast, x, "subnormals");
    // A maximum so small that 1/d overflows: id is infinite, 0 x id is NaN (index 8), a
    // nonzero element x id is infinite (index 0 or 15).
    for (float& v : x) v = 0.0f;
    x[3] = 1e-39f;
    x[7] = -5e-40f;
    x[20] = 2e-40f;
    expect_same_q4_0(fast, x, "a subnormal maximum beside zeros");
    for (int j = 0; j < 32; ++j) x[j] = (j % 3 ? 1.0f : -1.0f) * std::numeric_limits<float>::max() / float(j + 1);
    expect_same_q4_0(fast, x, "near FLT_MAX");
    for (int j = 0; j < 32; ++j) x[j] = 3.0f;
    x[5] = -3.0f;
    expect_same_q4_0(fast, x, "tie between +3 and -3, the first wins");
    x[9] = std::numeric_limits<float>::infinity();
    expect_same_q4_0(fast, x, "an infinity");
    x[9] = std::numeric_limits<float>::quiet_NaN();
    expect_same_q4_0(fast, x, "a NaN");
}

TEST(CodecX86, Q4_0BlocksQuantiseAsTheScalarPathAvx2) {
    const auto fast = codec_x86::q4_0_block_avx2();
    if (!fast) GTEST_SKIP() << "this CPU (or build) has no AVX2 + F16C: that path cannot run here";
    expect_q4_0_path_matches_scalar(fast);
}

TEST(CodecX86, Q4_0BlocksQuantiseAsTheScalarPathAvx512) {
    const auto fast = codec_x86::q4_0_block_avx512();
    if (!fast) GTEST_SKIP() << "this CPU (or build) has no AVX-512 F: that path cannot run here";
    expect_q4_0_path_matches_scalar(fast);
}

TEST(CodecX86, TheConverterUsesTheWidestPathTheCpuHas) {
    if (codec_x86::q4_0_block_avx512()) EXPECT_EQ(codec_x86::q4_0_block(), codec_x86::q4_0_block_avx512());
    else EXPECT_EQ(codec_x86::q4_0_block(), codec_x86::q4_0_block_avx2());
}

// The direct F16/BF16 -> Q4_0 row paths (a block per lane: 16 at a time on AVX-512, 8 on AVX2;
// one by one otherwise) against their specification: each value converted to f32, each block
// through the scalar Q4_0 quantiser. Rows of 1 to 50 blocks (whole runs and the tail), with
// ties between +max and -max, all-zero blocks, subnormal maxima beside zeros, and non-finite
// values inside a run (that run goes block by block).
void expect_rows_match_scalar(const codec_x86::Q4HalfPath* path, DType src) {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    auto encode = [&](float v) -> uint16_t {
        if (src == DType::F16) return f32_to_f16(v);
        return static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16);
    };
    auto decode = [&](uint16_t h) { return src == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h); };
    for (int trial = 0; trial < 3000; ++trial) {
        const uint32_t groups = 1 + uint32_t(rng() % 50);
        std::vector<uint16_t> values(groups * 32);
        const float spread = std::ldexp(1.0f, int(rng() % 24) - 16);
        for (uint16_t& h : values) h = encode(normal(rng) * spread);
        const uint32_t g = uint32_t(rng() % groups);
        switch (trial % 8) {
            case 1: values[g * 32 + rng() % 32] = encode(-decode(values[g * 32 + rng() % 32])); break;  // +-max tie
            case 2: std::fill(values.begin() + g * 32, values.begin() + g * 32 + 32, uint16_t{0}); break;
            case 3: std::fill(values.begin() + g * 32, values.begin() + g * 32 + 32, uint16_t{0x8000}); break;
            case 4:  // a subnormal maximum beside zeros: 1/d overflows (bf16 reaches below 1e-38)
                std::fill(values.begin() + g * 32, values.begin() + g * 32 + 32, uint16_t{0});
                values[g * 32 + rng() % 32] = encode(src == DType::F16 ? 6e-8f : 1e-39f);
                break;
            case 5: values[g * 32 + rng() % 32] = encode(std::numeric_limits<float>::infinity()); break;
            case 6: values[g * 32 + rng() % 32] = encode(std::numeric_limits<float>::quiet_NaN()); break;
            default: break;
        }
        std::vector<uint8_t> want_scales(groups * 2), want_nibbles(groups * 16);
        for (uint32_t b = 0; b < groups; ++b) {
            float x[32];
            for (int j = 0; j < 32; ++j) x[j] = decode(values[b * 32 + j]);
            uint16_t scale = 0;
            quantize_block_q4_0_scalar(x, &scale, want_nibbles.data() + b * 16);
            std::memcpy(want_scales.data() + b * 2, &scale, 2);
        }
        std::vector<uint8_t> got_scales(groups * 2, 0xAA), got_nibbles(groups * 16, 0xAA);
        const auto* bytes = reinterpret_cast<const uint8_t*>(values.data());
        if (path) codec_x86::quantize_row_q4_0_via(*path, src, bytes, groups * 32, got_scales.data(), got_nibbles.data());
        else quantize_row_q4_0_from(src, bytes, groups * 32, got_scales.data(), got_nibbles.data());
        ASSERT_EQ(got_scales, want_scales) << "trial " << trial << ", " << groups << " blocks";
        ASSERT_EQ(got_nibbles, want_nibbles) << "trial " << trial << ", " << groups << " blocks";
    }
}

TEST(CodecX86, Q4_0RowsFromHalvesAvx512) {
    const codec_x86::Q4HalfPath f16 = codec_x86::q4_0_from_f16_avx512(), bf16 = codec_x86::q4_0_from_bf16_avx512();
    if (!f16.row) GTEST_SKIP() << "this CPU (or build) has no AVX-512 F: that path cannot run here";
    expect_rows_match_scalar(&f16, DType::F16);
    expect_rows_match_scalar(&bf16, DType::BF16);
}

TEST(CodecX86, Q4_0RowsFromHalvesAvx2) {
    const codec_x86::Q4HalfPath f16 = codec_x86::q4_0_from_f16_avx2(), bf16 = codec_x86::q4_0_from_bf16_avx2();
    if (!f16.row) GTEST_SKIP() << "this CPU (or build) has no AVX2 + F16C: that path cannot run here";
    expect_rows_match_scalar(&f16, DType::F16);
    expect_rows_match_scalar(&bf16, DType::BF16);
}

TEST(CodecX86, Q4_0RowsFromHalvesWithoutAFastPath) {
    const codec_x86::Q4HalfPath none;
    expect_rows_match_scalar(&none, DType::F16);
    expect_rows_match_scalar(&none, DType::BF16);
}

TEST(CodecX86, Q4_0RowsFromHalvesOnTheConvertersPath) {
    expect_rows_match_scalar(nullptr, DType::F16);
    expect_rows_match_scalar(nullptr, DType::BF16);
}

// The Q8_0 row paths (F32, F16 or BF16 source; a block at a time, non-finite blocks through the
// scalar codec) against their specification: each value converted to f32, each block through
// quantize_block_q8_0. Rows of 1 to 40 blocks with rounding ties (x * id exactly k + 0.5, which
// roundf takes away from zero), all-zero and -0 blocks, a subnormal maximum beside zeros (1/d
// overflows: 0 x id is NaN -> 0, the rest saturate), values near the type's largest, and
// infinities and NaNs among finite blocks.
void expect_q8_0_rows_match_scalar(const codec_x86::Q8RowFn* path, DType src) {
    std::mt19937 rng(13);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const uint32_t bytes_per_value = src == DType::F32 ? 4 : 2;
    auto encode = [&](float v, uint8_t* out) {
        if (src == DType::F32) return std::memcpy(out, &v, 4), void();
        const uint16_t h = src == DType::F16 ? f32_to_f16(v) : static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16);
        std::memcpy(out, &h, 2);
    };
    const float largest = src == DType::F16 ? 65504.0f : std::numeric_limits<float>::max();
    for (int trial = 0; trial < 4000; ++trial) {
        const uint32_t groups = 1 + uint32_t(rng() % 40);
        std::vector<float> x(groups * 32);
        const float spread = std::ldexp(1.0f, int(rng() % 24) - 16);
        for (float& v : x) v = normal(rng) * spread;
        const uint32_t g = uint32_t(rng() % groups);
        float* block = x.data() + g * 32;
        switch (trial % 9) {
            case 1:  // amax 127 -> d = 1: halves are exact ties in every source type
                for (int j = 0; j < 32; ++j) block[j] = float(int(rng() % 253) - 126) + ((rng() & 1) ? 0.5f : 0.0f);
                block[rng() % 32] = (rng() & 1) ? 127.0f : -127.0f;
                break;
            case 2: std::fill(block, block + 32, 0.0f); break;
            case 3: std::fill(block, block + 32, -0.0f); break;
            case 4:
                std::fill(block, block + 32, 0.0f);
                block[rng() % 32] = src == DType::F16 ? 6e-8f : 1e-39f;
                block[rng() % 32] = src == DType::F16 ? -3e-8f : -5e-40f;
                break;
            case 5:
                for (int j = 0; j < 32; ++j) block[j] = (j % 3 ? 1.0f : -1.0f) * largest / float(j + 1);
                break;
            case 6: block[rng() % 32] = std::numeric_limits<float>::infinity(); break;
            case 7: block[rng() % 32] = std::numeric_limits<float>::quiet_NaN(); break;
            case 8: block[rng() % 32] = -std::numeric_limits<float>::infinity(); break;
            default: break;
        }
        std::vector<uint8_t> values(x.size() * bytes_per_value);
        for (size_t i = 0; i < x.size(); ++i) encode(x[i], values.data() + i * bytes_per_value);
        std::vector<uint8_t> want_scales(groups * 2);
        std::vector<int8_t> want_quants(groups * 32);
        for (uint32_t b = 0; b < groups; ++b) {
            float f[32];
            convert_to_f32(src, values.data() + uint64_t{b} * 32 * bytes_per_value, 32, f);
            uint16_t scale = 0;
            quantize_block_q8_0(f, &scale, want_quants.data() + b * 32);
            std::memcpy(want_scales.data() + b * 2, &scale, 2);
        }
        std::vector<uint8_t> got_scales(groups * 2, 0xAA);
        std::vector<int8_t> got_quants(groups * 32, 0x55);
        if (path) codec_x86::quantize_row_q8_0_via(*path, src, values.data(), groups * 32, got_scales.data(), got_quants.data());
        else quantize_row_q8_0_from(src, values.data(), groups * 32, got_scales.data(), got_quants.data());
        ASSERT_EQ(got_scales, want_scales) << "trial " << trial << ", " << groups << " blocks";
        ASSERT_EQ(got_quants, want_quants) << "trial " << trial << ", " << groups << " blocks";
    }
}

void expect_q8_0_path_for_each_source(codec_x86::Q8RowFn (*path_for)(DType)) {
    for (DType src : {DType::F32, DType::F16, DType::BF16}) {
        SCOPED_TRACE(src == DType::F32 ? "F32" : src == DType::F16 ? "F16" : "BF16");
        const codec_x86::Q8RowFn path = path_for(src);
        ASSERT_NE(path, nullptr);
        expect_q8_0_rows_match_scalar(&path, src);
    }
}

TEST(CodecX86, Q8_0RowsAvx512) {
    if (!codec_x86::q8_0_row_avx512(DType::F32)) GTEST_SKIP() << "this CPU (or build) has no AVX-512 F: that path cannot run here";
    expect_q8_0_path_for_each_source(&codec_x86::q8_0_row_avx512);
}

TEST(CodecX86, Q8_0RowsAvx2) {
    if (!codec_x86::q8_0_row_avx2(DType::F32)) GTEST_SKIP() << "this CPU (or build) has no AVX2 + F16C: that path cannot run here";
    expect_q8_0_path_for_each_source(&codec_x86::q8_0_row_avx2);
}

TEST(CodecX86, Q8_0RowsWithoutAFastPath) {
    const codec_x86::Q8RowFn none = nullptr;
    for (DType src : {DType::F32, DType::F16, DType::BF16}) expect_q8_0_rows_match_scalar(&none, src);
}

TEST(CodecX86, Q8_0RowsOnTheConvertersPath) {
    for (DType src : {DType::F32, DType::F16, DType::BF16}) expect_q8_0_rows_match_scalar(nullptr, src);
    EXPECT_EQ(has_direct_q8_0_from(DType::F16), codec_x86::q8_0_row_avx2(DType::F16) != nullptr);
    EXPECT_FALSE(has_direct_q8_0_from(DType::Q4_0));
}

} // namespace
} // namespace cflow
