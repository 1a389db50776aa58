// Q2_K / Q3_K / IQ4_XS / Q4_1 / Q5_0 / Q5_1 / IQ4_NL / MXFP4 tiles on every SIMD path against the scalar
// kernel (matvec_ggml_tile, kernels_scalar.cpp: ggml's dequantised f32 weights, then an
// index-order f32 dot), on random valid blocks (random bytes, every f16 field a finite value).
//
// Bound, f32 paths: every path multiplies the very f32 weights w_c the scalar kernel uses
// (decode_tile_row = dequantize_ggml_row), so only the order of the f32 additions differs. With
// u = 2^-24 and gamma_k = k u / (1 - k u) (Higham 3.1), the scalar loop and the SIMD accumulators
// each differ from the exact sum by at most gamma_{n+1} sum_c |w_c x_c| (plus the final add into
// y), so
//   |simd - scalar| <= (gamma_{n+1} + gamma_{n+8}) (sum_c |w_c x_c| + |y0|),
// the reassociation bound of kernels_test.cpp and kquant_kernels_test.cpp, n = cols.
//
// Bound, int8 paths (every type here; ggml32_int8_body.inc): x is quantised per 32 columns, xq =
// round(x / dx_b), dx_b = amax_b / 127. Weight c is w_c = s_c (q_c - k) + m_c with s_c its (sub-)block
// scale and m_c the part the kernel adds from the exact f32 sum of x (additive_term: Q4_1 / Q5_1
// m + k d, Q2_K -dmin m; 0 elsewhere); the integer dots are exact, so the activations' rounding (at
// most kActQuantTol amax_b per value, as in kernels_test.cpp) enters only through w_c - m_c:
//   |int8 - scalar| <= sum_b kActQuantTol amax_b sum_{c in b} |w_c - m_c|
//                      + reassoc(n) (sum_c (|w_c x_c| + |m_c x_c|) + sum_b amax_b / 127 sum |w_c - m_c| + |y0|).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cflow/engine/kernels/kernels.h"
#include "cflow/formats/ggml_blocks.h"
#include "cflow/formats/tile_codec.h"
#include "cflow/formats/tile_plan.h"
#include "kernels/ggml_tile_kernels.h"

namespace cflow {
namespace ggml_tile_test {
namespace {

constexpr double kUnitRoundoff = 0x1p-24;
double gamma_k(double k) { return k * kUnitRoundoff / (1.0 - k * kUnitRoundoff); }
double reassoc_rel_tol(uint32_t n) { return gamma_k(n + 1.0) + gamma_k(n + 8.0); }
constexpr double kActQuantTol = 0.5001 / 127.0;

constexpr DType kTypes[] = {DType::Q2_K, DType::Q3_K,   DType::IQ4_XS, DType::Q4_1,
                            DType::Q5_0, DType::Q5_1, DType::IQ4_NL, DType::MXFP4};
constexpr Isa kSimdPaths[] = {Isa::Avx2, Isa::Avx512, Isa::Avx2Int8, Isa::AvxVnni, Isa::Avx512Vnni};
constexpr Isa kInt8Paths[] = {Isa::Avx2Int8, Isa::AvxVnni, Isa::Avx512Vnni};
constexpr uint32_t kRowCounts[] = {1, 7, 128};
constexpr DType kInt8Types[] = {DType::Q4_1,  DType::Q5_0,   DType::Q5_1, DType::IQ4_NL,
                                DType::MXFP4, DType::IQ4_XS, DType::Q2_K, DType::Q3_K};

// Byte offsets of the f16 fields inside one block (ggml-common.h): Q2_K ends with d, dmin;
// Q3_K ends with d; the others start with d (and m for Q4_1 / Q5_1).
std::vector<uint32_t> f16_offsets(DType dtype) {
    switch (dtype) {
        case DType::Q2_K: return {80, 82};
        case DType::Q3_K: return {108};
        case DType::Q4_1:
        case DType::Q5_1: return {0, 2};
        case DType::MXFP4: return {};  // an E8M0 exponent byte instead, set by random_tile
        default: return {0};  // IQ4_XS, Q5_0, IQ4_NL
    }
}

// A finite f16 with a random sign and a biased exponent in [3, 18] (2^-12 .. 2^3).
uint16_t random_f16(std::mt19937& rng) {
    const auto sign = static_cast<uint16_t>(rng() & 1u);
    const auto exponent = static_cast<uint16_t>(std::uniform_int_distribution<int>(3, 18)(rng));
    return static_cast<uint16_t>((sign << 15) | (exponent << 10) | (rng() & 0x3FFu));
}

// rows x (cols / block) random valid blocks.
std::vector<uint8_t> random_tile(DType dtype, uint32_t rows, uint32_t cols, std::mt19937& rng) {
    const uint32_t blocks = rows * (cols / ggml_tile_block_weights(dtype));
    const uint32_t blockBytes = ggml_tile_block_bytes(dtype);
    std::vector<uint8_t> tile(size_t{blocks} * blockBytes);  // [rows x cols/block] blocks
    for (uint8_t& b : tile) b = static_cast<uint8_t>(rng());
    for (uint32_t b = 0; b < blocks; ++b) {
        if (dtype == DType::MXFP4)  // 2^-16 .. 2^0: finite products with any x here
            tile[size_t{b} * blockBytes] = static_cast<uint8_t>(std::uniform_int_distribution<int>(112, 128)(rng));
        for (uint32_t at : f16_offsets(dtype)) {
            const uint16_t h = random_f16(rng);
            std::memcpy(tile.data() + size_t{b} * blockBytes + at, &h, 2);
        }
    }
    return tile;
}

std::vector<float> random_x(uint32_t cols, std::mt19937& rng) {
    std::vector<float> x(cols);  // [cols] f32
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::uniform_int_distribution<int> exponent(-8, 4);
    for (float& v : x) v = rng() % 16 == 0 ? 0.0f : std::ldexp(unit(rng), exponent(rng));
    return x;
}

// Widths a tile of the type can have: a full tile row, and for 32-weight blocks edge tiles.
std::vector<uint32_t> tile_widths(DType dtype) {
    if (ggml_tile_block_weights(dtype) == 256) return {256};
    return {256, 32, 96, 224};
}

// The part of weight c the int8 kernels add from the exact f32 sum of x rather than through the
// quantised activations (header): Q4_1 / Q5_1 the block's m + k d (k = 8 / 16), Q2_K its 16-weight
// sub-block's -dmin m; 0 for the other types.
double additive_term(DType dtype, const uint8_t* tile, uint32_t cols, uint32_t r, uint32_t c) {
    const uint32_t blockWeights = ggml_tile_block_weights(dtype);
    const uint8_t* block = tile + (size_t{r} * (cols / blockWeights) + c / blockWeights) * ggml_tile_block_bytes(dtype);
    float f[2];
    if (dtype == DType::Q4_1 || dtype == DType::Q5_1) {
        dequantize_ggml_row(kGgmlF16, block, 2, f);  // d, m
        return double(f[1]) + (dtype == DType::Q4_1 ? 8.0 : 16.0) * double(f[0]);
    }
    if (dtype == DType::Q2_K) {
        dequantize_ggml_row(kGgmlF16, block + 80, 2, f);  // d, dmin
        return -double(f[1]) * double(block[c % 256 / 16] >> 4);
    }
    return 0.0;
}

// The int8 paths' bound on the 32-weight block types (header), for row r with weights w: the
// activations' rounding, and the magnitude the f32 steps' reassociation bound multiplies.
struct Int8Bound {
    double quant_err = 0;
    double magnitude = 0;
    double total(uint32_t cols) const { return quant_err + reassoc_rel_tol(cols) * magnitude; }
};
Int8Bound int8_bound_parts(DType dtype, const uint8_t* tile, uint32_t cols, uint32_t r, const float* w, const float* x, float y0) {
    Int8Bound out;
    out.magnitude = std::fabs(double(y0));
    for (uint32_t b = 0; b < cols / 32; ++b) {
        double amax = 0, scaledAbs = 0;
        for (uint32_t c = 32 * b; c < 32 * b + 32; ++c) amax = std::max(amax, std::fabs(double(x[c])));
        for (uint32_t c = 32 * b; c < 32 * b + 32; ++c) {
            const double m = additive_term(dtype, tile, cols, r, c);
            scaledAbs += std::fabs(double(w[c]) - m);
            out.magnitude += std::fabs(double(w[c]) * x[c]) + std::fabs(m * x[c]);
        }
        out.quant_err += kActQuantTol * amax * scaledAbs;
        out.magnitude += amax / 127.0 * scaledAbs;
    }
    return out;
}
double int8_bound(DType dtype, const uint8_t* tile, uint32_t cols, uint32_t r, const float* w, const float* x, float y0) {
    return int8_bound_parts(dtype, tile, cols, r, w, x, y0).total(cols);
}

TEST(GgmlTileKernels, EverySimdPathIsWithinTheReassociationBoundOfTheScalarKernel) {
    std::mt19937 rng(20261205);
    const Kernels& scalar = kernels_for(Isa::Scalar);
    double worst = 0;  // max |simd - scalar| / bound
    size_t checked = 0;
    for (const Isa isa : kSimdPaths) {
        if (!isa_supported(isa)) {
            std::printf("[ggml tile] %s: not on this CPU, skipped\n", std::string(isa_name(isa)).c_str());
            continue;
        }
        const Kernels& k = kernels_for(isa);
        for (const DType dtype : kTypes)
            for (const uint32_t cols : tile_widths(dtype))
                for (const uint32_t rows : kRowCounts) {
                    SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::string(dtype_name(dtype)) + " " +
                                 std::to_string(rows) + "x" + std::to_string(cols));
                    const std::vector<uint8_t> tile = random_tile(dtype, rows, cols, rng);
                    ASSERT_EQ(tile.size(), tile_payload_bytes(dtype, rows, cols));
                    const std::vector<float> x = random_x(cols, rng);
                    std::vector<float> y0(rows);  // [rows] what y held before the call
                    for (float& v : y0) v = std::ldexp(std::uniform_real_distribution<float>(-1, 1)(rng), 2);
                    std::vector<float> want = y0, got = y0;
                    scalar.tile_matvec(dtype, tile.data(), rows, cols, x.data(), want.data());
                    k.tile_matvec(dtype, tile.data(), rows, cols, x.data(), got.data());
                    std::vector<float> w(cols);  // [cols] the row's weights
                    for (uint32_t r = 0; r < rows; ++r) {
                        decode_tile_row(dtype, tile.data(), rows, cols, r, w.data());
                        double terms = 0;
                        for (uint32_t c = 0; c < cols; ++c) {
                            ASSERT_TRUE(std::isfinite(w[c]));
                            terms += std::fabs(double(w[c]) * x[c]);
                        }
                        double bound = reassoc_rel_tol(cols) * (terms + std::fabs(double(y0[r])));
                        if (isa_quantizes_activations(isa) && is_ggml32_int8(dtype))
                            bound = int8_bound(dtype, tile.data(), cols, r, w.data(), x.data(), y0[r]);
                        const double diff = std::fabs(double(got[r]) - double(want[r]));
                        ASSERT_TRUE(std::isfinite(got[r]));
                        EXPECT_LE(diff, bound) << "row " << r;
                        if (bound > 0) worst = std::max(worst, diff / bound);
                        ++checked;
                    }
                }
    }
    std::printf("[ggml tile] %zu rows checked, max |simd - scalar| / bound = %.3f\n", checked, worst);
}

// The scalar kernel is ggml's dequantisation then a dot: checked here against a float64 dot of the
// dequantised weights (the f32 dot's own bound gamma_n), so a kernel that skips or misplaces
// blocks (wrong row stride, edge tile) fails.
TEST(GgmlTileKernels, ScalarKernelIsTheDotOfTheDequantisedRow) {
    std::mt19937 rng(7);
    for (const DType dtype : kTypes)
        for (const uint32_t cols : tile_widths(dtype)) {
            SCOPED_TRACE(std::string(dtype_name(dtype)) + " cols " + std::to_string(cols));
            constexpr uint32_t kRows = 5;
            const std::vector<uint8_t> tile = random_tile(dtype, kRows, cols, rng);
            const std::vector<float> x = random_x(cols, rng);
            std::vector<float> y(kRows, 0.0f);
            kernels_for(Isa::Scalar).tile_matvec(dtype, tile.data(), kRows, cols, x.data(), y.data());
            const uint32_t rowBytes = cols / ggml_tile_block_weights(dtype) * ggml_tile_block_bytes(dtype);
            std::vector<float> w(cols);
            for (uint32_t r = 0; r < kRows; ++r) {
                dequantize_ggml_row(ggml_tile_ggml_type(dtype), tile.data() + size_t{r} * rowBytes, cols, w.data());
                double exact = 0, terms = 0;
                for (uint32_t c = 0; c < cols; ++c) exact += double(w[c]) * x[c], terms += std::fabs(double(w[c]) * x[c]);
                EXPECT_LE(std::fabs(double(y[r]) - exact), gamma_k(cols) * terms) << "row " << r;
            }
        }
}

// The int8 paths give every type here int8 activations from one shared slice layout (slice_dtype
// Q5_0, so a fused segment mixing them shares its slices): 32-weight blocks, and the super-blocks of
// IQ4_XS, Q2_K and Q3_K taken 32 weights at a time.
TEST(GgmlTileKernels, TheInt8PathsClaimEveryGgmlBlockType) {
    for (const Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Avx2Int8, Isa::AvxVnni, Isa::Avx512Vnni}) {
        if (!isa_supported(isa)) continue;
        const Kernels& k = kernels_for(isa);
        for (const DType dtype : kTypes) {
            const bool claimed = isa_quantizes_activations(isa) && is_ggml32_int8(dtype);
            EXPECT_EQ((k.quantized_dtypes & dtype_bit(dtype)) != 0, claimed) << isa_name(isa) << " " << dtype_name(dtype);
            EXPECT_TRUE(kernels::uses_ggml_tile_f32(dtype));
        }
    }
    for (const DType dtype : kInt8Types) EXPECT_EQ(slice_dtype(dtype), DType::Q5_0) << dtype_name(dtype);
    for (DType k : {DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q4_0}) EXPECT_FALSE(kernels::uses_ggml_tile_f32(k));
}

// The session's routes give what tile_matvec gives: one quantize_slice then tile_matvec_quantized
// (decode) bit for bit, and tile_matmat_quantized over T tokens (prefill) for every token bit for
// bit below kMatmatLaneTokens; from there (rows in lanes) the same exact integer block dots summed
// in another f32 order: within twice the reassociation bound of the magnitude (Int8Bound).
TEST(GgmlTileKernels, QuantizedSliceAndMatmatEqualTheMatvec) {
    std::mt19937 rng(20261206);
    size_t paths = 0;
    for (const Isa isa : kInt8Paths) {
        if (!isa_supported(isa)) {
            std::printf("[ggml tile int8] %s: not on this CPU, skipped\n", std::string(isa_name(isa)).c_str());
            continue;
        }
        ++paths;
        const Kernels& k = kernels_for(isa);
        for (const DType dtype : kInt8Types)
            for (const uint32_t cols : tile_widths(dtype))
                for (const uint32_t rows : {uint32_t{5}, uint32_t{128}})
                    for (const uint32_t tokens : {1u, 3u, 5u, 13u, 16u}) {
                        SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::string(dtype_name(dtype)) + " " +
                                     std::to_string(rows) + "x" + std::to_string(cols) + " tokens " + std::to_string(tokens));
                        const std::vector<uint8_t> tile = random_tile(dtype, rows, cols, rng);
                        std::vector<float> x;  // [tokens x cols]
                        for (uint32_t t = 0; t < tokens; ++t) {
                            const std::vector<float> xt = random_x(cols, rng);
                            x.insert(x.end(), xt.begin(), xt.end());
                        }
                        struct alignas(kQuantizedSliceAlign) Slice {
                            unsigned char bytes[kQuantizedSliceBytes];
                        };
                        std::vector<Slice> slices(tokens);
                        std::vector<float> viaMatvec(size_t{tokens} * rows, 0.5f), viaSlice = viaMatvec, viaMatmat = viaMatvec;
                        for (uint32_t t = 0; t < tokens; ++t) {
                            k.tile_matvec(dtype, tile.data(), rows, cols, x.data() + size_t{t} * cols, viaMatvec.data() + size_t{t} * rows);
                            k.quantize_slice(slice_dtype(dtype), x.data() + size_t{t} * cols, cols, slices[t].bytes);
                            k.tile_matvec_quantized(dtype, tile.data(), rows, cols, slices[t].bytes, viaSlice.data() + size_t{t} * rows);
                        }
                        k.tile_matmat_quantized(dtype, tile.data(), rows, cols, slices[0].bytes, sizeof(Slice), tokens,
                                                viaMatmat.data(), rows);
                        std::vector<float> w(cols);  // [cols] one row's weights
                        for (uint32_t t = 0; t < tokens; ++t)
                            for (uint32_t r = 0; r < rows; ++r) {
                                const size_t i = size_t{t} * rows + r;
                                ASSERT_EQ(viaSlice[i], viaMatvec[i]) << "token " << t << " row " << r;
                                if (tokens < kMatmatLaneTokens) {
                                    ASSERT_EQ(viaMatmat[i], viaMatvec[i]) << "token " << t << " row " << r;
                                    continue;
                                }
                                decode_tile_row(dtype, tile.data(), rows, cols, r, w.data());
                                const Int8Bound bound =
                                    int8_bound_parts(dtype, tile.data(), cols, r, w.data(), x.data() + size_t{t} * cols, 0.5f);
                                ASSERT_LE(std::fabs(double(viaMatmat[i]) - double(viaMatvec[i])),
                                          2 * reassoc_rel_tol(cols) * bound.magnitude)
                                    << "token " << t << " row " << r;
                            }
                    }
    }
    if (paths == 0) GTEST_SKIP() << "no int8 path on this CPU";
}

// Q5_1's and Q5_0's fifth bit lands on its own weight, and Q5_1's min is added: one-hot x reads one
// weight back (one activation at its block's amax is exact in int8; the centring's f32 steps
// leave a few units in the last place).
TEST(GgmlTileKernels, Int8PathsPlaceTheFifthBitOnItsWeight) {
    for (const Isa isa : kInt8Paths) {
        if (!isa_supported(isa)) continue;
        SCOPED_TRACE(std::string(isa_name(isa)));
        const Kernels& k = kernels_for(isa);
        // Q5_1, d = 1, m = 0.25, all nibbles 0, qh = bit j only: w_j = 16.25, the rest 0.25.
        for (uint32_t j = 0; j < 32; ++j) {
            uint8_t block[24] = {};
            const uint16_t one = 0x3C00, quarter = 0x3400;
            std::memcpy(block, &one, 2);
            std::memcpy(block + 2, &quarter, 2);
            const uint32_t qh = 1u << j;
            std::memcpy(block + 4, &qh, 4);
            for (uint32_t probe : {j, (j + 7) % 32}) {
                float x[32] = {};
                x[probe] = 1.0f;
                float y = 0.0f;
                k.tile_matvec(DType::Q5_1, block, 1, 32, x, &y);
                EXPECT_NEAR(y, probe == j ? 16.25f : 0.25f, 1e-5) << "bit " << j << " probe " << probe;
            }
        }
        // Q5_0, d = 1: q = nibble | bit << 4, minus 16.
        uint8_t q50[22] = {};
        const uint16_t one = 0x3C00;
        std::memcpy(q50, &one, 2);
        const uint32_t qh = 0xA5A5F00Fu;
        std::memcpy(q50 + 2, &qh, 4);
        for (int i = 0; i < 16; ++i) q50[6 + i] = static_cast<uint8_t>((i * 7 + 3) & 0xFF);
        for (uint32_t c = 0; c < 32; ++c) {
            float x[32] = {};
            x[c] = 1.0f;
            float y = 0.0f;
            k.tile_matvec(DType::Q5_0, q50, 1, 32, x, &y);
            const int nibble = c < 16 ? (q50[6 + c] & 0xF) : (q50[6 + c - 16] >> 4);
            EXPECT_NEAR(y, float((nibble | int((qh >> c) & 1u) << 4) - 16), 1e-5) << "weight " << c;
        }
    }
}

} // namespace
} // namespace ggml_tile_test
} // namespace cflow
