// Claim 5, compute-order layout: the byte ranges the forward pass consumes, listed in the order
// it consumes them, must have non-decreasing file offsets (a sequential read the OS readahead
// can follow). The consumption order is transcribed from engine/src/forward/combine_styles.cpp
// and layer_ops.cpp (not from formats/schedule_order.h, which the writer uses: checking the
// writer's order against itself could not fail).
#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <iterator>

#include "cflow/formats/cflow_reader.h"
#include "cflow/formats/tile_plan.h"
#include "scorecard/scorecard_internal.h"

namespace cflow {

namespace {

constexpr const char* kClaim5Title = "Compute-order file layout";

const char* role_label(SegmentRole r) {
    static const char* names[] = {"attn_norm", "q_norm", "k_norm", "qkv", "qkv_bias", "attn_out", "ffn_norm",
                                  "gate_up", "down", "moe_norm", "router", "expert_table", "expert_bank",
                                  "shared_gate_up", "shared_down", "shared_gate", "output_norm", "lm_head", "token_embd",
                                  "attn_post_norm", "ffn_post_norm", "attn_sinks", "attn_out_bias", "router_bias",
                                  "expert_bias"};
    const auto i = size_t(r);
    return i < std::size(names) ? names[i] : "?";
}

struct OrderBuilder {
    const uint8_t* base;
    std::vector<ReadSpan> spans;

    void segment(const RegionView& region, SegmentRole role, const std::string& where) {
        const SegmentView* seg = region.find(role);
        if (!seg) return;
        const std::string what = where + " " + role_label(role);
        if (seg->tiles.empty()) {
            spans.push_back({seg->offset, seg->bytes, what});
            return;
        }
        // Stripe by stripe, tile by tile: the order matvec_tiles walks (threads take contiguous stripe ranges).
        for (const StripeRef& stripe : seg->stripes)
            for (uint32_t t = 0; t < stripe.n_tiles; ++t) {
                const TileRef& tile = seg->tiles[stripe.first_tile + t];
                const auto header = uint64_t(reinterpret_cast<const uint8_t*>(tile.header) - base);
                spans.push_back({header, sizeof(TileHeader) + tile_payload_bytes(tile.dtype, tile.rows, tile.cols),
                                 what + " tile " + std::to_string(stripe.first_tile + t)});
            }
    }
    void roles(const RegionView& region, std::initializer_list<SegmentRole> list, const std::string& where) {
        for (SegmentRole r : list) segment(region, r, where);
    }
};

// Within attention (layer_ops.cpp): the norm, the fused QKV tiles, their bias, the per-head
// Q/K norms applied to the projections, the output projection.
constexpr std::initializer_list<SegmentRole> kAttention = {SegmentRole::AttnNorm, SegmentRole::Qkv,     SegmentRole::QkvBias,
                                                           SegmentRole::QNorm,    SegmentRole::KNorm,   SegmentRole::AttnSinks,
                                                           SegmentRole::AttnOut,  SegmentRole::AttnOutBias};
constexpr std::initializer_list<SegmentRole> kDense = {SegmentRole::FfnNorm, SegmentRole::GateUp, SegmentRole::Down};
constexpr std::initializer_list<SegmentRole> kRoute = {SegmentRole::MoeNorm, SegmentRole::Router, SegmentRole::RouterBias,
                                                       SegmentRole::ExpertBias};
// run_experts: the routed experts (random access, left out) and then the shared expert.
constexpr std::initializer_list<SegmentRole> kShared = {SegmentRole::SharedGateUp, SegmentRole::SharedDown,
                                                        SegmentRole::SharedGate};

} // namespace

Result<std::vector<ReadSpan>> forward_read_order(const std::string& path) {
    auto file = CflowFile::open(path);
    if (!file) return file.take_error();
    const CflowFile& f = **file;
    const GlobalHeader& h = f.header();
    const auto style = CombineStyle(h.combine_style);
    const uint32_t L = h.n_layers;
    OrderBuilder b{f.file().data(), {}};
    const auto& layers = f.layers();
    const auto where = [](uint32_t l) { return "layer " + std::to_string(l); };
    for (uint32_t l = 0; l < L; ++l) {
        const RegionView& r = layers[l];
        switch (style) {
        case CombineStyle::DelayedSum:
        case CombineStyle::AsyncExperts: {
            // forward_delayed: AsyncExperts dense, route, attention; DelayedSum dense first when
            // dd >= 1, then attention, dense when dd = 0, route. Routed layers' shared experts run at
            // their injection layer min(l + de, L - 1), after that layer's own reads.
            if (style == CombineStyle::AsyncExperts) {
                b.roles(r, kDense, where(l));
                b.roles(r, kRoute, where(l));
                b.roles(r, kAttention, where(l));
            } else {
                if (h.dense_delay >= 1) b.roles(r, kDense, where(l));
                b.roles(r, kAttention, where(l));
                if (h.dense_delay == 0) b.roles(r, kDense, where(l));
                b.roles(r, kRoute, where(l));
            }
            for (uint32_t src = 0; src <= l; ++src)
                if (std::min(src + h.expert_delay, L - 1) == l) b.roles(layers[src], kShared, where(src));
            break;
        }
        case CombineStyle::PipelineRegisters:  // dense, MoE now, attention
            b.roles(r, kDense, where(l));
            b.roles(r, kRoute, where(l));
            b.roles(r, kShared, where(l));
            b.roles(r, kAttention, where(l));
            break;
        default:  // Sequential, ParallelSqrt2, DecoupledStreams, FixedPoint (each block once; its
                  // further iterations re-read bytes already resident): attention, dense, MoE now
            b.roles(r, kAttention, where(l));
            b.roles(r, kDense, where(l));
            b.roles(r, kRoute, where(l));
            b.roles(r, kShared, where(l));
            break;
        }
    }
    b.segment(f.vocab(), SegmentRole::OutputNorm, "vocab");
    if (f.vocab().find(SegmentRole::LmHead)) b.segment(f.vocab(), SegmentRole::LmHead, "vocab");
    else b.segment(f.vocab(), SegmentRole::TokenEmbd, "vocab (tied LM head)");
    return std::move(b.spans);
}

ReadOrderCheck check_read_order(const std::vector<ReadSpan>& spans) {
    ReadOrderCheck c;
    c.spans = spans.size();
    for (size_t i = 1; i < spans.size(); ++i) {
        const ReadSpan& prev = spans[i - 1];
        const ReadSpan& cur = spans[i];
        if (cur.offset < prev.offset) {
            ++c.backward_jumps;
            c.backward_bytes += prev.offset - cur.offset;
            if (c.first_violation.empty())
                c.first_violation = cur.what + " @" + std::to_string(cur.offset) + " after " + prev.what + " @" +
                                    std::to_string(prev.offset);
        } else if (cur.offset > prev.offset + prev.bytes) {
            c.gap_bytes += cur.offset - (prev.offset + prev.bytes);
        }
    }
    return c;
}

ClaimResult scorecard_claim5_compute_order(const std::vector<std::string>& models) {
    using namespace scorecard;
    std::string method =
        "for each file, the non-expert weight ranges (tiles stripe by stripe, raw vectors) listed in the order the "
        "forward pass of its combine style consumes them (transcribed from forward/combine_styles.cpp), then the "
        "output norm and LM head; routed expert tiles and embedding rows (random access by design) left out; "
        "proven if no range starts before the previous one in any file, refuted if any does";
    if (models.empty()) return not_measurable(5, kClaim5Title, method, "no model files were given");
    ClaimResult r;
    r.claim = 5;
    r.title = kClaim5Title;
    uint64_t spans = 0, jumps = 0, backward = 0, gaps = 0, bytes = 0;
    std::string violations, checked;
    for (const std::string& path : models) {
        auto order = forward_read_order(path);
        if (!order) return not_measurable(5, kClaim5Title, method, order.error());
        const ReadOrderCheck c = check_read_order(*order);
        spans += c.spans;
        jumps += c.backward_jumps;
        backward += c.backward_bytes;
        gaps += c.gap_bytes;
        for (const ReadSpan& s : *order) bytes += s.bytes;
        const std::string name = path.substr(path.find_last_of("/\\") + 1);
        checked += (checked.empty() ? "" : ", ") + name;
        if (c.backward_jumps)
            violations += (violations.empty() ? "" : "; ") + name + ": " + std::to_string(c.backward_jumps) +
                          " backward jumps, first " + c.first_violation;
    }
    r.method = method + "; files: " + checked;
    r.measured = {{"files", double(models.size()), "count"},
                  {"ranges_checked", double(spans), "count"},
                  {"bytes_in_read_order", double(bytes), "bytes"},
                  {"backward_jumps", double(jumps), "count"},
                  {"backward_bytes", double(backward), "bytes"},
                  {"forward_gap_bytes", double(gaps), "bytes"}};
    if (jumps == 0) {
        r.verdict = Verdict::Proven;
        r.reason = "offsets never decrease in read order across " + std::to_string(spans) + " ranges";
    } else {
        r.verdict = Verdict::Refuted;
        r.reason = violations;
    }
    return r;
}

} // namespace cflow
