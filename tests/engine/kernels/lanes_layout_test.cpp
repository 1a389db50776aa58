// The lanes layout (kernels/lanes_layout.h) and the int8 kernel that reads it.
//  * repack then unpack gives the file layout back byte for byte, and the repacked bytes are a
//    permutation of the same count (the byte count of every tile is unchanged);
//  * tiles the layout does not cover are named by lanes_layout_supported;
//  * tile_matvec_quantized_lanes on a repacked tile equals tile_matvec_quantized on the original
//    within the reassociation bound of the row (the same exact int32 block dots; f32 additions
//    in another order), with the activations' int8 rounding added to |x| as in kernels_test.cpp;
//  * paths without a lanes kernel say so (null), and the engine falls back to unpacking.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cflow/engine/kernels/kernels.h"
#include "cflow/engine/kernels/lanes_layout.h"
#include "cflow/formats/tile_codec.h"
#include "cflow/formats/tile_plan.h"
#include "quantized_tiles.h"

namespace cflow {
namespace {

constexpr double kLanesUnitRoundoff = std::numeric_limits<float>::epsilon() / 2;
double lanes_gamma_k(double k) { return k * kLanesUnitRoundoff / (1.0 - k * kLanesUnitRoundoff); }
// The same two-sided bound kernels_test.cpp derives (kReassocRelTol): both orders of f32
// additions are within gamma of the exact sum, so they are within twice that of each other.
double reassoc_rel_tol(uint32_t n) { return lanes_gamma_k(n + 1.0) + lanes_gamma_k(n + 8.0); }
// Activation int8 rounding: half a step of amax / 127 per element (kernels_test.cpp's kVnniActQuantTol).
constexpr double kActQuantTol = 0.5 / 127.0 + 1e-6;

float lanes_weight_at(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, uint32_t r, uint32_t c) {
    const uint32_t groups = groups_per_row(cols), g = c / kQuantGroup, i = c % kQuantGroup;
    uint16_t h;
    std::memcpy(&h, payload + (size_t(r) * groups + g) * 2, 2);
    const uint8_t* block = payload + size_t(rows) * groups * 2 + (size_t(r) * groups + g) * (dtype == DType::Q4_0 ? 16 : 32);
    const int q = dtype == DType::Q8_0 ? static_cast<int8_t>(block[i]) : (i < 16 ? (block[i] & 0x0F) : (block[i - 16] >> 4)) - 8;
    return f16_to_f32(h) * static_cast<float>(q);
}

const std::pair<uint32_t, uint32_t> kLanesShapes[] = {{128, 256}, {16, 32}, {48, 96}, {112, 128}, {128, 160}, {64, 224}};

TEST(LanesLayout, RepackThenUnpackIsTheIdentity) {
    std::mt19937 rng(5);
    for (DType dtype : {DType::Q4_0, DType::Q8_0})
        for (const auto& [rows, cols] : kLanesShapes) {
            ASSERT_TRUE(lanes_layout_supported(dtype, rows, cols));
            const auto payload = test::random_quantized_tile(dtype, rows, cols, rng);
            std::vector<uint8_t> lanes(payload.size(), 0xAB), back(payload.size(), 0xCD);
            repack_tile_lanes(dtype, payload.data(), rows, cols, lanes.data());
            unpack_tile_lanes(dtype, lanes.data(), rows, cols, back.data());
            EXPECT_EQ(back, payload) << dtype_name(dtype) << " " << rows << "x" << cols;
            EXPECT_NE(lanes, payload) << "the layout should move bytes";
        }
}

TEST(LanesLayout, CoversWholeLaneGroupsAndBlocksOfTheInt8Types) {
    EXPECT_TRUE(lanes_layout_supported(DType::Q4_0, 128, 256));
    EXPECT_TRUE(lanes_layout_supported(DType::Q8_0, 16, 32));
    EXPECT_FALSE(lanes_layout_supported(DType::Q4_0, 120, 256)) << "rows off the 16-row lane groups";
    EXPECT_FALSE(lanes_layout_supported(DType::Q4_0, 128, 100)) << "a partial last block";
    EXPECT_FALSE(lanes_layout_supported(DType::F16, 128, 256));
    EXPECT_FALSE(lanes_layout_supported(DType::F32, 128, 256));
    EXPECT_FALSE(lanes_layout_supported(DType::Q4_0, 0, 256));
}

TEST(LanesLayout, KernelMatchesTheFileLayoutKernelWithinTheReassociationBound) {
    bool ran = false;
    for (Isa isa : {Isa::Avx512Vnni, Isa::AvxVnni, Isa::Avx2Int8}) {
        if (!isa_supported(isa)) {
            std::printf("[ skip ] %s: this CPU/OS lacks the path\n", std::string(isa_name(isa)).c_str());
            continue;
        }
        const Kernels& k = kernels_for(isa);
        if (!k.tile_matvec_quantized_lanes) {
            std::printf("[ info ] %s has no lanes kernel: the session unpacks lanes tiles for it\n",
                        std::string(isa_name(isa)).c_str());
            continue;
        }
        ran = true;
        std::mt19937 rng(11u + static_cast<unsigned>(isa));
        double worst = 0;
        for (DType dtype : {DType::Q4_0, DType::Q8_0})
            for (const auto& [rows, cols] : kLanesShapes) {
                const auto payload = test::random_quantized_tile(dtype, rows, cols, rng);
                std::vector<uint8_t> lanes(payload.size());
                repack_tile_lanes(dtype, payload.data(), rows, cols, lanes.data());
                std::vector<float> x(cols);
                std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
                for (float& v : x) v = dist(rng);
                alignas(kQuantizedSliceAlign) uint8_t slice[kQuantizedSliceBytes];
                k.quantize_slice(dtype, x.data(), cols, slice);
                std::vector<float> expected(rows, 0.25f), got(rows, 0.25f);
                k.tile_matvec_quantized(dtype, payload.data(), rows, cols, slice, expected.data());
                k.tile_matvec_quantized_lanes(dtype, lanes.data(), rows, cols, slice, got.data());
                for (uint32_t r = 0; r < rows; ++r) {
                    double magnitude = 0.25;  // |y0|
                    for (uint32_t c = 0; c < cols; ++c)
                        magnitude += std::fabs(lanes_weight_at(dtype, payload.data(), rows, cols, r, c)) *
                                     (std::fabs(x[c]) * (1.0 + kActQuantTol) + 3.0 * kActQuantTol);
                    const double bound = reassoc_rel_tol(cols) * 2.0 * magnitude;
                    const double err = std::fabs(double(got[r]) - expected[r]);
                    ASSERT_LE(err, bound) << isa_name(isa) << " " << dtype_name(dtype) << " " << rows << "x" << cols << " row " << r
                                          << ": " << got[r] << " vs " << expected[r];
                    worst = std::max(worst, err / bound);
                }
            }
        std::printf("[ info ] %s lanes kernel: max |lanes - file layout| / bound = %.3g\n", std::string(isa_name(isa)).c_str(), worst);
    }
    if (!ran) GTEST_SKIP() << "no int8 path with a lanes kernel on this CPU (AVX-512 VNNI)";
}

// The batched-prefill kernel on a lanes tile: every token count (it always takes the lanes walk),
// outputs strided as the engine lays them out, each within the same bound of the per-token
// file-layout matvec.
TEST(LanesLayout, MatmatMatchesPerTokenFileLayoutMatvec) {
    bool ran = false;
    for (Isa isa : {Isa::Avx512Vnni, Isa::AvxVnni, Isa::Avx2Int8}) {
        if (!isa_supported(isa) || !kernels_for(isa).tile_matmat_quantized_lanes) continue;
        ran = true;
        const Kernels& k = kernels_for(isa);
        std::mt19937 rng(23u + static_cast<unsigned>(isa));
        for (DType dtype : {DType::Q4_0, DType::Q8_0})
            for (const auto& [rows, cols] : kLanesShapes)
                for (uint32_t tokens : {1u, 3u, 4u, 7u, 12u, 33u}) {
                    const auto payload = test::random_quantized_tile(dtype, rows, cols, rng);
                    std::vector<uint8_t> lanes(payload.size());
                    repack_tile_lanes(dtype, payload.data(), rows, cols, lanes.data());
                    const size_t yStride = rows + 5;
                    std::vector<float> x(size_t(tokens) * cols);
                    std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
                    for (float& v : x) v = dist(rng);
                    test::QuantizedSlices slices(tokens);
                    uint8_t* aligned = slices.data();
                    std::vector<float> expected(tokens * yStride, 0.25f), got(tokens * yStride, 0.25f);
                    for (uint32_t t = 0; t < tokens; ++t) {
                        k.quantize_slice(dtype, x.data() + size_t(t) * cols, cols, aligned + t * kQuantizedSliceBytes);
                        k.tile_matvec_quantized(dtype, payload.data(), rows, cols, aligned + t * kQuantizedSliceBytes,
                                                expected.data() + t * yStride);
                    }
                    k.tile_matmat_quantized_lanes(dtype, lanes.data(), rows, cols, aligned, kQuantizedSliceBytes, tokens, got.data(),
                                                  yStride);
                    for (size_t i = 0; i < expected.size(); ++i) {
                        const uint32_t t = uint32_t(i / yStride), r = uint32_t(i % yStride);
                        if (r >= rows) {
                            ASSERT_EQ(got[i], expected[i]) << "row " << r << " lies outside the tile";
                            continue;
                        }
                        double magnitude = 0.25;
                        for (uint32_t c = 0; c < cols; ++c)
                            magnitude += std::fabs(lanes_weight_at(dtype, payload.data(), rows, cols, r, c)) *
                                         (std::fabs(x[size_t(t) * cols + c]) * (1.0 + kActQuantTol) + 3.0 * kActQuantTol);
                        ASSERT_LE(std::fabs(double(got[i]) - expected[i]), reassoc_rel_tol(cols) * 2.0 * magnitude)
                            << isa_name(isa) << " " << dtype_name(dtype) << " " << rows << "x" << cols << " tokens " << tokens
                            << " token " << t << " row " << r;
                    }
                }
    }
    if (!ran) GTEST_SKIP() << "no int8 path with a lanes kernel on this CPU (AVX-512 VNNI)";
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
        if (isa_supported(isa)) {
            EXPECT_EQ(kernels_for(isa).tile_matvec_quantized_lanes, nullptr) << isa_name(isa);
        }
    }
}

} // namespace
} // namespace cflow
