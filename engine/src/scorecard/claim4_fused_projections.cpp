// Claim 4, fused projections: a layer's QKV (and gate/up) tiles are stored interleaved by output
// stripe in one segment, so one matvec call serves all parts from one pass over the activation.
// Measured on a real file: the interleaving is read from the tile headers, and the fused walk
// (one call over the segment, as Session::matvec does) is run against an unfused one (one call
// per part) with a counter on every activation pass, and both are timed.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/kernels/kernels.h"
#include "scorecard/scorecard_internal.h"

namespace cflow {

namespace {

constexpr const char* kClaim4Title = "Fused projections";
using Clock = std::chrono::steady_clock;

struct Walk {
    uint64_t activationPasses = 0;  // passes over x: int8 paths quantize it, f32 paths stream it per stripe set
    double seconds = 1e30;
};

// One matvec call over the given stripes: what Session::matvec_tiles does on one thread. The
// activation is quantized (int8 paths) once per call: one pass over x per call.
void call(const Kernels& k, const SegmentView& seg, const std::vector<size_t>& stripes, const float* x, uint8_t* slices,
          std::vector<std::vector<float>>& out, Walk& walk) {
    ++walk.activationPasses;
    // As the session: one quantized activation only where every tile reads the same slice layout.
    bool quantized = k.quantize_slice != nullptr;
    for (const TileRef& tile : seg.tiles)
        quantized = quantized && (k.quantized_dtypes & dtype_bit(tile.dtype)) &&
                    slice_dtype(tile.dtype) == slice_dtype(seg.tiles.front().dtype);
    if (quantized) {
        const StripeRef& first = seg.stripes[stripes.front()];
        for (uint32_t t = 0; t < first.n_tiles; ++t) {
            const TileRef& tile = seg.tiles[first.first_tile + t];
            k.quantize_slice(slice_dtype(seg.tiles.front().dtype), x + tile.col_offset, tile.cols, slices + (tile.col_offset / kTileCols) * kQuantizedSliceBytes);
        }
    }
    for (size_t s : stripes) {
        const StripeRef& stripe = seg.stripes[s];
        float* y = out[stripe.part].data() + stripe.row_offset;  // [stripe.rows]
        std::fill(y, y + stripe.rows, 0.0f);
        for (uint32_t t = 0; t < stripe.n_tiles; ++t) {
            const TileRef& tile = seg.tiles[stripe.first_tile + t];
            if (quantized)
                k.tile_matvec_quantized(tile.dtype, tile.payload, tile.rows, tile.cols,
                                        slices + (tile.col_offset / kTileCols) * kQuantizedSliceBytes, y);
            else
                k.tile_matvec(tile.dtype, tile.payload, tile.rows, tile.cols, x + tile.col_offset, y);
        }
    }
}

// True when the segment's stripes, in file order, take the parts in turn: stripe i of every part
// before stripe i + 1 of any (a part with fewer rows, K/V under GQA, simply runs out first).
bool interleaved(const SegmentView& seg) {
    std::vector<uint32_t> seen(seg.parts.size(), 0);  // [parts] stripes of each part so far
    uint32_t last_index = 0;
    for (size_t s = 0; s < seg.stripes.size(); ++s) {
        if (s > 0 && seg.tiles[seg.stripes[s].first_tile].payload < seg.tiles[seg.stripes[s - 1].first_tile].payload)
            return false;
        const uint32_t index = seen[seg.stripes[s].part]++;
        if (index < last_index) return false;
        last_index = index;
    }
    return true;
}

} // namespace

ClaimResult scorecard_claim4_fused_projections(const std::string& path, const ScorecardOptions& options) {
    using namespace scorecard;
    const Kernels& k = active_kernels();
    const bool int8 = isa_quantizes_activations(k.isa);
    const int reps = options.quick ? 50 : 400;
    std::string method =
        "layer 0 of " + (path.empty() ? std::string("(no model)") : path) +
        ": stripes of the QKV and gate/up segments checked for interleaving by part in file order; fused = one "
        "matvec call over the whole segment (as the forward pass runs it), unfused = one call per part; activation "
        "passes counted per call (kernel " + std::string(isa_name(k.isa)) +
        (int8 ? ", which quantizes the activation once per call" : ", an f32 path that quantizes nothing") +
        "), both walks timed on one thread, best of " + std::to_string(reps) +
        "; proven if the segments are interleaved, unfused/fused passes equals the part count (3 QKV, 2 gate/up) "
        "and fused is not slower than unfused by more than 5%, refuted if not interleaved, else inconclusive";
    if (path.empty()) return not_measurable(4, kClaim4Title, method, "no model was given");
    auto model = Model::load(path);
    if (!model) return not_measurable(4, kClaim4Title, method, model.error());
    const LayerWeights& w = (*model)->layers().front();
    ClaimResult r;
    r.claim = 4;
    r.title = kClaim4Title;
    r.method = method;
    std::vector<uint8_t> slice_store(64 * kQuantizedSliceBytes + kQuantizedSliceAlign);  // up to 64 slices of 256 columns
    const auto base = reinterpret_cast<uintptr_t>(slice_store.data());
    uint8_t* slices = slice_store.data() + (kQuantizedSliceAlign - base % kQuantizedSliceAlign) % kQuantizedSliceAlign;
    bool all_interleaved = true, all_counts = true, all_fast = true;
    for (const auto& [seg, name] : {std::pair{w.qkv, "qkv"}, std::pair{w.gate_up, "gate_up"}}) {
        if (!seg || seg->stripes.empty() || seg->cols > 64 * kTileCols) continue;
        const size_t parts = seg->parts.size();
        const std::vector<float> x = random_vector(seg->cols, 6);
        std::vector<std::vector<float>> out(parts);
        for (size_t p = 0; p < parts; ++p) out[p].resize(seg->parts[p].rows);  // [part rows]
        std::vector<size_t> all(seg->stripes.size());
        std::vector<std::vector<size_t>> per_part(parts);
        for (size_t s = 0; s < all.size(); ++s) {
            all[s] = s;
            per_part[seg->stripes[s].part].push_back(s);
        }
        Walk fused, unfused;
        for (int rep = 0; rep < reps; ++rep) {
            Walk f, u;
            auto t0 = Clock::now();
            call(k, *seg, all, x.data(), slices, out, f);
            f.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
            t0 = Clock::now();
            for (const auto& stripes : per_part) call(k, *seg, stripes, x.data(), slices, out, u);
            u.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
            fused = {f.activationPasses, std::min(fused.seconds, f.seconds)};
            unfused = {u.activationPasses, std::min(unfused.seconds, u.seconds)};
        }
        const bool inter = interleaved(*seg);
        const double pass_ratio = double(unfused.activationPasses) / double(fused.activationPasses);
        all_interleaved = all_interleaved && inter;
        all_counts = all_counts && int8 && pass_ratio == double(parts);
        all_fast = all_fast && fused.seconds <= 1.05 * unfused.seconds;
        const std::string n(name);
        r.measured.push_back({n + "_parts", double(parts), "count"});
        r.measured.push_back({n + "_interleaved_by_stripe", inter ? 1.0 : 0.0, "bool"});
        r.measured.push_back({n + "_activation_passes_fused", double(fused.activationPasses), "count"});
        r.measured.push_back({n + "_activation_passes_unfused", double(unfused.activationPasses), "count"});
        r.measured.push_back({n + "_fused_us", fused.seconds * 1e6, "us"});
        r.measured.push_back({n + "_unfused_us", unfused.seconds * 1e6, "us"});
    }
    if (r.measured.empty()) return not_measurable(4, kClaim4Title, method, path + " layer 0 has no tiled QKV or gate/up segment");
    if (!all_interleaved) {
        r.verdict = Verdict::Refuted;
        r.reason = "a segment's stripes are not interleaved by part: one pass cannot serve all parts";
    } else if (!int8) {
        r.verdict = Verdict::Inconclusive;
        r.reason = "interleaved, but kernel " + std::string(isa_name(k.isa)) +
                   " reads each tile's activation slice itself, so fused and unfused load the activation equally often";
    } else if (!all_counts) {
        r.verdict = Verdict::Inconclusive;
        r.reason = "the unfused/fused activation pass counts differ from the part counts";
    } else if (!all_fast) {
        r.verdict = Verdict::Inconclusive;
        r.reason = "fewer activation passes, but the fused walk was more than 5% slower than the unfused one";
    } else {
        r.verdict = Verdict::Proven;
        r.reason = "stripes interleaved by part; one activation pass serves 3 (QKV) and 2 (gate/up) parts, and the fused "
                   "walk is no slower (see fused_us / unfused_us)";
    }
    return r;
}

} // namespace cflow
