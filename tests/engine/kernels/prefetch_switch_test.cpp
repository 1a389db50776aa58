// set_explicit_prefetch(): the switch claim 6 of the scorecard flips. Prefetch hints change no
// arithmetic, so every int8 path gives bit-identical outputs with them on and off, and the
// switch reads back what was set.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cflow/engine/kernels/kernels.h"
#include "cflow/formats/cflow_layout.h"
#include "cflow/formats/tile_codec.h"
#include "cflow/formats/tile_plan.h"

namespace cflow {
namespace {

TEST(PrefetchSwitch, HintsOffGiveBitIdenticalOutputs) {
    EXPECT_TRUE(explicit_prefetch_enabled());  // the default
    const uint32_t rows = kTileRows, cols = kTileCols;
    std::vector<float> w(size_t(rows) * cols), x(cols);  // W: [rows x cols] row-major, x: [cols]
    for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i * 7919 % 97) - 48) / 64.0f;
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 31 % 17) - 8) / 8.0f;
    std::vector<uint8_t> payload(tile_payload_bytes(DType::Q4_0, rows, cols));
    encode_tile(DType::Q4_0, w.data(), cols, rows, cols, payload.data());
    int tested = 0;
    for (Isa isa : {Isa::Avx2Int8, Isa::AvxVnni, Isa::Avx512Vnni}) {
        if (!isa_supported(isa)) continue;
        SCOPED_TRACE(std::string(isa_name(isa)));
        EXPECT_TRUE(isa_issues_explicit_prefetch(isa));
        const Kernels& k = kernels_for(isa);
        std::vector<float> on(rows, 0.0f), off(rows, 0.0f);
        set_explicit_prefetch(true);
        k.tile_matvec(DType::Q4_0, payload.data(), rows, cols, x.data(), on.data());
        set_explicit_prefetch(false);
        EXPECT_FALSE(explicit_prefetch_enabled());
        k.tile_matvec(DType::Q4_0, payload.data(), rows, cols, x.data(), off.data());
        set_explicit_prefetch(true);
        EXPECT_EQ(std::memcmp(on.data(), off.data(), rows * sizeof(float)), 0);
        ++tested;
    }
    EXPECT_FALSE(isa_issues_explicit_prefetch(Isa::Scalar));
    if (tested == 0) GTEST_SKIP() << "this CPU has no int8 kernel path (the only ones that prefetch)";
}

} // namespace
} // namespace cflow
