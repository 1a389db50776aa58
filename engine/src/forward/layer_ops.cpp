// The building blocks of a layer: attention with the KV cache, the dense FFN, routing and
// conditional expert execution (only the selected experts' tiles are touched), and the
// bytes each reads, recorded per stream.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>

#include "cflow/formats/tile_codec.h"
#include "forward/lanes_arena.h"
#include "forward/layer_records.h"
#include "forward/ops.h"
#include "forward/session_state.h"

namespace cflow {
namespace {

using layer::segment_bytes;
using layer::sigmoid;
using layer::stream_index;

} // namespace

std::optional<DType> Session::quantized_slice_dtype(const std::vector<TileRef>& tiles,
                                                   const std::vector<StripeRef>& stripes) const {
    const auto* k = kernels_;
    if (!k->quantize_slice || tiles.empty() || stripes.empty()) return std::nullopt;
    const DType slice = slice_dtype(tiles.front().dtype);
    for (const TileRef& tile : tiles)
        if (!(k->quantized_dtypes & dtype_bit(tile.dtype)) || slice_dtype(tile.dtype) != slice) return std::nullopt;
    return slice;
}

void Session::matvec_tiles(const std::vector<TileRef>& tiles, const std::vector<StripeRef>& stripes,
                           const MatvecOutputs& outputs, const float* x, bool lanes) {
    const auto* k = kernels_;
    if (stripes.empty()) return;
    const std::optional<DType> sliceDtype = quantized_slice_dtype(tiles, stripes);
    // Int8 paths: quantize each 256-column slice of x once, for every stripe's tile over it
    // (every stripe spans the same columns).
    uint8_t* slices = nullptr;  // [input slices x kQuantizedSliceBytes]
    size_t sliceCount = 0;
    if (sliceDtype) {
        auto& buffer = buf_->quantized_x;
        const auto base = reinterpret_cast<uintptr_t>(buffer.data());
        slices = buffer.data() + ((kQuantizedSliceAlign - base % kQuantizedSliceAlign) % kQuantizedSliceAlign);
        sliceCount = (buffer.size() - kQuantizedSliceAlign) / kQuantizedSliceBytes;
        const StripeRef& first = stripes.front();
        for (const StripeRef& stripe : stripes)
            if (stripe.n_tiles != first.n_tiles) sliceCount = 0;  // an unexpected grid: quantize per tile
        for (uint32_t t = 0; t < first.n_tiles; ++t) {
            const TileRef& tile = tiles[first.first_tile + t];
            const size_t slice = tile.col_offset / kTileCols;
            if (tile.col_offset % kTileCols != 0 || slice >= sliceCount) {
                slices = nullptr;  // not the tile grid this buffer was sized for: quantize per tile
                break;
            }
            k->quantize_slice(*sliceDtype, x + tile.col_offset, tile.cols, slices + slice * kQuantizedSliceBytes);
        }
    }
    pool_.parallel_for(stripes.size(), [&](size_t begin, size_t end) {
        for (size_t s = begin; s < end; ++s) {
            const StripeRef& stripe = stripes[s];
            float* y = outputs[stripe.part] + stripe.row_offset;  // [stripe.rows]
            std::fill(y, y + stripe.rows, 0.0f);
            for (uint32_t t = 0; t < stripe.n_tiles; ++t) {
                const TileRef& tile = tiles[stripe.first_tile + t];
                const uint8_t* payload = tile.payload;
                if (lanes) {
                    payload = lanes_payload(*model_, tile);
                    if (slices && k->tile_matvec_quantized_lanes) {
                        k->tile_matvec_quantized_lanes(tile.dtype, payload, tile.rows, tile.cols,
                                                       slices + (tile.col_offset / kTileCols) * kQuantizedSliceBytes, y);
                        continue;
                    }
                    payload = unpack_lanes_for_kernel(tile.dtype, payload, tile.rows, tile.cols);
                }
                if (slices)
                    k->tile_matvec_quantized(tile.dtype, payload, tile.rows, tile.cols,
                                             slices + (tile.col_offset / kTileCols) * kQuantizedSliceBytes, y);
                else
                    k->tile_matvec(tile.dtype, payload, tile.rows, tile.cols, x + tile.col_offset, y);
            }
        }
    });
}

void Session::matvec(const SegmentView& segment, const MatvecOutputs& outputs, const float* x) {
    matvec_tiles(segment.tiles, segment.stripes, outputs, x, model_->in_lanes(segment));
}

uint32_t Session::attention_group() const {
    const GlobalHeader& h = model_->header();
    const uint32_t group = h.n_heads / h.n_kv_heads;
    // GQA with a KV head per thread at least: each KV head's query heads together, so its keys
    // and values are read once per token instead of once per query head.
    return group > 1 && h.n_heads % h.n_kv_heads == 0 && h.n_kv_heads >= pool_.size() ? group : 1;
}

void Session::embed(int32_t token, float* out) {
    const SegmentView& emb = model_->token_embd();
    const StripeRef& stripe = emb.stripes[uint32_t(token) / kTileRows];
    const uint32_t row = uint32_t(token) - stripe.row_offset;
    for (uint32_t t = 0; t < stripe.n_tiles; ++t) {
        const TileRef& tile = emb.tiles[stripe.first_tile + t];
        decode_tile_row(tile.dtype, tile.payload, tile.rows, tile.cols, row, out + tile.col_offset);
        telemetry_.vocabBytes += tile_payload_bytes(tile.dtype, tile.rows, tile.cols) / tile.rows;
    }
    const GlobalHeader& h = model_->header();
    float scale = 0.0f;
    if (h.feature_flags & kFeatureEmbedScaleSqrtD) scale = std::sqrt(float(h.d_model));
    else if (model_->params().embedding_scale != 0.0f) scale = model_->params().embedding_scale;
    if (scale != 0.0f)
        for (uint32_t i = 0; i < h.d_model; ++i) out[i] *= scale;
}

void Session::attention(uint32_t layer, uint32_t kv_slot, const float* x, float* out, LayerRecord& rec) {
    const GlobalHeader& h = model_->header();
    const ModelParams& p = model_->params();
    const LayerWeights& w = model_->layers()[layer];
    Buffers& b = *buf_;
    const uint32_t dk = h.head_dim, n_heads = h.n_heads, n_kv = h.n_kv_heads;
    const size_t kvdim = size_t(n_kv) * dk;

    ops::rmsnorm(x, w.attn_norm->raw_f32(), b.xn.data(), h.d_model, p.norm_eps);
    matvec(*w.qkv, {b.q.data(), b.k.data(), b.v.data()}, b.xn.data());
    if (w.qkv_bias) {
        const float* bias = w.qkv_bias->raw_f32();  // [q | k | v]
        ops::add(b.q.data(), bias, b.q.size());
        ops::add(b.k.data(), bias + b.q.size(), kvdim);
        ops::add(b.v.data(), bias + b.q.size() + kvdim, kvdim);
    }
    if (w.q_norm)
        for (uint32_t hd = 0; hd < n_heads; ++hd)
            ops::rmsnorm(b.q.data() + size_t(hd) * dk, w.q_norm->raw_f32(), b.q.data() + size_t(hd) * dk, dk, p.norm_eps);
    if (w.k_norm)
        for (uint32_t hd = 0; hd < n_kv; ++hd)
            ops::rmsnorm(b.k.data() + size_t(hd) * dk, w.k_norm->raw_f32(), b.k.data() + size_t(hd) * dk, dk, p.norm_eps);
    if (h.feature_flags & kFeatureVNorm)
        for (uint32_t hd = 0; hd < n_kv; ++hd)
            ops::rmsnorm(b.v.data() + size_t(hd) * dk, nullptr, b.v.data() + size_t(hd) * dk, dk, p.norm_eps);

    const uint32_t n_rot = ops::rotary_dims(dk, p.rope_fraction);
    const LayerRope rope = model_->rope(layer, long_rope_);
    ops::rope_tables(position_, n_rot, rope.theta, rope.freq_factors, rope.scale, b.rope_cos.data(), b.rope_sin.data());
    if (model_->applies_rope(layer)) {
        for (uint32_t hd = 0; hd < n_heads; ++hd) ops::rope_apply(b.q.data() + size_t(hd) * dk, n_rot, b.rope_cos.data(), b.rope_sin.data());
        for (uint32_t hd = 0; hd < n_kv; ++hd) ops::rope_apply(b.k.data() + size_t(hd) * dk, n_rot, b.rope_cos.data(), b.rope_sin.data());
    }

    b.kv.write(kv_slot, position_, b.k.data(), b.v.data());

    const uint32_t n_pos = position_ + 1;
    const uint32_t window = model_->attention_window(layer);
    const uint32_t first = (window > 0 && n_pos > window) ? n_pos - window : 0;
    const float scale = model_->query_scale();
    const float softcap = p.attn_logit_softcap;
    const Kernels& kern = *kernels_;
    const uint32_t group = attention_group();
    const float* sinks = w.attn_sinks ? w.attn_sinks->raw_f32() : nullptr;  // [H]
    pool_.parallel_for(n_heads / group, [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) {
            const size_t hd = i * group;  // the item's first query head
            b.kv.attend(kern, kv_slot, uint32_t(hd * n_kv / n_heads), dk, b.q.data() + hd * dk, group, first, n_pos, scale,
                        softcap, sinks ? sinks + hd : nullptr, b.scores.data() + hd * context_length_, context_length_,
                        b.attn.data() + hd * dk);
        }
    });
    matvec(*w.attn_out, {out}, b.attn.data());
    if (w.attn_out_bias) ops::add(out, w.attn_out_bias->raw_f32(), h.d_model);
    if (w.attn_post_norm) ops::rmsnorm(out, w.attn_post_norm->raw_f32(), out, h.d_model, p.norm_eps);
    rec.bytesRead[stream_index(Stream::Attention)] += layer::attention_bytes(w);
}

void Session::dense_ffn(uint32_t layer, const float* x, float* out, LayerRecord& rec) {
    const GlobalHeader& h = model_->header();
    const ModelParams& p = model_->params();
    const LayerWeights& w = model_->layers()[layer];
    if (!w.gate_up) {
        std::fill(out, out + h.d_model, 0.0f);
        return;
    }
    Buffers& b = *buf_;
    ops::rmsnorm(x, w.ffn_norm->raw_f32(), b.xn.data(), h.d_model, p.norm_eps);
    matvec(*w.gate_up, {b.gate.data(), b.up.data()}, b.xn.data());
    ops::glu(p, b.gate.data(), b.up.data(), h.d_ff);
    matvec(*w.down, {out}, b.gate.data());
    if (w.ffn_post_norm) ops::rmsnorm(out, w.ffn_post_norm->raw_f32(), out, h.d_model, p.norm_eps);
    rec.bytesRead[stream_index(Stream::Dense)] += layer::dense_bytes(w);
}

void Session::route(uint32_t layer, const SegmentView& norm, const float* x, Routing& routing, LayerRecord& rec) {
    const GlobalHeader& h = model_->header();
    const ModelParams& p = model_->params();
    const LayerWeights& w = model_->layers()[layer];
    Buffers& b = *buf_;
    const uint32_t E = h.n_experts, k = h.top_k, d = h.d_model;
    routing.input.resize(d);
    ops::rmsnorm(x, norm.raw_f32(), routing.input.data(), d, p.norm_eps);
    const float* wr = w.router->raw_f32();  // [E x d]
    for (uint32_t e = 0; e < E; ++e) b.router_logits[e] = kernels_->dot(wr + size_t(e) * d, routing.input.data(), d);
    if (w.router_bias) ops::add(b.router_logits.data(), w.router_bias->raw_f32(), E);

    // Top-k by logit, ties toward the lower expert index.
    std::array<uint16_t, 256> order{};
    std::iota(order.begin(), order.begin() + E, uint16_t(0));
    std::partial_sort(order.begin(), order.begin() + k, order.begin() + E, [&](uint16_t a, uint16_t c) {
        return b.router_logits[a] > b.router_logits[c] || (b.router_logits[a] == b.router_logits[c] && a < c);
    });
    routing.layer = uint16_t(layer);
    routing.n = uint8_t(k);
    const float top = b.router_logits[order[0]];
    if (static_cast<RouterMode>(p.router_mode) == RouterMode::SoftmaxAllNoRenorm) {
        float sum = 0.0f;
        for (uint32_t e = 0; e < E; ++e) sum += std::exp(b.router_logits[e] - top);
        for (uint32_t i = 0; i < k; ++i) routing.weights[i] = std::exp(b.router_logits[order[i]] - top) / sum;
    } else {
        float sum = 0.0f;
        for (uint32_t i = 0; i < k; ++i) sum += (routing.weights[i] = std::exp(b.router_logits[order[i]] - top));
        for (uint32_t i = 0; i < k; ++i) routing.weights[i] /= sum;
    }
    for (uint32_t i = 0; i < k; ++i) routing.experts[i] = uint8_t(order[i]);
    routing.tickets.fill(-1);
    if (fetcher_) {
        // Issue the reads now; run_experts waits for them at the injection layer.
        for (uint32_t i = 0; i < k; ++i) {
            // The table entry only: the tiles are checked in the bytes read (Model::expert).
            auto where = model_->expert_location(layer, routing.experts[i]);
            if (!where) continue;  // run_experts reports the corrupt entry
            const ExpertLocation& ev = *where;
            const auto ticket = fetcher_->request(expert_cache_key(layer, routing.experts[i]), ev.offset, ev.bytes);
            routing.tickets[i] = int32_t(ticket.id);
            if (ticket.fromCache) {
                ++telemetry_.expertCacheHits;
                telemetry_.expertBytesSaved += ev.bytes;
            } else {
                ++telemetry_.expertCacheMisses;
                telemetry_.expertBytesFromDisk += ev.bytes;
            }
        }
        // The stall arm blocks here, charging the whole read to the routing layer; a failed read
        // is reported by run_experts' own wait, which then returns at once.
        if (wait_at_routing_)
            for (uint32_t i = 0; i < k; ++i)
                if (routing.tickets[i] >= 0) (void)fetcher_->wait(uint32_t(routing.tickets[i]), rec.expertWaitUs);
    }

    rec.nSelected = uint8_t(k);
    rec.experts = routing.experts;
    rec.expertWeights = routing.weights;
    rec.bytesRead[stream_index(Stream::Router)] +=
        norm.bytes + segment_bytes(w.router) + segment_bytes(w.router_bias) + uint64_t(k) * sizeof(ExpertEntry);
}

Status Session::run_experts(const Routing& routing, float* out, LayerRecord& rec) {
    const GlobalHeader& h = model_->header();
    const ModelParams& p = model_->params();
    const LayerWeights& w = model_->layers()[routing.layer];
    Buffers& b = *buf_;
    const uint32_t d = h.d_model, eff = h.expert_d_ff;
    for (uint32_t i = 0; i < routing.n; ++i) {
        const uint8_t* staged = nullptr;  // the expert's bytes as the fetcher read them
        if (routing.tickets[i] >= 0) {
            auto read = fetcher_->wait(uint32_t(routing.tickets[i]), rec.expertWaitUs);
            if (!read) return read.take_error();
            staged = read.value();
        }
        auto view = model_->expert(routing.layer, routing.experts[i], staged);
        if (!view) return view.take_error();
        const ExpertView& ev = *view.value();
        const std::vector<TileRef>* gate_up = &ev.gate_up;
        const std::vector<TileRef>* down = &ev.down;
        if (staged) {
            // Same tiles, read from the staging buffer: rebase every payload pointer.
            const uint8_t* mapped_base = model_->file().file().data() + ev.offset;
            auto rebase = [&](const std::vector<TileRef>& from, std::vector<TileRef>& to) {
                to = from;
                for (TileRef& t : to) t.payload = staged + (t.payload - mapped_base);
            };
            rebase(ev.gate_up, b.staged_gate_up);
            rebase(ev.down, b.staged_down);
            gate_up = &b.staged_gate_up;
            down = &b.staged_down;
        }
        // Staged reads bring the file's layout; experts read from memory use the lanes copy if any.
        const bool lanes = routing.tickets[i] < 0 && model_->expert_bank_in_lanes(routing.layer);
        matvec_tiles(*gate_up, ev.gate_up_stripes, {b.gate.data(), b.up.data()}, routing.input.data(), lanes);
        const float* bias = w.expert_bias ? w.expert_bias->raw_f32() + size_t(routing.experts[i]) * (2 * eff + d) : nullptr;
        if (bias) {  // [gate eff | up eff | down d] of this expert
            ops::add(b.gate.data(), bias, eff);
            ops::add(b.up.data(), bias + eff, eff);
        }
        ops::glu(p, b.gate.data(), b.up.data(), eff);
        matvec_tiles(*down, ev.down_stripes, {b.tmp.data()}, b.gate.data(), lanes);
        if (bias) ops::add(b.tmp.data(), bias + 2 * eff, d);
        if (routing.tickets[i] >= 0) fetcher_->release(uint32_t(routing.tickets[i]));
        kernels_->axpy(routing.weights[i], b.tmp.data(), out, d);
        rec.bytesRead[stream_index(Stream::Expert)] += ev.bytes;
    }
    if (w.expert_bias) rec.bytesRead[stream_index(Stream::Expert)] += uint64_t(routing.n) * (2 * eff + d) * sizeof(float);
    if (w.shared_gate_up) {
        const uint32_t sff = p.shared_expert_d_ff;
        matvec(*w.shared_gate_up, {b.gate.data(), b.up.data()}, routing.input.data());
        ops::glu(p, b.gate.data(), b.up.data(), sff);
        matvec(*w.shared_down, {b.tmp.data()}, b.gate.data());
        const float g = w.shared_gate ? sigmoid(kernels_->dot(w.shared_gate->raw_f32(), routing.input.data(), d)) : 1.0f;
        kernels_->axpy(g, b.tmp.data(), out, d);
        rec.bytesRead[stream_index(Stream::Expert)] += w.shared_gate_up->bytes + w.shared_down->bytes + segment_bytes(w.shared_gate);
    }
    rec.routing_layer = routing.layer;
    return {};
}

Status Session::moe_now(uint32_t layer, const SegmentView& norm, const float* x, float* out, LayerRecord& rec) {
    std::fill(out, out + model_->header().d_model, 0.0f);
    route(layer, norm, x, buf_->routing, rec);
    rec.injectionLayer = int16_t(rec.layer);
    return run_experts(buf_->routing, out, rec);
}

void Session::output_logits() {
    const GlobalHeader& h = model_->header();
    Buffers& b = *buf_;
    ops::rmsnorm(b.x.data(), model_->output_norm().raw_f32(), b.xn.data(), h.d_model, model_->params().norm_eps);
    matvec(model_->lm_head(), {b.logits.data()}, b.xn.data());
    if (const float c = h.final_logit_softcap; c > 0.0f)
        for (float& z : b.logits) z = c * std::tanh(z / c);
    telemetry_.vocabBytes += model_->output_norm().bytes + model_->lm_head().bytes;
}

} // namespace cflow
