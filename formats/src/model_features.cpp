// describe_features: the file's declared semantics as sentences (model_features.h).
#include "cflow/formats/model_features.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace cflow {
namespace {

std::string number(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", value);
    return text;
}

std::string count_of(size_t n, uint32_t total) { return std::to_string(n) + " of " + std::to_string(total); }

} // namespace

std::vector<ModelFeature> describe_features(const CflowFile& file) {
    const GlobalHeader& h = file.header();
    const ModelParams& p = file.params();
    std::vector<ModelFeature> out;
    if (h.feature_flags & kFeatureEmbedScaleSqrtD)
        out.push_back({"embedding scale", "token embeddings multiplied by sqrt(d_model) = " + number(std::sqrt(double(h.d_model)))});
    else if (p.embedding_scale != 0.0f)
        out.push_back({"embedding scale", "token embeddings multiplied by " + number(p.embedding_scale)});
    if (h.feature_flags & kFeatureQkvBias) out.push_back({"QKV bias", "biases added to queries, keys and values"});
    if (h.feature_flags & kFeatureQkNorm)
        out.push_back({"Q/K norm", "each query and key head RMS-normalised before the rotary embedding"});
    if (h.feature_flags & kFeatureVNorm) out.push_back({"V norm", "each value head RMS-normalised (no weight) before caching"});
    if (p.query_scale > 0.0f)
        out.push_back({"query scale", "attention scores scaled by " + number(p.query_scale) + " instead of 1/sqrt(head_dim) = " +
                                          number(1.0 / std::sqrt(double(h.head_dim)))});
    if (p.attn_logit_softcap > 0.0f)
        out.push_back({"attention soft-cap", "scores s become c*tanh(s/c) with c = " + number(p.attn_logit_softcap)});
    if (h.sliding_window > 0) {
        const auto sliding = file.sliding_layers();
        const size_t n = sliding.empty() ? h.n_layers : size_t(std::count(sliding.begin(), sliding.end(), 1));
        out.push_back({"sliding window", std::to_string(h.sliding_window) + " positions on " +
                                             (n == h.n_layers ? "every layer" : count_of(n, h.n_layers) + " layers; the others attend over the whole context")});
    }
    const auto divisors = file.rope_freq_factors();
    const auto long_divisors = file.rope_long_factors();
    if (p.extended_features & kExtLongRope) {
        const auto [lo, hi] = std::minmax_element(divisors.begin(), divisors.end());
        const auto [long_lo, long_hi] = std::minmax_element(long_divisors.begin(), long_divisors.end());
        out.push_back({"rope scaling", "LongRoPE: frequencies divided by short factors " + number(*lo) + " to " + number(*hi) +
                                           " in a context of up to " + std::to_string(p.rope_original_context) +
                                           " tokens, by long factors " + number(*long_lo) + " to " + number(*long_hi) +
                                           " in a longer one"});
    } else if (!divisors.empty()) {
        const auto [lo, hi] = std::minmax_element(divisors.begin(), divisors.end());
        const bool linear = *lo == *hi;
        const std::string where = (p.extended_features & kExtLocalRope) ? " on the full-attention layers" : "";
        out.push_back({"rope scaling", linear ? "linear: every rotary frequency divided by " + number(*lo) + where
                                              : "per-frequency divisors from " + number(*lo) + " to " + number(*hi) +
                                                    " (Llama 3 or YaRN)" + where});
    }
    if (p.rope_attn_factor > 0.0f)
        out.push_back({"rope attention factor", "cos and sin of every rotation multiplied by " + number(p.rope_attn_factor)});
    if (p.extended_features & kExtLocalRope)
        out.push_back({"local rope", "sliding-window layers rotate with base " + number(p.rope_local_theta) +
                                         ", unscaled; the others with base " + number(p.rope_theta)});
    if (h.feature_flags & kFeatureRopeSkipLayers) {
        const auto skip = file.rope_skip_layers();
        out.push_back({"NoPE layers", count_of(size_t(std::count(skip.begin(), skip.end(), 1)), h.n_layers) +
                                          " layers apply no rotary embedding"});
    }
    if (p.rope_fraction < 1.0f)
        out.push_back({"partial rotary", "the first " + std::to_string(rotary_dim_count(h.head_dim, p.rope_fraction)) + " of " +
                                             std::to_string(h.head_dim) + " dims of each head rotate"});
    if (p.extended_features & kExtPostNorms)
        out.push_back({"sandwich norms", "attention and FFN outputs RMS-normalised before they join the residual"});
    if (p.ffn_activation == static_cast<uint8_t>(FfnActivation::GeGLUTanh))
        out.push_back({"GELU gate", "gated FFN with the tanh-approximate GELU (GeGLU)"});
    if (p.ffn_activation == static_cast<uint8_t>(FfnActivation::ClampedSwiGLU))
        out.push_back({"clamped SwiGLU", "gate clamped above at " + number(p.ffn_limit) + ", up to +/-" + number(p.ffn_limit) +
                                             ", out = (up + 1) * gate * sigmoid(" + number(p.ffn_alpha) + " * gate)"});
    if (p.extended_features & kExtAttnSinks)
        out.push_back({"attention sinks", "a learned logit per head joins each softmax's denominator"});
    if (p.extended_features & kExtAttnOutBias) out.push_back({"output bias", "a bias added after the attention output projection"});
    if (p.extended_features & kExtMoeBiases)
        out.push_back({"MoE biases", "biases on the router logits and on every expert's gate, up and down projections"});
    if (h.n_experts > 0) {
        std::string detail = std::to_string(h.n_experts) + " experts, " + std::to_string(h.top_k) + " per token, weights " +
                             (p.router_mode == static_cast<uint8_t>(RouterMode::SoftmaxTopK) ? "renormalised over the selected"
                                                                                            : "from a softmax over all");
        if (p.shared_expert_d_ff > 0) detail += ", plus a shared expert of width " + std::to_string(p.shared_expert_d_ff);
        out.push_back({"mixture of experts", detail + "; only the selected experts' weights are read"});
    }
    if (h.feature_flags & kFeatureTiedEmbeddings) out.push_back({"tied embeddings", "the LM head is the token embedding matrix"});
    if (h.final_logit_softcap > 0.0f)
        out.push_back({"logit soft-cap", "logits z become c*tanh(z/c) with c = " + number(h.final_logit_softcap)});
    return out;
}

} // namespace cflow
