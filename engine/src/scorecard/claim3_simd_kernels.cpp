// Claim 3, SIMD Q4 kernels vs scalar: the same tiled Q4_0 matrix-vector product through every
// kernel path this CPU supports, single-threaded, weights resident in cache-sized tiles as the
// engine streams them; throughput in weights per second, results checked against scalar.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "cflow/engine/kernels/kernels.h"
#include "scorecard/scorecard_internal.h"

namespace cflow {

namespace {

constexpr const char* kClaim3Title = "SIMD Q4 kernels vs scalar";
constexpr double kSpeedupThreshold = 2.0;  // best SIMD >= 2x scalar weights/s: proven; <= 1.0: refuted

using Clock = std::chrono::steady_clock;

// y = W x the way Session::matvec_tiles runs one thread's share: int8 paths quantize each
// 256-column slice of x once for the whole matrix, f32 paths read x directly.
void matvec(const Kernels& k, const scorecard::Q4Matrix& m, const float* x, uint8_t* slices, float* y) {
    const uint32_t colTiles = m.cols / kTileCols;
    if (k.quantize_slice)
        for (uint32_t c = 0; c < colTiles; ++c)
            k.quantize_slice(DType::Q4_0, x + c * kTileCols, kTileCols, slices + c * kQuantizedSliceBytes);
    std::fill(y, y + m.rows, 0.0f);
    for (uint32_t s = 0; s < m.rows / kTileRows; ++s)
        for (uint32_t c = 0; c < colTiles; ++c) {
            const uint8_t* tile = m.tiled.data() + (uint64_t(s) * colTiles + c) * m.tileBytes;
            if (k.quantize_slice)
                k.tile_matvec_quantized(DType::Q4_0, tile, kTileRows, kTileCols, slices + c * kQuantizedSliceBytes,
                                        y + s * kTileRows);
            else
                k.tile_matvec(DType::Q4_0, tile, kTileRows, kTileCols, x + c * kTileCols, y + s * kTileRows);
        }
}

} // namespace

ClaimResult scorecard_claim3_simd_kernels(const ScorecardOptions& options) {
    using namespace scorecard;
    const uint32_t rows = options.quick ? 256 : 1024, cols = options.quick ? 1024 : 4096;
    const int reps = options.quick ? 5 : 20;
    const Q4Matrix m = make_q4_matrix(rows, cols, 4);
    const std::vector<float> x = random_vector(cols, 5);
    // [cols/256 x kQuantizedSliceBytes] quantized slices, kQuantizedSliceAlign-aligned
    std::vector<uint8_t> slice_store((cols / kTileCols) * kQuantizedSliceBytes + kQuantizedSliceAlign);
    const auto base = reinterpret_cast<uintptr_t>(slice_store.data());
    uint8_t* slices = slice_store.data() + (kQuantizedSliceAlign - base % kQuantizedSliceAlign) % kQuantizedSliceAlign;

    ClaimResult r;
    r.claim = 3;
    r.title = kClaim3Title;
    char geometry[128];
    std::snprintf(geometry, sizeof geometry, "%u x %u Q4_0 tiles (%.1f MiB), one thread, best of %d", rows, cols,
                  double(m.tiled.size()) / (1 << 20), reps);
    r.method = std::string("y = W x over ") + geometry +
               " for every kernel path the CPU supports (int8 paths quantize x once per matrix as the engine does); "
               "throughput = weights / best time; each path's result compared with scalar (max relative error); "
               "proven if the best SIMD path is >= 2x scalar, refuted if no SIMD path beats scalar, else inconclusive";
    std::vector<float> reference(rows), y(rows);  // [rows]
    double scalar_rate = 0, best_rate = 0;
    std::string best_isa;
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx2Int8, Isa::AvxVnni, Isa::Avx512, Isa::Avx512Vnni}) {
        if (!isa_supported(isa)) continue;
        const Kernels& k = kernels_for(isa);
        double best = 1e30;
        for (int rep = 0; rep < reps; ++rep) {
            const auto t0 = Clock::now();
            matvec(k, m, x.data(), slices, y.data());
            best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
        }
        const double rate = double(rows) * cols / best;  // weights per second
        const std::string name(isa_name(isa));
        if (isa == Isa::Scalar) {
            reference = y;
            scalar_rate = rate;
        } else if (rate > best_rate) {
            best_rate = rate;
            best_isa = name;
        }
        double err = 0, norm = 0;
        for (uint32_t i = 0; i < rows; ++i) {
            err = std::max(err, double(std::abs(y[i] - reference[i])));
            norm = std::max(norm, double(std::abs(reference[i])));
        }
        r.measured.push_back({name + "_gweights_per_second", rate / 1e9, "Gweights/s"});
        if (isa != Isa::Scalar) {
            r.measured.push_back({name + "_speedup_over_scalar", rate / scalar_rate, "x"});
            r.measured.push_back({name + "_max_relative_error", norm > 0 ? err / norm : err, "ratio"});
        }
    }
    if (best_isa.empty()) {
        r.verdict = Verdict::NotMeasurable;
        r.reason = "this CPU (or build) offers no SIMD kernel path, only scalar";
        return r;
    }
    const double speedup = best_rate / scalar_rate;
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s runs Q4_0 at %.2fx the scalar path (%.2f vs %.2f Gweights/s)", best_isa.c_str(),
                  speedup, best_rate / 1e9, scalar_rate / 1e9);
    r.verdict = speedup >= kSpeedupThreshold ? Verdict::Proven : speedup <= 1.0 ? Verdict::Refuted : Verdict::Inconclusive;
    r.reason = buf;
    return r;
}

} // namespace cflow
