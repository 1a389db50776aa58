// The decoder forward pass for one token (Sequential combine style: standard pre-norm).
#include "cflow/engine/session.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cflow/formats/tile_codec.h"
#include "ops.h"

namespace cflow {

struct Session::Buffers {
    std::vector<float> x;         // [d] residual stream
    std::vector<float> xn;        // [d] normalised residual
    std::vector<float> q;         // [H * dk]
    std::vector<float> k;         // [Hkv * dk]
    std::vector<float> v;         // [Hkv * dk]
    std::vector<float> attn;      // [H * dk] concatenated head outputs
    std::vector<float> proj;      // [d] attention / FFN output projection
    std::vector<float> gate;      // [d_ff]
    std::vector<float> up;        // [d_ff]
    std::vector<float> scores;    // [H x context] attention probabilities per head
    std::vector<float> logits;    // [vocab]
    std::vector<float> k_cache;   // [L x context x Hkv*dk]
    std::vector<float> v_cache;   // [L x context x Hkv*dk]
    std::vector<float> rope_cos;  // [n_rot / 2] for the current position
    std::vector<float> rope_sin;  // [n_rot / 2]
};

Result<std::unique_ptr<Session>> Session::create(std::shared_ptr<const Model> model, const SessionOptions& options) {
    if (!model) return make_error("Session::create: no model");
    const GlobalHeader& h = model->header();
    uint32_t ctx = options.context_length;
    if (ctx == 0) ctx = std::min(h.max_seq_len > 0 ? h.max_seq_len : SessionOptions::kDefaultContextCap,
                                 SessionOptions::kDefaultContextCap);
    const uint64_t kv_floats = uint64_t(h.n_layers) * ctx * uint64_t(h.n_kv_heads) * h.head_dim;
    constexpr uint64_t kMaxKvBytes = 64ull << 30;
    if (kv_floats * 2 * sizeof(float) > kMaxKvBytes)
        return make_error("context length " + std::to_string(ctx) + " needs " +
                          std::to_string(kv_floats * 8 >> 20) + " MiB of KV cache; choose a shorter context");
    try {
        return std::unique_ptr<Session>(new Session(std::move(model), options, ctx));
    } catch (const std::bad_alloc&) {
        return make_error("out of memory allocating the KV cache for context length " + std::to_string(ctx));
    }
}

Session::Session(std::shared_ptr<const Model> model, const SessionOptions& options, uint32_t context_length)
    : model_(std::move(model)), kernels_(&active_kernels()), pool_(options.threads),
      context_length_(context_length), buf_(std::make_unique<Buffers>()) {
    const GlobalHeader& h = model_->header();
    const size_t d = h.d_model, dk = h.head_dim, qdim = size_t(h.n_heads) * dk, kvdim = size_t(h.n_kv_heads) * dk;
    buf_->x.resize(d);
    buf_->xn.resize(d);
    buf_->q.resize(qdim);
    buf_->k.resize(kvdim);
    buf_->v.resize(kvdim);
    buf_->attn.resize(qdim);
    buf_->proj.resize(d);
    buf_->gate.resize(h.d_ff);
    buf_->up.resize(h.d_ff);
    buf_->scores.resize(size_t(h.n_heads) * context_length_);
    buf_->logits.resize(h.vocab_size);
    buf_->k_cache.resize(size_t(h.n_layers) * context_length_ * kvdim);
    buf_->v_cache.resize(size_t(h.n_layers) * context_length_ * kvdim);
    buf_->rope_cos.resize(dk / 2);
    buf_->rope_sin.resize(dk / 2);
}

Session::~Session() = default;

void Session::reset() { position_ = 0; }

void Session::matvec(const SegmentView& segment, const std::vector<float*>& outputs, const float* x) {
    const auto& stripes = segment.stripes;
    const auto& tiles = segment.tiles;
    const DType dtype = segment.dtype;
    const auto* k = kernels_;
    pool_.parallel_for(stripes.size(), [&](size_t begin, size_t end) {
        for (size_t s = begin; s < end; ++s) {
            const StripeRef& stripe = stripes[s];
            float* y = outputs[stripe.part] + stripe.row_offset;  // [stripe.rows]
            std::fill(y, y + stripe.rows, 0.0f);
            for (uint32_t t = 0; t < stripe.n_tiles; ++t) {
                const TileRef& tile = tiles[stripe.first_tile + t];
                k->tile_matvec(dtype, tile.payload, tile.rows, tile.cols, x + tile.col_offset, y);
            }
        }
    });
}

void Session::embed(int32_t token, float* out) const {
    const SegmentView& emb = model_->token_embd();
    const uint32_t stripe_index = uint32_t(token) / kTileRows;
    const StripeRef& stripe = emb.stripes[stripe_index];
    const uint32_t row = uint32_t(token) - stripe.row_offset;
    for (uint32_t t = 0; t < stripe.n_tiles; ++t) {
        const TileRef& tile = emb.tiles[stripe.first_tile + t];
        decode_tile_row(emb.dtype, tile.payload, tile.rows, tile.cols, row, out + tile.col_offset);
    }
    const GlobalHeader& h = model_->header();
    float scale = 0.0f;
    if (h.feature_flags & kFeatureEmbedScaleSqrtD) scale = std::sqrt(float(h.d_model));
    else if (model_->params().embedding_scale != 0.0f) scale = model_->params().embedding_scale;
    if (scale != 0.0f)
        for (uint32_t i = 0; i < h.d_model; ++i) out[i] *= scale;
}

void Session::attention_block(uint32_t layer) {
    const GlobalHeader& h = model_->header();
    const ModelParams& p = model_->params();
    const LayerWeights& w = model_->layers()[layer];
    Buffers& b = *buf_;
    const uint32_t dk = h.head_dim, n_heads = h.n_heads, n_kv = h.n_kv_heads;
    const size_t kvdim = size_t(n_kv) * dk;

    ops::rmsnorm(b.x.data(), w.attn_norm->raw_f32(), b.xn.data(), h.d_model, p.norm_eps);
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
    ops::rope_tables(position_, n_rot, p.rope_theta, b.rope_cos.data(), b.rope_sin.data());
    for (uint32_t hd = 0; hd < n_heads; ++hd) ops::rope_apply(b.q.data() + size_t(hd) * dk, n_rot, b.rope_cos.data(), b.rope_sin.data());
    for (uint32_t hd = 0; hd < n_kv; ++hd) ops::rope_apply(b.k.data() + size_t(hd) * dk, n_rot, b.rope_cos.data(), b.rope_sin.data());

    float* k_layer = b.k_cache.data() + size_t(layer) * context_length_ * kvdim;  // [context x kvdim]
    float* v_layer = b.v_cache.data() + size_t(layer) * context_length_ * kvdim;
    std::memcpy(k_layer + size_t(position_) * kvdim, b.k.data(), kvdim * sizeof(float));
    std::memcpy(v_layer + size_t(position_) * kvdim, b.v.data(), kvdim * sizeof(float));

    const uint32_t n_pos = position_ + 1;
    const uint32_t first = (h.sliding_window > 0 && n_pos > h.sliding_window) ? n_pos - h.sliding_window : 0;
    const float scale = 1.0f / std::sqrt(float(dk));
    const float softcap = p.attn_logit_softcap;
    const auto* kern = kernels_;
    pool_.parallel_for(n_heads, [&](size_t begin, size_t end) {
        for (size_t hd = begin; hd < end; ++hd) {
            const size_t kvh = hd * n_kv / n_heads;
            const float* qh = b.q.data() + hd * dk;
            float* sc = b.scores.data() + hd * context_length_;  // [n_pos]
            for (uint32_t t = first; t < n_pos; ++t) {
                float s = kern->dot(qh, k_layer + size_t(t) * kvdim + kvh * dk, dk) * scale;
                if (softcap > 0.0f) s = softcap * std::tanh(s / softcap);
                sc[t] = s;
            }
            ops::softmax(sc + first, n_pos - first);
            float* out = b.attn.data() + hd * dk;
            std::fill(out, out + dk, 0.0f);
            for (uint32_t t = first; t < n_pos; ++t) kern->axpy(sc[t], v_layer + size_t(t) * kvdim + kvh * dk, out, dk);
        }
    });
    matvec(*w.attn_out, {b.proj.data()}, b.attn.data());
    ops::add(b.x.data(), b.proj.data(), h.d_model);
}

void Session::ffn_block(uint32_t layer) {
    const GlobalHeader& h = model_->header();
    const ModelParams& p = model_->params();
    const LayerWeights& w = model_->layers()[layer];
    if (!w.gate_up) return;
    Buffers& b = *buf_;
    ops::rmsnorm(b.x.data(), w.ffn_norm->raw_f32(), b.xn.data(), h.d_model, p.norm_eps);
    matvec(*w.gate_up, {b.gate.data(), b.up.data()}, b.xn.data());
    ops::glu(static_cast<FfnActivation>(p.ffn_activation), b.gate.data(), b.up.data(), h.d_ff);
    matvec(*w.down, {b.proj.data()}, b.gate.data());
    ops::add(b.x.data(), b.proj.data(), h.d_model);
}

void Session::output_logits() {
    const GlobalHeader& h = model_->header();
    Buffers& b = *buf_;
    ops::rmsnorm(b.x.data(), model_->output_norm().raw_f32(), b.xn.data(), h.d_model, model_->params().norm_eps);
    matvec(model_->lm_head(), {b.logits.data()}, b.xn.data());
    if (const float c = h.final_logit_softcap; c > 0.0f)
        for (float& z : b.logits) z = c * std::tanh(z / c);
}

Result<std::span<const float>> Session::step(int32_t token, bool want_logits) {
    const GlobalHeader& h = model_->header();
    if (token < 0 || uint32_t(token) >= h.vocab_size)
        return make_error("token id " + std::to_string(token) + " is outside the vocabulary (size " +
                          std::to_string(h.vocab_size) + ")");
    if (position_ >= context_length_)
        return make_error("context full: " + std::to_string(context_length_) + " tokens");
    embed(token, buf_->x.data());
    for (uint32_t l = 0; l < h.n_layers; ++l) {
        attention_block(l);
        ffn_block(l);
    }
    ++position_;
    if (!want_logits) return std::span<const float>();
    output_logits();
    return std::span<const float>(buf_->logits);
}

} // namespace cflow
