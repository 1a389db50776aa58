// One token through all layers, for each combine style of the semantics spec
// (../shared/spec/model-semantics.md; decisions in formats/docs/cflow-format.md). Everything is
// driven by header fields; no model-family special cases. Read order per layer follows
// dense_before_attention(): the dense FFN first when its input does not depend on the
// layer's attention, so the file's non-expert bytes are read front to back.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "forward/layer_records.h"
#include "forward/ops.h"
#include "forward/session_state.h"

namespace cflow {
namespace {

float norm2(const std::vector<float>& v) { return layer::norm2(v.data(), v.size()); }

using layer::LayerTimer;

void copy(const std::vector<float>& from, std::vector<float>& to) { std::copy(from.begin(), from.end(), to.begin()); }

} // namespace

Status Session::forward_sequential() {
    Buffers& b = *buf_;
    copy(b.emb, b.x);
    for (uint32_t l = 0; l < model_->header().n_layers; ++l) {
        LayerRecord& rec = telemetry_.layers[l];
        LayerTimer timer{rec};
        const LayerWeights& w = model_->layers()[l];
        attention(l, l, b.x.data(), b.attn_out.data(), rec);
        ops::add(b.x.data(), b.attn_out.data(), b.x.size());
        if (w.gate_up) dense_ffn(l, b.x.data(), b.dense_out.data(), rec);
        if (w.router) {
            // Sequential MoE reads Norm_ffn(x_mid); MoE-only checkpoints store that norm as MoeNorm.
            const SegmentView& norm = w.ffn_norm ? *w.ffn_norm : *w.moe_norm;
            if (auto st = moe_now(l, norm, b.x.data(), b.moe_out.data(), rec); !st) return st;
        }
        if (w.gate_up) ops::add(b.x.data(), b.dense_out.data(), b.x.size());
        if (w.router) ops::add(b.x.data(), b.moe_out.data(), b.x.size());
        rec.residualNorm = norm2(b.x);
    }
    return {};
}

Status Session::forward_parallel_sqrt2() {
    Buffers& b = *buf_;
    const float inv_sqrt2 = 1.0f / std::sqrt(2.0f);
    copy(b.emb, b.x);
    for (uint32_t l = 0; l < model_->header().n_layers; ++l) {
        LayerRecord& rec = telemetry_.layers[l];
        LayerTimer timer{rec};
        const LayerWeights& w = model_->layers()[l];
        attention(l, l, b.x.data(), b.attn_out.data(), rec);
        ops::add(b.x.data(), b.attn_out.data(), b.x.size());
        std::fill(b.dense_out.begin(), b.dense_out.end(), 0.0f);
        std::fill(b.moe_out.begin(), b.moe_out.end(), 0.0f);
        if (w.gate_up) dense_ffn(l, b.x.data(), b.dense_out.data(), rec);
        if (w.router)
            if (auto st = moe_now(l, *w.moe_norm, b.x.data(), b.moe_out.data(), rec); !st) return st;
        for (size_t i = 0; i < b.x.size(); ++i) b.x[i] += (b.dense_out[i] + b.moe_out[i]) * inv_sqrt2;
        rec.residualNorm = norm2(b.x);
    }
    return {};
}

// DelayedSum (1) and AsyncExperts (2): dense FFN on h_{l-dd} (DelayedSum) or the pre-attention
// input (AsyncExperts); each layer's expert output waits in a queue for layer min(l + de, L-1).
Status Session::forward_delayed() {
    Buffers& b = *buf_;
    const GlobalHeader& h = model_->header();
    const bool async = static_cast<CombineStyle>(h.combine_style) == CombineStyle::AsyncExperts;
    const uint32_t L = h.n_layers, dd = h.dense_delay, de = h.expert_delay;
    const size_t ring = b.history.size();
    for (const Routing& r : b.pending)  // left over only after a failed step
        for (uint32_t i = 0; i < r.n; ++i)
            if (r.tickets[i] >= 0 && fetcher_) fetcher_->release(uint32_t(r.tickets[i]));
    b.pending.clear();
    copy(b.emb, b.x);
    for (uint32_t l = 0; l < L; ++l) {
        LayerRecord& rec = telemetry_.layers[l];
        LayerTimer timer{rec};
        const LayerWeights& w = model_->layers()[l];
        std::fill(b.dense_out.begin(), b.dense_out.end(), 0.0f);
        auto route_here = [&](const float* input) {
            Routing r;
            route(l, *w.moe_norm, input, r, rec);
            r.target = uint16_t(std::min(l + de, L - 1));
            rec.injectionLayer = int16_t(r.target);
            b.pending.push_back(std::move(r));
        };
        if (async) {
            if (w.gate_up) dense_ffn(l, b.x.data(), b.dense_out.data(), rec);
            if (w.router) route_here(b.x.data());
            attention(l, l, b.x.data(), b.attn_out.data(), rec);
            ops::add(b.x.data(), b.attn_out.data(), b.x.size());
        } else {
            if (w.gate_up && dd >= 1) {
                const std::vector<float>& src = l < dd ? b.emb : b.history[(l - dd) % ring];
                dense_ffn(l, src.data(), b.dense_out.data(), rec);
            }
            attention(l, l, b.x.data(), b.attn_out.data(), rec);
            ops::add(b.x.data(), b.attn_out.data(), b.x.size());
            if (w.gate_up && dd == 0) dense_ffn(l, b.x.data(), b.dense_out.data(), rec);
            if (w.router) route_here(b.x.data());
        }
        ops::add(b.x.data(), b.dense_out.data(), b.x.size());
        // Inject every queued expert output whose target is this layer, in routing order.
        std::fill(b.moe_out.begin(), b.moe_out.end(), 0.0f);
        bool injected = false;
        for (const Routing& r : b.pending) {
            if (r.target != l) continue;
            if (auto st = run_experts(r, b.moe_out.data(), rec); !st) return st;
            injected = true;
        }
        if (injected) ops::add(b.x.data(), b.moe_out.data(), b.x.size());
        std::erase_if(b.pending, [l](const Routing& r) { return r.target == l; });
        copy(b.x, b.history[l % ring]);
        rec.residualNorm = norm2(b.x);
    }
    return {};
}

Status Session::forward_decoupled() {
    Buffers& b = *buf_;
    const uint32_t L = model_->header().n_layers, interval = model_->params().merge_interval;
    std::vector<float>& a = b.x;
    std::vector<float>& f = b.x2;
    copy(b.emb, a);
    copy(b.emb, f);
    for (uint32_t l = 0; l < L; ++l) {
        LayerRecord& rec = telemetry_.layers[l];
        LayerTimer timer{rec};
        const LayerWeights& w = model_->layers()[l];
        attention(l, l, a.data(), b.attn_out.data(), rec);
        ops::add(a.data(), b.attn_out.data(), a.size());
        if (w.gate_up) dense_ffn(l, f.data(), b.dense_out.data(), rec);
        if (w.router)
            if (auto st = moe_now(l, *w.moe_norm, f.data(), b.moe_out.data(), rec); !st) return st;
        if (w.gate_up) ops::add(f.data(), b.dense_out.data(), f.size());
        if (w.router) ops::add(f.data(), b.moe_out.data(), f.size());
        for (size_t i = 0; i < a.size(); ++i) b.tmp[i] = (a[i] + f[i]) * 0.5f;
        if ((l + 1) % interval == 0 || l + 1 == L) {
            copy(b.tmp, a);
            copy(b.tmp, f);
        }
        rec.residualNorm = norm2(b.tmp);
    }
    return {};  // the final norm reads the merged stream, which is in b.x
}

Status Session::forward_pipeline_registers() {
    Buffers& b = *buf_;
    std::vector<float>& A = b.x2;
    std::vector<float>& X = b.x;
    copy(b.emb, A);
    copy(b.emb, X);
    for (uint32_t l = 0; l < model_->header().n_layers; ++l) {
        LayerRecord& rec = telemetry_.layers[l];
        LayerTimer timer{rec};
        const LayerWeights& w = model_->layers()[l];
        std::fill(b.dense_out.begin(), b.dense_out.end(), 0.0f);
        std::fill(b.moe_out.begin(), b.moe_out.end(), 0.0f);
        if (w.gate_up) dense_ffn(l, X.data(), b.dense_out.data(), rec);
        if (w.router)
            if (auto st = moe_now(l, *w.moe_norm, X.data(), b.moe_out.data(), rec); !st) return st;
        attention(l, l, A.data(), b.attn_out.data(), rec);
        ops::add(A.data(), b.attn_out.data(), A.size());
        for (size_t i = 0; i < X.size(); ++i) X[i] = A[i] + b.dense_out[i] + b.moe_out[i];
        rec.residualNorm = norm2(X);
    }
    return {};  // output is X_{L-1}, in b.x
}

Status Session::forward_fixed_point() {
    Buffers& b = *buf_;
    const uint32_t blocks = model_->header().n_layers, iters = model_->params().n_iter;
    std::vector<float>& y = b.x;
    std::vector<float>& xb = b.x2;
    copy(b.emb, y);
    for (uint32_t blk = 0; blk < blocks; ++blk) {
        const LayerWeights& w = model_->layers()[blk];
        copy(y, xb);
        for (uint32_t t = 0; t < iters; ++t) {
            const uint32_t slot = blk * iters + t;
            LayerRecord& rec = telemetry_.layers[slot];
            LayerTimer timer{rec};
            attention(blk, slot, y.data(), b.attn_out.data(), rec);
            for (size_t i = 0; i < y.size(); ++i) b.tmp[i] = y[i] + b.attn_out[i];  // z = y + a
            std::fill(b.dense_out.begin(), b.dense_out.end(), 0.0f);
            std::fill(b.moe_out.begin(), b.moe_out.end(), 0.0f);
            if (w.gate_up) dense_ffn(blk, b.tmp.data(), b.dense_out.data(), rec);
            if (w.router)
                if (auto st = moe_now(blk, *w.moe_norm, b.tmp.data(), b.moe_out.data(), rec); !st) return st;
            for (size_t i = 0; i < y.size(); ++i) y[i] = xb[i] + b.attn_out[i] + b.dense_out[i] + b.moe_out[i];
            rec.residualNorm = norm2(y);
        }
    }
    return {};
}

} // namespace cflow
