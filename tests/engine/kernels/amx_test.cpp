// AMX int8 tiles under the AVX-512 VNNI path's batched prefill (kernels.h, amx_available()):
// the tile walk computes the same exact int32 block dots as the vpdpbusd walk and then the same
// f32 operations in the same order, so every output must be bit-identical with AMX on and off,
// for the file-layout matmat (from kMatmatLaneTokens tokens) and the lanes matmat alike: token
// counts around the 16-token tile (the rest goes to the vpdpbusd walk), row counts off the
// 16-row lane group (padded lanes), odd block counts (the unpaired last block), both dtypes.
// Skipped with the reason where the CPU, the OS or the process lacks AMX.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cflow/engine/kernels/kernels.h"
#include "cflow/engine/kernels/lanes_layout.h"
#include "quantized_tiles.h"

namespace cflow {
namespace {

// Restores the process-wide switch whatever the test does.
struct AmxSwitch {
    ~AmxSwitch() { set_amx_enabled(true); }
};

struct Outputs {
    std::vector<float> fileLayout, lanes;  // [tokens x yStride]
};

Outputs run(const Kernels& k, DType dtype, const std::vector<uint8_t>& payload, const std::vector<uint8_t>& lanes, uint32_t rows,
            uint32_t cols, uint32_t tokens, test::QuantizedSlices& slices, size_t yStride) {
    Outputs out{std::vector<float>(tokens * yStride, 0.5f), std::vector<float>(tokens * yStride, 0.5f)};
    k.tile_matmat_quantized(dtype, payload.data(), rows, cols, slices.data(), kQuantizedSliceBytes, tokens, out.fileLayout.data(),
                            yStride);
    if (!lanes.empty())
        k.tile_matmat_quantized_lanes(dtype, lanes.data(), rows, cols, slices.data(), kQuantizedSliceBytes, tokens, out.lanes.data(),
                                      yStride);
    return out;
}

TEST(Amx, PrefillOutputsAreBitIdenticalWithTilesOnAndOff) {
    if (!isa_supported(Isa::Avx512Vnni)) GTEST_SKIP() << "the AMX walk sits under the AVX-512 VNNI path, which this CPU/OS lacks";
    if (!amx_available())
        GTEST_SKIP() << "AMX-INT8 unavailable here (the CPU lacks it, the OS does not save tile state, or it refused this process)";
    AmxSwitch restore;
    const Kernels& k = kernels_for(Isa::Avx512Vnni);
    std::mt19937 rng(41);
    const std::pair<uint32_t, uint32_t> shapes[] = {{128, 256}, {16, 32}, {48, 96}, {120, 256}, {128, 160}, {8, 64}};
    int compared = 0;
    for (DType dtype : {DType::Q4_0, DType::Q8_0})
        for (const auto& [rows, cols] : shapes)
            for (uint32_t tokens : {16u, 17u, 31u, 32u, 47u, 64u}) {
                const auto payload = test::random_quantized_tile(dtype, rows, cols, rng);
                std::vector<uint8_t> lanes;
                if (lanes_layout_supported(dtype, rows, cols)) {
                    lanes.resize(payload.size());
                    repack_tile_lanes(dtype, payload.data(), rows, cols, lanes.data());
                }
                std::vector<float> x(size_t(tokens) * cols);
                std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
                for (float& v : x) v = dist(rng);
                test::QuantizedSlices slices(tokens);
                for (uint32_t t = 0; t < tokens; ++t) k.quantize_slice(dtype, x.data() + size_t(t) * cols, cols, slices.slice(t));
                const size_t yStride = rows + 3;
                set_amx_enabled(true);
                ASSERT_TRUE(amx_enabled());
                const Outputs tiles = run(k, dtype, payload, lanes, rows, cols, tokens, slices, yStride);
                set_amx_enabled(false);
                ASSERT_FALSE(amx_enabled());
                const Outputs vnni = run(k, dtype, payload, lanes, rows, cols, tokens, slices, yStride);
                const std::string what = std::string(dtype_name(dtype)) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
                                         ", " + std::to_string(tokens) + " tokens";
                for (size_t i = 0; i < vnni.fileLayout.size(); ++i) {
                    // Bit-identical, so compare the representations: equal NaNs would also pass.
                    ASSERT_EQ(std::memcmp(&tiles.fileLayout[i], &vnni.fileLayout[i], sizeof(float)), 0)
                        << what << ", file layout, output " << i << ": " << tiles.fileLayout[i] << " vs " << vnni.fileLayout[i];
                    if (!lanes.empty()) {
                        ASSERT_EQ(std::memcmp(&tiles.lanes[i], &vnni.lanes[i], sizeof(float)), 0)
                            << what << ", lanes, output " << i << ": " << tiles.lanes[i] << " vs " << vnni.lanes[i];
                    }
                }
                for (size_t i = 0; i < vnni.fileLayout.size(); ++i) {
                    if (i % yStride < rows) continue;
                    ASSERT_EQ(tiles.fileLayout[i], 0.5f) << what << ": a row outside the tile was written";
                }
                ++compared;
            }
    std::printf("[ info ] AMX on/off bit-identical over %d (dtype, shape, tokens) cases\n", compared);
}

} // namespace
} // namespace cflow
