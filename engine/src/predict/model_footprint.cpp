// A model's per-token reads and work from its tile plan: see model_footprint.h.
#include "cflow/engine/predict/model_footprint.h"

#include <algorithm>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/formats/tile_plan.h"

namespace cflow {
namespace {

// A tile as the file stores it: header + payload.
double footprint_tile_bytes(const TileRef& t) { return double(sizeof(TileHeader) + tile_payload_bytes(t.dtype, t.rows, t.cols)); }

void footprint_add_tiles(WeightsByType& into, const std::vector<TileRef>& tiles, double times = 1.0) {
    for (const TileRef& t : tiles) into.add(t.dtype, times * double(t.rows) * t.cols, times * footprint_tile_bytes(t));
}

// Raw (f32) segments every pass reads beside its tiles.
constexpr SegmentRole kFootprintRawRoles[] = {
    SegmentRole::AttnNorm,  SegmentRole::QNorm,      SegmentRole::KNorm,       SegmentRole::QkvBias,
    SegmentRole::AttnSinks, SegmentRole::AttnOutBias, SegmentRole::AttnPostNorm, SegmentRole::FfnNorm,
    SegmentRole::FfnPostNorm, SegmentRole::MoeNorm,  SegmentRole::Router,      SegmentRole::RouterBias,
    SegmentRole::ExpertTable, SegmentRole::ExpertBias, SegmentRole::SharedGate};
// Tiled segments every pass reads whole.
constexpr SegmentRole kFootprintTiledRoles[] = {SegmentRole::Qkv,    SegmentRole::AttnOut,      SegmentRole::GateUp,
                                                SegmentRole::Down,   SegmentRole::SharedGateUp, SegmentRole::SharedDown};

} // namespace

void WeightsByType::add(DType dtype, double weightCount, double byteCount) {
    const size_t i = std::min(size_t(dtype), kFootprintDTypes - 1);
    weights[i] += weightCount;
    bytes[i] += byteCount;
}

double WeightsByType::totalWeights() const {
    double sum = 0;
    for (double w : weights) sum += w;
    return sum;
}

double WeightsByType::totalBytes() const {
    double sum = 0;
    for (double b : bytes) sum += b;
    return sum;
}

DType WeightsByType::dominant() const {
    size_t best = 0;
    for (size_t i = 1; i < kFootprintDTypes; ++i)
        if (bytes[i] > bytes[best]) best = i;
    return DType(best);
}

double ModelFootprint::kvBytesAt(uint32_t positions, double elemBytes) const {
    double values = 0;  // per K or V, over every pass
    for (uint32_t p = 0; p < passes; ++p) {
        const uint32_t ring = p < kvRing.size() ? kvRing[p] : 0;
        values += double(ring > 0 ? std::min(ring, positions) : positions) * nKvHeads * headDim;
    }
    return 2.0 * values * elemBytes;
}

Result<ModelFootprint> model_footprint(const Model& model) {
    const GlobalHeader& h = model.header();
    const ModelParams& params = model.params();
    ModelFootprint f;
    f.fileBytes = model.file().file().size();
    f.passes = model.effective_layers();
    f.nHeads = h.n_heads;
    f.nKvHeads = h.n_kv_heads;
    f.headDim = h.head_dim;
    f.dModel = h.d_model;
    f.vocab = h.vocab_size;
    f.maxSeqLen = h.max_seq_len;
    f.nExperts = h.n_experts;
    f.topK = h.top_k;
    f.expertDelay = h.expert_delay;
    f.widestHidden = std::max({h.d_ff, h.expert_d_ff, params.shared_expert_d_ff});
    const CombineStyle style = static_cast<CombineStyle>(h.combine_style);
    const bool fixedPoint = style == CombineStyle::FixedPoint;
    f.batchedPrefill = style == CombineStyle::Sequential || style == CombineStyle::ParallelSqrt2;
    const uint32_t iterations = fixedPoint && params.n_iter > 0 ? params.n_iter : 1;

    // Stored once: every layer's tiles and experts (for the file's size after re-typing).
    std::vector<WeightsByType> expertMean(model.layers().size());  // [stored layer] one routed expert, averaged
    for (uint32_t l = 0; l < model.layers().size(); ++l) {
        const RegionView& region = model.file().layers()[l];
        for (const SegmentView& s : region.segments) footprint_add_tiles(f.stored, s.tiles);
        if (!model.layers()[l].expert_bank || h.n_experts == 0) continue;
        // Every expert of a bank has the same tile plan (the bank's parts and dtypes), so one
        // expert's tiles stand for all of them: reading every expert's tile headers would fault
        // in the whole bank (a plan of a 30 GB MoE would read most of its file). The table
        // entries alone give each expert's bytes.
        auto first = model.expert(l, 0);
        if (!first) return first.take_error();
        footprint_add_tiles(f.stored, (*first)->gate_up, double(h.n_experts));
        footprint_add_tiles(f.stored, (*first)->down, double(h.n_experts));
        footprint_add_tiles(expertMean[l], (*first)->gate_up);
        footprint_add_tiles(expertMean[l], (*first)->down);
        for (uint32_t e = 0; e < h.n_experts; ++e) {
            auto where = model.expert_location(l, e);
            if (!where) return where.take_error();
            f.expertBankBytes += where->bytes;
            f.expertBytes = std::max(f.expertBytes, where->bytes);
        }
    }

    // Per token: every pass in execution order (FixedPoint: block b iterated n_iter times).
    f.kvRing.assign(f.passes, 0);
    for (uint32_t p = 0; p < f.passes; ++p) {
        const uint32_t l = fixedPoint ? p / iterations : p;
        if (l >= model.layers().size()) break;
        const RegionView& region = model.file().layers()[l];
        for (SegmentRole role : kFootprintTiledRoles)
            if (const SegmentView* s = region.find(role)) footprint_add_tiles(f.perToken, s->tiles);
        for (SegmentRole role : kFootprintRawRoles)
            if (const SegmentView* s = region.find(role)) f.rawBytesPerToken += double(s->bytes);
        if (model.layers()[l].expert_bank && h.n_experts > 0) {
            ++f.moePasses;
            for (size_t t = 0; t < kFootprintDTypes; ++t) {
                f.routedPerToken.weights[t] += h.top_k * expertMean[l].weights[t];
                f.routedPerToken.bytes[t] += h.top_k * expertMean[l].bytes[t];
            }
        }
        if (const uint32_t window = model.attention_window(l); window > 0) f.kvRing[p] = window + Session::kPrefillChunk - 1;
    }

    // Vocabulary region: the output norm and the LM head every token; one embedding row.
    const bool tied = &model.lm_head() == &model.token_embd();
    f.rawBytesPerToken += double(model.output_norm().bytes);
    footprint_add_tiles(f.perToken, model.lm_head().tiles);
    footprint_add_tiles(f.lmHead, model.lm_head().tiles);
    footprint_add_tiles(f.stored, model.lm_head().tiles);
    if (!tied) {
        footprint_add_tiles(f.stored, model.token_embd().tiles);
        f.untouchedEmbeddingBytes = model.token_embd().bytes;
    }
    if (h.vocab_size > 0) f.rawBytesPerToken += double(model.token_embd().bytes) / h.vocab_size;
    return f;
}

double tile_bytes_per_weight(DType dtype) {
    return double(sizeof(TileHeader) + tile_payload_bytes(dtype, kTileRows, kTileCols)) / (double(kTileRows) * kTileCols);
}

ModelFootprint retyped_footprint(const ModelFootprint& f, DType dtype) {
    ModelFootprint r = f;
    const double perWeight = tile_bytes_per_weight(dtype);
    auto retype = [&](const WeightsByType& w) {
        WeightsByType out;
        out.add(dtype, w.totalWeights(), w.totalWeights() * perWeight);
        return out;
    };
    r.perToken = retype(f.perToken);
    r.routedPerToken = retype(f.routedPerToken);
    r.lmHead = retype(f.lmHead);
    r.stored = retype(f.stored);
    const double fileDelta = r.stored.totalBytes() - f.stored.totalBytes();
    r.fileBytes = uint64_t(std::max(0.0, double(f.fileBytes) + fileDelta));
    const double scale = f.stored.totalBytes() > 0 ? r.stored.totalBytes() / f.stored.totalBytes() : 1.0;
    // Experts and the embedding table scale with their own tiles; their dtype mix is not kept
    // separately, so the file-wide ratio stands in (exact when the file has one tile dtype).
    r.expertBankBytes = uint64_t(double(f.expertBankBytes) * scale);
    r.expertBytes = uint64_t(double(f.expertBytes) * scale);
    r.untouchedEmbeddingBytes = uint64_t(double(f.untouchedEmbeddingBytes) * scale);
    return r;
}

} // namespace cflow
