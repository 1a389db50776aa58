// Shared scorecard helpers: the decode loop, A/B verdicts, synthetic Q4_0 matrices, verdict names.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "cflow/formats/tile_codec.h"
#include "cflow/formats/tile_plan.h"
#include "scorecard/scorecard_internal.h"

namespace cflow {

std::string_view verdict_name(Verdict v) {
    switch (v) {
    case Verdict::Proven: return "proven";
    case Verdict::Refuted: return "refuted";
    case Verdict::Inconclusive: return "inconclusive";
    case Verdict::NotMeasurable: return "not measurable here";
    }
    return "inconclusive";
}

namespace scorecard {
namespace {

// splitmix64: a seeded stream independent of the standard library's engines.
uint64_t next_random(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

std::string format_ratio(double r) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3f", r);
    return b;
}

} // namespace

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

AbVerdict ab_verdict(const std::vector<double>& ratios, double threshold, const std::string& better_arm) {
    AbVerdict out;
    if (ratios.empty()) {
        out.reason = "no rounds ran";
        return out;
    }
    out.median = median(ratios);
    out.min = *std::min_element(ratios.begin(), ratios.end());
    out.max = *std::max_element(ratios.begin(), ratios.end());
    const std::string span = "median " + format_ratio(out.median) + ", rounds " + format_ratio(out.min) + ".." +
                             format_ratio(out.max) + ", threshold " + format_ratio(1.0 + threshold);
    if (out.median >= 1.0 + threshold && out.min > 1.0) {
        out.verdict = Verdict::Proven;
        out.reason = better_arm + " wins in every round (" + span + ")";
    } else if (out.max < 1.0 + threshold) {
        out.verdict = Verdict::Refuted;
        out.reason = better_arm + " gains less than the threshold in every round (" + span + "): no measurable benefit";
    } else {
        out.verdict = Verdict::Inconclusive;
        out.reason = "the rounds disagree (" + span + "): the noise is larger than the effect";
    }
    return out;
}

Q4Matrix make_q4_matrix(uint32_t rows, uint32_t cols, uint64_t seed) {
    Q4Matrix m;
    m.rows = rows;
    m.cols = cols;
    m.tileBytes = tile_payload_bytes(DType::Q4_0, kTileRows, kTileCols);
    m.pieceBytes = tile_payload_bytes(DType::Q4_0, 1, kTileCols);
    const uint32_t groups = kTileCols / 32;
    const uint32_t colTiles = cols / kTileCols;
    // One row's piece: [G] f16 scales, then [G] 16-byte nibble blocks (cflow_layout.h).
    // rows x colTiles pieces, generated once and laid out both ways.
    std::vector<uint8_t> pieces(uint64_t(rows) * colTiles * m.pieceBytes);
    uint64_t state = seed;
    const uint16_t scaleLo = f32_to_f16(0.005f), scaleHi = f32_to_f16(0.02f);
    for (uint64_t p = 0; p < uint64_t(rows) * colTiles; ++p) {
        uint8_t* piece = pieces.data() + p * m.pieceBytes;
        for (uint32_t g = 0; g < groups; ++g) {
            const uint16_t s = uint16_t(scaleLo + next_random(state) % uint64_t(scaleHi - scaleLo));
            std::memcpy(piece + g * 2, &s, 2);
        }
        for (uint32_t b = groups * 2; b < m.pieceBytes; b += 8) {
            const uint64_t r = next_random(state);
            std::memcpy(piece + b, &r, std::min<uint64_t>(8, m.pieceBytes - b));
        }
    }
    m.rowMajor = pieces;  // row r, column tile c at (r * colTiles + c) * pieceBytes
    // Tiles: stripe s (rows 128s..), column tile c; within a tile the scales of its 128 rows,
    // then their blocks.
    m.tiled.resize(uint64_t(rows / kTileRows) * colTiles * m.tileBytes);
    const uint64_t scaleBytes = groups * 2, blockBytes = groups * 16;
    for (uint32_t s = 0; s < rows / kTileRows; ++s)
        for (uint32_t c = 0; c < colTiles; ++c) {
            uint8_t* tile = m.tiled.data() + (uint64_t(s) * colTiles + c) * m.tileBytes;
            for (uint32_t r = 0; r < kTileRows; ++r) {
                const uint8_t* piece = pieces.data() + (uint64_t(s * kTileRows + r) * colTiles + c) * m.pieceBytes;
                std::memcpy(tile + r * scaleBytes, piece, scaleBytes);
                std::memcpy(tile + kTileRows * scaleBytes + r * blockBytes, piece + scaleBytes, blockBytes);
            }
        }
    return m;
}

std::vector<float> random_vector(uint32_t n, uint64_t seed) {
    std::vector<float> v(n);
    uint64_t state = seed;
    for (float& x : v) x = float(double(next_random(state) >> 11) / double(1ull << 53) * 2.0 - 1.0);
    return v;
}

ClaimResult not_measurable(int claim, std::string title, std::string method, std::string reason) {
    ClaimResult r;
    r.claim = claim;
    r.title = std::move(title);
    r.method = std::move(method);
    r.verdict = Verdict::NotMeasurable;
    r.reason = std::move(reason);
    return r;
}

} // namespace scorecard

Result<std::vector<ClaimResult>> run_scorecard(const ScorecardInputs& inputs, const ScorecardOptions& options,
                                               const ScorecardProgress& progress, const CancelToken* cancel) {
    std::vector<int> claims = options.claims;
    if (claims.empty()) claims = {1, 2, 3, 4, 5, 6, 7, 8};
    std::vector<ClaimResult> out;
    int done = 0;
    for (int claim : claims) {
        if (cancel && cancel->is_cancelled()) return cancelled_error("scorecard");
        if (progress && !progress(claim, done, int(claims.size()))) return cancelled_error("scorecard");
        switch (claim) {
        case 1: out.push_back(scorecard_claim1_expert_loading(inputs.moe_model, options)); break;
        case 2: out.push_back(scorecard_claim2_tile_locality(options)); break;
        case 3: out.push_back(scorecard_claim3_simd_kernels(options)); break;
        case 4: out.push_back(scorecard_claim4_fused_projections(inputs.trained_model, options)); break;
        case 5: out.push_back(scorecard_claim5_compute_order(inputs.layout_models)); break;
        case 6: out.push_back(scorecard_claim6_prefetch(inputs.dense_cflow, options)); break;
        case 7: out.push_back(scorecard_claim7_critical_path(inputs.trained_model, inputs.moe_model, options)); break;
        case 8: out.push_back(scorecard_claim8_readahead(inputs.dense_cflow, inputs.dense_vflow, options)); break;
        default: return make_error("scorecard: no claim " + std::to_string(claim) + " (claims are 1..8)");
        }
        ++done;
    }
    return out;
}

} // namespace cflow
