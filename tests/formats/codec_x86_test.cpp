// The converter's AVX2 paths (formats/src/codec_x86.h) against the scalar codec they replace:
// every one of the 65,536 f16 values converts to the same f32 bits (a signalling NaN comes out
// quiet, the one named difference), and Q4_0 blocks quantise to the same scale and nibbles on
// random, tied-maximum, all-zero, signed-zero, subnormal, huge and non-finite inputs.
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

void expect_same_q4_0(const float* x, const char* what) {
    const auto fast = codec_x86::q4_0_block();
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

TEST(CodecX86, Q4_0BlocksQuantiseAsTheScalarPath) {
    if (!codec_x86::q4_0_block()) GTEST_SKIP() << "this CPU (or build) has no AVX2 + F16C: the scalar path is the only one";
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    float x[32];
    for (int trial = 0; trial < 200000; ++trial) {
        const float spread = std::ldexp(1.0f, int(rng() % 60) - 40);  // 2^-40 .. 2^19
        for (float& v : x) v = normal(rng) * spread;
        if (trial % 7 == 0) x[rng() % 32] = -x[rng() % 32];       // equal magnitudes, opposite signs
        if (trial % 11 == 0) x[rng() % 32] = x[rng() % 32];       // a tied maximum: the first one counts
        expect_same_q4_0(x, "random");
        if (HasFailure()) return;
    }
    for (float& v : x) v = 0.0f;
    expect_same_q4_0(x, "all +0");
    for (float& v : x) v = -0.0f;
    expect_same_q4_0(x, "all -0");
    for (int j = 0; j < 32; ++j) x[j] = (j % 2 ? -1.0f : 1.0f) * std::numeric_limits<float>::denorm_min() * float(j + 1);
    expect_same_q4_0(x, "subnormals");
    for (int j = 0; j < 32; ++j) x[j] = (j % 3 ? 1.0f : -1.0f) * std::numeric_limits<float>::max() / float(j + 1);
    expect_same_q4_0(x, "near FLT_MAX");
    for (int j = 0; j < 32; ++j) x[j] = 3.0f;
    x[5] = -3.0f;
    expect_same_q4_0(x, "tie between +3 and -3, the first wins");
    x[9] = std::numeric_limits<float>::infinity();
    expect_same_q4_0(x, "an infinity");
    x[9] = std::numeric_limits<float>::quiet_NaN();
    expect_same_q4_0(x, "a NaN");
}

} // namespace
} // namespace cflow
