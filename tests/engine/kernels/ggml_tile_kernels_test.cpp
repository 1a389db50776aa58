// Q2_K / Q3_K / IQ4_XS / Q4_1 / Q5_0 / Q5_1 / IQ4_NL / MXFP4 tiles on every SIMD path against the scalar
// kernel (matvec_ggml_tile, kernels_scalar.cpp: ggml's dequantised f32 weights, then an
// index-order f32 dot), on random valid blocks (random bytes, every f16 field a finite value).
//
// Bound. Every path (the int8 ones included: these types never get int8 activations) multiplies
// the very f32 weights w_c the scalar kernel uses (decode_tile_row = dequantize_ggml_row), so only
// the order of the f32 additions differs. With u = 2^-24 and gamma_k = k u / (1 - k u) (Higham
// 3.1), the scalar loop and the SIMD accumulators each differ from the exact sum by at most
// gamma_{n+1} sum_c |w_c x_c| (plus the final add into y), so
//   |simd - scalar| <= (gamma_{n+1} + gamma_{n+8}) (sum_c |w_c x_c| + |y0|),
// the reassociation bound of kernels_test.cpp and kquant_kernels_test.cpp, n = cols.
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

constexpr DType kTypes[] = {DType::Q2_K, DType::Q3_K,   DType::IQ4_XS, DType::Q4_1,
                            DType::Q5_0, DType::Q5_1, DType::IQ4_NL, DType::MXFP4};
constexpr Isa kSimdPaths[] = {Isa::Avx2, Isa::Avx512, Isa::Avx2Int8, Isa::AvxVnni, Isa::Avx512Vnni};
constexpr uint32_t kRowCounts[] = {1, 7, 128};

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
                        const double bound = reassoc_rel_tol(cols) * (terms + std::fabs(double(y0[r])));
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

// These types get no int8 activation slices: no Kernels table claims them, so a matvec over
// their tiles (or a fused segment mixing them with Q4_K) multiplies per tile with f32 activations.
TEST(GgmlTileKernels, NoInt8SliceLayoutClaimsTheTypes) {
    for (const Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Avx2Int8, Isa::AvxVnni, Isa::Avx512Vnni}) {
        if (!isa_supported(isa)) continue;
        const Kernels& k = kernels_for(isa);
        for (const DType dtype : kTypes) {
            EXPECT_EQ(k.quantized_dtypes & dtype_bit(dtype), 0u) << isa_name(isa) << " " << dtype_name(dtype);
            EXPECT_TRUE(kernels::uses_ggml_tile_f32(dtype));
        }
    }
    for (DType k : {DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q4_0}) EXPECT_FALSE(kernels::uses_ggml_tile_f32(k));
}

} // namespace
} // namespace ggml_tile_test
} // namespace cflow
