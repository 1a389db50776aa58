// Batched prefill: a chunk of prompt tokens through the layers together. Each weight tile is
// read once per chunk and multiplied with every token of it (Kernels::tile_matmat_quantized on
// the int8 paths; the f32 paths multiply token by token while the tile is in cache), so the
// weight stream is amortised over the chunk instead of read once per token. Every operation on
// a token's row is the one step() performs on that token, in the same order, so logits and KV
// cache are bit-identical to the token-by-token path, except where a rows-in-lanes matmat
// reorders a row's f32 additions (Kernels::tile_matmat_quantized, from kMatmatLaneTokens).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <new>
#include <string>

#include "forward/lanes_arena.h"
#include "forward/layer_records.h"
#include "forward/ops.h"
#include "forward/session_state.h"

namespace cflow {
namespace {

using Clock = std::chrono::steady_clock;

using layer::LayerTimer;
using layer::segment_bytes;
using layer::sigmoid;
using layer::stream_index;

// fn(t) for every token of the chunk, spread over the pool: the per-token vector work (norms,
// RoPE, GLU, residual adds) would otherwise run on one thread while the others wait.
template <class F>
void for_tokens(ThreadPool& pool, uint32_t n, const F& fn) {
    pool.parallel_for(n, [&](size_t begin, size_t end) {
        for (size_t t = begin; t < end; ++t) fn(uint32_t(t));
    });
}

} // namespace

bool Session::batched_prefill() const {
    const auto style = static_cast<CombineStyle>(model_->header().combine_style);
    return !fetcher_ && (style == CombineStyle::Sequential || style == CombineStyle::ParallelSqrt2);
}

Result<std::span<const float>> Session::prefill(std::span<const int32_t> tokens, bool want_logits) {
    const uint32_t start = position_;
    try {
        auto logits = prefill_unguarded(tokens, want_logits);
        // As step(): what was computed from a file that changed meanwhile is never handed out.
        if (Status unchanged = model_->check_file_unchanged(); logits && !unchanged) {
            truncate(start);
            return unchanged.take_error();
        }
        return logits;
    } catch (const std::bad_alloc&) {
        return out_of_memory_error("prefill at position " + std::to_string(position_));
    }
}

Result<std::span<const float>> Session::prefill_unguarded(std::span<const int32_t> tokens, bool want_logits) {
    const GlobalHeader& h = model_->header();
    if (tokens.empty()) return std::span<const float>{};
    if (tokens.size() > context_length_ - position_)
        return make_error(ErrorKind::ContextFull, "context full: " + std::to_string(tokens.size()) +
                                                      " prompt tokens do not fit, " + std::to_string(position_) +
                                                      " of " + std::to_string(context_length_) + " are used");
    for (int32_t token : tokens)
        if (token < 0 || uint32_t(token) >= h.vocab_size)
            return make_error("token id " + std::to_string(token) + " is outside the vocabulary (size " +
                              std::to_string(h.vocab_size) + ")");
    if (tokens.size() == 1 || !batched_prefill()) {
        std::span<const float> logits;
        for (size_t i = 0; i < tokens.size(); ++i) {
            auto r = step(tokens[i], want_logits && i + 1 == tokens.size());
            if (!r) return r.take_error();
            logits = r.value();
        }
        return logits;
    }
    for (size_t i = 0; i < tokens.size(); i += kPrefillChunk) {
        const size_t n = std::min<size_t>(kPrefillChunk, tokens.size() - i);
        const auto t0 = Clock::now();
        if (auto st = prefill_chunk(tokens.subspan(i, n)); !st) return st.take_error();
        telemetry_.totalUs = std::chrono::duration<float, std::micro>(Clock::now() - t0).count();
    }
    if (!want_logits) return std::span<const float>{};
    const auto t0 = Clock::now();
    std::copy_n(batch_->x.data() + size_t(telemetry_.tokens - 1) * h.d_model, h.d_model, buf_->x.data());
    output_logits();
    telemetry_.totalUs += std::chrono::duration<float, std::micro>(Clock::now() - t0).count();
    return std::span<const float>(buf_->logits);
}

Status Session::prefill_chunk(std::span<const int32_t> tokens) {
    const GlobalHeader& h = model_->header();
    const ModelParams& p = model_->params();
    const auto n = uint32_t(tokens.size());
    const size_t d = h.d_model;
    if (!batch_) {
        auto batch = std::make_unique<Batch>();
        Batch& bt = *batch;
        const size_t C = kPrefillChunk, dk = h.head_dim, qdim = size_t(h.n_heads) * dk, kvdim = size_t(h.n_kv_heads) * dk;
        const size_t hidden = std::max({size_t(h.d_ff), size_t(h.expert_d_ff), size_t(p.shared_expert_d_ff)});
        bt.hidden = hidden;
        for (auto* v : {&bt.x, &bt.xn, &bt.attn_out, &bt.dense_out, &bt.moe_out, &bt.expert_in, &bt.expert_tmp})
            v->resize(C * d);
        bt.q.resize(C * qdim);
        bt.attn.resize(C * qdim);
        bt.k.resize(C * kvdim);
        bt.v.resize(C * kvdim);
        bt.gate.resize(C * hidden);
        bt.up.resize(C * hidden);
        bt.expert_out.resize(C * std::max<size_t>(h.top_k, 1) * (h.n_experts > 0 ? d : 0));
        bt.rope_cos.resize(C * (dk / 2));
        bt.rope_sin.resize(C * (dk / 2));
        const size_t widest = std::max({d, qdim, hidden});
        bt.slicesPerToken = (widest + kTileCols - 1) / kTileCols;
        bt.quantized_x.resize(C * bt.slicesPerToken * kQuantizedSliceBytes + kQuantizedSliceAlign);
        bt.routing.resize(C);
        for (Routing& r : bt.routing) r.input.resize(d);
        bt.served.reserve(C * std::max<size_t>(h.top_k, 1));
        batch_ = std::move(batch);
    }
    Batch& bt = *batch_;

    begin_record(n, tokens.back());
    for (uint32_t t = 0; t < n; ++t) embed(tokens[t], bt.x.data() + t * d);
    // One table of angles per position for the chunk; a model whose layers rotate differently
    // (Gemma 3's sliding layers) gets its tables per layer in attention_batch instead.
    const LayerRope rope0 = model_->rope(0, long_rope_);
    fill_rope_tables(rope0, n);
    bt.rope_layer_theta = rope0.theta;
    bt.rope_layer_factors = rope0.freq_factors.data();

    const bool parallel = static_cast<CombineStyle>(h.combine_style) == CombineStyle::ParallelSqrt2;
    const float inv_sqrt2 = 1.0f / std::sqrt(2.0f);
    for (uint32_t l = 0; l < h.n_layers; ++l) {
        LayerRecord& rec = telemetry_.layers[l];
        LayerTimer timer{rec};
        const LayerWeights& w = model_->layers()[l];
        attention_batch(l, n, rec);
        for_tokens(pool_, n, [&](uint32_t t) { ops::add(bt.x.data() + t * d, bt.attn_out.data() + t * d, d); });
        if (parallel) {
            std::fill_n(bt.dense_out.begin(), n * d, 0.0f);
            std::fill_n(bt.moe_out.begin(), n * d, 0.0f);
        }
        if (w.gate_up) dense_ffn_batch(l, n, rec);
        if (w.router) {
            // As forward_sequential / forward_parallel_sqrt2 choose the router's norm.
            const SegmentView& norm = parallel ? *w.moe_norm : (w.ffn_norm ? *w.ffn_norm : *w.moe_norm);
            if (auto st = moe_batch(l, norm, n, rec); !st) return st;
        }
        if (parallel) {
            for (size_t i = 0; i < n * d; ++i) bt.x[i] += (bt.dense_out[i] + bt.moe_out[i]) * inv_sqrt2;
        } else {
            for_tokens(pool_, n, [&](uint32_t t) {
                if (w.gate_up) ops::add(bt.x.data() + t * d, bt.dense_out.data() + t * d, d);
                if (w.router) ops::add(bt.x.data() + t * d, bt.moe_out.data() + t * d, d);
            });
        }
        rec.residualNorm = layer::norm2(bt.x.data() + (n - 1) * d, d);  // the chunk's last token
    }
    position_ += n;
    return {};
}

void Session::matmat_tiles(const std::vector<TileRef>& tiles, const std::vector<StripeRef>& stripes,
                           const BatchOutputs& outputs, const float* x, size_t xStride, uint32_t n, bool lanes) {
    if (stripes.empty() || n == 0) return;
    const std::optional<DType> sliceDtype = quantized_slice_dtype(tiles, stripes);
    const auto* k = kernels_;
    Batch& bt = *batch_;
    // Int8 paths: every token's 256-column slices quantized once (as matvec_tiles does per token).
    uint8_t* slices = nullptr;  // [n x slicesPerToken x kQuantizedSliceBytes]
    const size_t tokenStride = bt.slicesPerToken * kQuantizedSliceBytes;
    if (sliceDtype && k->tile_matmat_quantized) {
        const auto base = reinterpret_cast<uintptr_t>(bt.quantized_x.data());
        slices = bt.quantized_x.data() + ((kQuantizedSliceAlign - base % kQuantizedSliceAlign) % kQuantizedSliceAlign);
        const StripeRef& first = stripes.front();
        for (const StripeRef& stripe : stripes)
            if (stripe.n_tiles != first.n_tiles) slices = nullptr;
        for (uint32_t t = 0; slices && t < first.n_tiles; ++t) {
            const TileRef& tile = tiles[first.first_tile + t];
            if (tile.col_offset % kTileCols != 0 || tile.col_offset / kTileCols >= bt.slicesPerToken) slices = nullptr;
        }
        if (slices) {
            uint8_t* const out = slices;
            pool_.parallel_for(n, [&](size_t begin, size_t end) {
                for (size_t tok = begin; tok < end; ++tok)
                    for (uint32_t t = 0; t < first.n_tiles; ++t) {
                        const TileRef& tile = tiles[first.first_tile + t];
                        k->quantize_slice(*sliceDtype, x + tok * xStride + tile.col_offset, tile.cols,
                                          out + tok * tokenStride + (tile.col_offset / kTileCols) * kQuantizedSliceBytes);
                    }
            });
        }
    }
    pool_.parallel_for(stripes.size(), [&](size_t begin, size_t end) {
        for (size_t s = begin; s < end; ++s) {
            const StripeRef& stripe = stripes[s];
            float* y = outputs.base[stripe.part] + stripe.row_offset;  // token t's rows at y + t * ys
            const size_t ys = outputs.stride[stripe.part];
            for (uint32_t tok = 0; tok < n; ++tok) std::fill_n(y + tok * ys, stripe.rows, 0.0f);
            for (uint32_t t = 0; t < stripe.n_tiles; ++t) {
                const TileRef& tile = tiles[stripe.first_tile + t];
                const uint8_t* payload = tile.payload;
                if (lanes) {
                    payload = lanes_payload(*model_, tile);
                    if (slices && k->tile_matmat_quantized_lanes) {
                        k->tile_matmat_quantized_lanes(tile.dtype, payload, tile.rows, tile.cols,
                                                       slices + (tile.col_offset / kTileCols) * kQuantizedSliceBytes,
                                                       tokenStride, n, y, ys);
                        continue;
                    }
                    payload = unpack_lanes_for_kernel(tile.dtype, payload, tile.rows, tile.cols);  // paths without lanes kernels
                }
                if (slices) {
                    k->tile_matmat_quantized(tile.dtype, payload, tile.rows, tile.cols,
                                             slices + (tile.col_offset / kTileCols) * kQuantizedSliceBytes, tokenStride,
                                             n, y, ys);
                } else {
                    for (uint32_t tok = 0; tok < n; ++tok)
                        k->tile_matvec(tile.dtype, payload, tile.rows, tile.cols, x + tok * xStride + tile.col_offset,
                                       y + tok * ys);
                }
            }
        }
    });
}

void Session::matmat(const SegmentView& segment, const BatchOutputs& outputs, const float* x, size_t xStride, uint32_t n) {
    matmat_tiles(segment.tiles, segment.stripes, outputs, x, xStride, n, model_->in_lanes(segment));
}

void Session::fill_rope_tables(const LayerRope& rope, uint32_t n) {
    const GlobalHeader& h = model_->header();
    Batch& bt = *batch_;
    const uint32_t n_rot = ops::rotary_dims(h.head_dim, model_->params().rope_fraction);
    for (uint32_t t = 0; t < n; ++t)
        ops::rope_tables(position_ + t, n_rot, rope.theta, rope.freq_factors, rope.scale, bt.rope_cos.data() + t * (h.head_dim / 2),
                         bt.rope_sin.data() + t * (h.head_dim / 2));
}

void Session::attention_batch(uint32_t layer, uint32_t n, LayerRecord& rec) {
    const GlobalHeader& h = model_->header();
    const ModelParams& p = model_->params();
    const LayerWeights& w = model_->layers()[layer];
    Buffers& b = *buf_;
    Batch& bt = *batch_;
    const uint32_t dk = h.head_dim, n_heads = h.n_heads, n_kv = h.n_kv_heads;
    const size_t d = h.d_model, qdim = size_t(n_heads) * dk, kvdim = size_t(n_kv) * dk;

    for_tokens(pool_, n, [&](uint32_t t) { ops::rmsnorm(bt.x.data() + t * d, w.attn_norm->raw_f32(), bt.xn.data() + t * d, d, p.norm_eps); });
    matmat(*w.qkv, {{bt.q.data(), bt.k.data(), bt.v.data()}, {qdim, kvdim, kvdim}}, bt.xn.data(), d, n);
    if (model_->rope_varies_by_layer()) {
        const LayerRope rope = model_->rope(layer, long_rope_);
        if (rope.theta != bt.rope_layer_theta || rope.freq_factors.data() != bt.rope_layer_factors) {
            fill_rope_tables(rope, n);
            bt.rope_layer_theta = rope.theta;
            bt.rope_layer_factors = rope.freq_factors.data();
        }
    }
    const uint32_t n_rot = model_->applies_rope(layer) ? ops::rotary_dims(dk, p.rope_fraction) : 0;  // 0: no rotation
    for_tokens(pool_, n, [&](uint32_t t) {  // each token writes its own KV position
        float* q = bt.q.data() + t * qdim;  // [H * dk]
        float* kv_k = bt.k.data() + t * kvdim;
        float* kv_v = bt.v.data() + t * kvdim;
        if (w.qkv_bias) {
            const float* bias = w.qkv_bias->raw_f32();  // [q | k | v]
            ops::add(q, bias, qdim);
            ops::add(kv_k, bias + qdim, kvdim);
            ops::add(kv_v, bias + qdim + kvdim, kvdim);
        }
        if (w.q_norm)
            for (uint32_t hd = 0; hd < n_heads; ++hd) ops::rmsnorm(q + size_t(hd) * dk, w.q_norm->raw_f32(), q + size_t(hd) * dk, dk, p.norm_eps);
        if (w.k_norm)
            for (uint32_t hd = 0; hd < n_kv; ++hd) ops::rmsnorm(kv_k + size_t(hd) * dk, w.k_norm->raw_f32(), kv_k + size_t(hd) * dk, dk, p.norm_eps);
        if (h.feature_flags & kFeatureVNorm)
            for (uint32_t hd = 0; hd < n_kv; ++hd) ops::rmsnorm(kv_v + size_t(hd) * dk, nullptr, kv_v + size_t(hd) * dk, dk, p.norm_eps);
        const float* cos_t = bt.rope_cos.data() + t * (dk / 2);
        const float* sin_t = bt.rope_sin.data() + t * (dk / 2);
        for (uint32_t hd = 0; hd < n_heads; ++hd) ops::rope_apply(q + size_t(hd) * dk, n_rot, cos_t, sin_t);
        for (uint32_t hd = 0; hd < n_kv; ++hd) ops::rope_apply(kv_k + size_t(hd) * dk, n_rot, cos_t, sin_t);
        b.kv.write(layer, position_ + t, kv_k, kv_v);
    });

    // Causal attention: the chunk's token t sees positions up to position_ + t.
    const float scale = model_->query_scale();
    const float softcap = p.attn_logit_softcap;
    const Kernels& kern = *kernels_;
    const uint32_t p0 = position_;
    const uint32_t window = model_->attention_window(layer);
    const uint32_t group = attention_group();
    const float* sinks = w.attn_sinks ? w.attn_sinks->raw_f32() : nullptr;  // [H]
    pool_.parallel_for(n_heads / group, [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) {
            const size_t hd = i * group;                         // the item's first query head
            float* sc = b.scores.data() + hd * context_length_;  // [group][context], reused token after token
            for (uint32_t t = 0; t < n; ++t) {
                const uint32_t n_pos = p0 + t + 1;
                const uint32_t first = (window > 0 && n_pos > window) ? n_pos - window : 0;
                b.kv.attend(kern, layer, uint32_t(hd * n_kv / n_heads), dk, bt.q.data() + t * qdim + hd * dk, group, first,
                            n_pos, scale, softcap, sinks ? sinks + hd : nullptr, sc, context_length_,
                            bt.attn.data() + t * qdim + hd * dk);
            }
        }
    });
    matmat(*w.attn_out, {{bt.attn_out.data()}, {d}}, bt.attn.data(), qdim, n);
    if (w.attn_out_bias)
        for_tokens(pool_, n, [&](uint32_t t) { ops::add(bt.attn_out.data() + t * d, w.attn_out_bias->raw_f32(), d); });
    if (w.attn_post_norm)
        for_tokens(pool_, n, [&](uint32_t t) {
            ops::rmsnorm(bt.attn_out.data() + t * d, w.attn_post_norm->raw_f32(), bt.attn_out.data() + t * d, d, p.norm_eps);
        });
    rec.bytesRead[stream_index(Stream::Attention)] += layer::attention_bytes(w);
}

void Session::dense_ffn_batch(uint32_t layer, uint32_t n, LayerRecord& rec) {
    const GlobalHeader& h = model_->header();
    const ModelParams& p = model_->params();
    const LayerWeights& w = model_->layers()[layer];
    Batch& bt = *batch_;
    const size_t d = h.d_model, hidden = bt.hidden;
    for_tokens(pool_, n, [&](uint32_t t) { ops::rmsnorm(bt.x.data() + t * d, w.ffn_norm->raw_f32(), bt.xn.data() + t * d, d, p.norm_eps); });
    matmat(*w.gate_up, {{bt.gate.data(), bt.up.data()}, {hidden, hidden}}, bt.xn.data(), d, n);
    for_tokens(pool_, n, [&](uint32_t t) {
        ops::glu(p, bt.gate.data() + t * hidden, bt.up.data() + t * hidden, h.d_ff);
    });
    matmat(*w.down, {{bt.dense_out.data()}, {d}}, bt.gate.data(), hidden, n);
    if (w.ffn_post_norm)
        for_tokens(pool_, n, [&](uint32_t t) {
            ops::rmsnorm(bt.dense_out.data() + t * d, w.ffn_post_norm->raw_f32(), bt.dense_out.data() + t * d, d, p.norm_eps);
        });
    rec.bytesRead[stream_index(Stream::Dense)] += layer::dense_bytes(w);
}

Status Session::moe_batch(uint32_t layer, const SegmentView& norm, uint32_t n, LayerRecord& rec) {
    const GlobalHeader& h = model_->header();
    const ModelParams& p = model_->params();
    const LayerWeights& w = model_->layers()[layer];
    Batch& bt = *batch_;
    const size_t d = h.d_model, hidden = bt.hidden;
    const uint32_t E = h.n_experts, k = h.top_k, eff = h.expert_d_ff;
    for (uint32_t t = 0; t < n; ++t) route(layer, norm, bt.x.data() + t * d, bt.routing[t], rec);

    // Each selected expert runs once for all the tokens that chose it; its output for token t
    // goes to t's slot, and the slots are summed per token in routing order as run_experts does.
    uint64_t expertBytes = 0;
    for (uint32_t e = 0; e < E; ++e) {
        bt.served.clear();
        for (uint32_t t = 0; t < n; ++t)
            for (uint32_t i = 0; i < bt.routing[t].n; ++i)
                if (bt.routing[t].experts[i] == e) bt.served.push_back(t * k + i);
        if (bt.served.empty()) continue;
        auto view = model_->expert(layer, e);
        if (!view) return view.take_error();
        const ExpertView& ev = *view.value();
        const auto m = uint32_t(bt.served.size());
        for (uint32_t j = 0; j < m; ++j)
            std::copy_n(bt.routing[bt.served[j] / k].input.data(), d, bt.expert_in.data() + j * d);
        const bool lanes = model_->expert_bank_in_lanes(layer);
        matmat_tiles(ev.gate_up, ev.gate_up_stripes, {{bt.gate.data(), bt.up.data()}, {hidden, hidden}},
                     bt.expert_in.data(), d, m, lanes);
        // [gate eff | up eff | down d] biases of expert e, if the model has them
        const float* bias = w.expert_bias ? w.expert_bias->raw_f32() + size_t(e) * (2 * eff + d) : nullptr;
        for_tokens(pool_, m, [&](uint32_t j) {
            float* gate = bt.gate.data() + j * hidden;
            float* up = bt.up.data() + j * hidden;
            if (bias) {
                ops::add(gate, bias, eff);
                ops::add(up, bias + eff, eff);
            }
            ops::glu(p, gate, up, eff);
        });
        matmat_tiles(ev.down, ev.down_stripes, {{bt.expert_tmp.data()}, {d}}, bt.gate.data(), hidden, m,
                     lanes);
        if (bias)
            for_tokens(pool_, m, [&](uint32_t j) { ops::add(bt.expert_tmp.data() + j * d, bias + 2 * eff, d); });
        for (uint32_t j = 0; j < m; ++j)
            std::copy_n(bt.expert_tmp.data() + j * d, d, bt.expert_out.data() + size_t(bt.served[j]) * d);
        expertBytes += ev.bytes + (bias ? uint64_t(2 * eff + d) * sizeof(float) : 0);
    }
    for (uint32_t t = 0; t < n; ++t) {
        float* out = bt.moe_out.data() + t * d;
        std::fill_n(out, d, 0.0f);
        for (uint32_t i = 0; i < bt.routing[t].n; ++i)
            kernels_->axpy(bt.routing[t].weights[i], bt.expert_out.data() + (size_t(t) * k + i) * d, out, d);
    }
    if (w.shared_gate_up) {
        const uint32_t sff = p.shared_expert_d_ff;
        for (uint32_t t = 0; t < n; ++t) std::copy_n(bt.routing[t].input.data(), d, bt.expert_in.data() + t * d);
        matmat(*w.shared_gate_up, {{bt.gate.data(), bt.up.data()}, {hidden, hidden}}, bt.expert_in.data(), d, n);
        for_tokens(pool_, n, [&](uint32_t t) { ops::glu(p, bt.gate.data() + t * hidden, bt.up.data() + t * hidden, sff); });
        matmat(*w.shared_down, {{bt.expert_tmp.data()}, {d}}, bt.gate.data(), hidden, n);
        for (uint32_t t = 0; t < n; ++t) {
            const float g = w.shared_gate ? sigmoid(kernels_->dot(w.shared_gate->raw_f32(), bt.routing[t].input.data(), d)) : 1.0f;
            kernels_->axpy(g, bt.expert_tmp.data() + t * d, bt.moe_out.data() + t * d, d);
        }
        expertBytes += w.shared_gate_up->bytes + w.shared_down->bytes + segment_bytes(w.shared_gate);
    }
    // route() added each token's router bytes; the chunk reads the router once.
    rec.bytesRead[stream_index(Stream::Router)] =
        norm.bytes + segment_bytes(w.router) + segment_bytes(w.router_bias) + uint64_t(k) * sizeof(ExpertEntry);
    rec.bytesRead[stream_index(Stream::Expert)] += expertBytes;
    rec.routing_layer = uint16_t(layer);
    rec.injectionLayer = int16_t(layer);
    return {};
}

} // namespace cflow
