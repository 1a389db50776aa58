// Conversion pre-flight: every geometry/semantics field and every tensor the layout
// needs is checked before the output file is created, with messages naming the field
// or the tensor and the expected versus actual shape.
#include <cmath>
#include <sstream>

#include "converter_internal.h"
#include "tile_geometry.h"

namespace cflow::convert_detail {
namespace {

std::string shape_text(const std::vector<uint64_t>& shape) {
    std::ostringstream s;
    s << '[';
    for (size_t i = 0; i < shape.size(); ++i) s << (i ? " x " : "") << shape[i];
    s << ']';
    return s.str();
}

Error config_error(const SourceModel& src, const std::string& what, ErrorKind kind = ErrorKind::InvalidInput) {
    return make_error(kind, src.source_label + ": config: " + what);
}

// Checks a tensor's shape, dtype and byte size. Vectors may be stored as [n] or [1 x n].
Status check_tensor(const SourceModel& src, const std::string& name, const std::vector<uint64_t>& expected,
                    const std::string& meaning) {
    const TensorView* t = src.find(name);
    if (!t)
        return make_error(src.source_label + ": tensor '" + name + "' is missing (expected shape " + shape_text(expected) +
                          ", " + meaning + ")");
    const std::string where = t->origin.empty() ? src.source_label + ": tensor '" + name + "'" : t->origin;
    bool shape_ok = t->shape == expected;
    if (!shape_ok && expected.size() == 1 && t->shape.size() == 2 && t->shape[0] == 1 && t->shape[1] == expected[0])
        shape_ok = true;
    if (!shape_ok)
        return make_error(where + ": shape " + shape_text(t->shape) + ", expected " + shape_text(expected) + " (" + meaning +
                          ")");
    uint64_t elements = 1;
    for (uint64_t dim : expected) elements *= dim;  // each dim < 2^32 and validated; product of <= 3 dims < 2^64 here
    const uint64_t cols = expected.back();
    // Every source dtype, GGUF block types included, is sized by its block (ggml_blocks.h).
    const GgmlBlockType* block = source_block_type(*t);
    if (!block)
        return make_error(ErrorKind::Unsupported, where + ": unsupported source dtype " +
                                                      std::to_string(static_cast<int>(t->dtype)) + " (ggml type " +
                                                      std::to_string(t->ggml_type) + ")");
    const std::string type_name(block->name);
    if (cols % block->block_elements != 0)
        return make_error(where + ": " + type_name + " rows of " + std::to_string(cols) +
                          " elements are not a whole number of " + std::to_string(block->block_elements) +
                          "-weight blocks");
    const uint64_t bytes = source_bytes(*t, elements);
    if (t->bytes != bytes || (bytes > 0 && t->data == nullptr))
        return make_error(where + ": holds " + std::to_string(t->bytes) + " bytes, but " + shape_text(expected) + " " +
                          type_name + " needs " + std::to_string(bytes));
    return {};
}

Status check_config(const SourceModel& src, const ConvertOptions& options) {
    const ModelConfig& c = src.config;
    const uint32_t max_cols = tile_geometry::kMaxCols;
    auto fail = [&](const std::string& what) -> Status { return config_error(src, what); };
    // A real dtype the tiles cannot hold (bf16) is a feature this writer lacks, not a bad model.
    auto unsupported = [&](const std::string& what) -> Status {
        return config_error(src, what, ErrorKind::Unsupported);
    };
    auto quantisable = [](DType t) { return is_quantisation_target(t); };
    const std::string targets = " is not a type the converter quantises to (f32, f16, q8_0, q4_0, q4_k, q5_k, q6_k)";
    if (!quantisable(options.weight_quant))
        return unsupported("weight quant " + std::string(dtype_name(options.weight_quant)) + targets);
    for (TensorClass tc : kTensorClasses)
        if (!quantisable(quant_for(options, tc)))
            return unsupported(std::string(tensor_class_name(tc)) + " quant " + std::string(dtype_name(quant_for(options, tc))) +
                               targets);
    if (options.format != ContainerFormat::Cflow && options.format != ContainerFormat::Vflow)
        return fail("unknown container format " + std::to_string(static_cast<unsigned>(options.format)) +
                    " (0 = .cflow, 1 = .vflow)");
    if (c.d_model == 0 || c.d_model > max_cols)
        return fail("d_model " + std::to_string(c.d_model) + " must be in 1.." + std::to_string(max_cols));
    if (c.n_layers == 0 || c.n_layers > 0xFFFFu)
        return fail("n_layers " + std::to_string(c.n_layers) + " must be in 1..65535 (TileHeader.layer_id is 16-bit)");
    if (c.n_heads == 0 || c.n_heads > 0xFFFFu) return fail("n_heads " + std::to_string(c.n_heads) + " must be in 1..65535");
    if (c.n_kv_heads == 0 || c.n_kv_heads > 0xFFFFu)
        return fail("n_kv_heads " + std::to_string(c.n_kv_heads) + " must be in 1..65535");
    if (c.head_dim == 0 || c.head_dim > 0xFFFFu) return fail("head_dim " + std::to_string(c.head_dim) + " must be in 1..65535");
    if (c.n_heads % c.n_kv_heads != 0)
        return fail("n_heads " + std::to_string(c.n_heads) + " is not divisible by n_kv_heads " + std::to_string(c.n_kv_heads));
    if (uint64_t{c.n_heads} * c.head_dim > max_cols)
        return fail("n_heads * head_dim = " + std::to_string(uint64_t{c.n_heads} * c.head_dim) + " exceeds " +
                    std::to_string(max_cols) + " (input dim of attn_output)");
    if (c.vocab_size == 0) return fail("vocab_size is 0");
    if (c.d_ff > max_cols) return fail("d_ff " + std::to_string(c.d_ff) + " exceeds " + std::to_string(max_cols));
    if (c.n_experts >= kNoExpert)
        return fail("n_experts " + std::to_string(c.n_experts) + " must be below 255 (TileHeader.expert_id is 8-bit)");
    if (c.top_k > c.n_experts)
        return fail("top_k " + std::to_string(c.top_k) + " exceeds n_experts " + std::to_string(c.n_experts));
    if (c.n_experts > 0 && c.top_k == 0) return fail("top_k is 0 for a model with experts");
    if (c.n_experts > 0 && (c.expert_d_ff == 0 || c.expert_d_ff > max_cols))
        return fail("expert_d_ff " + std::to_string(c.expert_d_ff) + " must be in 1.." + std::to_string(max_cols));
    if (c.shared_expert_d_ff > 0 && c.n_experts == 0) return fail("shared_expert_d_ff set on a model without experts");
    if (c.shared_expert_d_ff > max_cols)
        return fail("shared_expert_d_ff " + std::to_string(c.shared_expert_d_ff) + " exceeds " + std::to_string(max_cols));
    if (static_cast<uint8_t>(c.combine_style) > static_cast<uint8_t>(CombineStyle::FixedPoint))
        return fail("unknown combine_style " + std::to_string(static_cast<unsigned>(c.combine_style)));
    if (c.dense_delay >= c.n_layers)
        return fail("dense_delay " + std::to_string(c.dense_delay) + " must be below n_layers " + std::to_string(c.n_layers));
    if (c.expert_delay >= c.n_layers)
        return fail("expert_delay " + std::to_string(c.expert_delay) + " must be below n_layers " + std::to_string(c.n_layers));
    if (c.combine_style == CombineStyle::ParallelSqrt2 && (c.dense_delay || c.expert_delay))
        return fail("ParallelSqrt2 requires dense_delay = expert_delay = 0");
    if (c.combine_style == CombineStyle::DecoupledStreams && c.merge_interval == 0)
        return fail("merge_interval must be >= 1 for DecoupledStreams");
    if (c.combine_style == CombineStyle::FixedPoint) {
        if (c.n_layers > 255) return fail("FixedPoint stores n_blocks in 8 bits; " + std::to_string(c.n_layers) + " blocks");
        if (c.n_blocks != 0 && c.n_blocks != c.n_layers)
            return fail("FixedPoint n_blocks " + std::to_string(c.n_blocks) + " must equal n_layers " +
                        std::to_string(c.n_layers) + " (one stored layer per unique block)");
        if (c.n_iter == 0) return fail("FixedPoint n_iter must be >= 1");
    }
    if (static_cast<uint8_t>(c.ffn_activation) > static_cast<uint8_t>(FfnActivation::ClampedSwiGLU))
        return fail("unknown ffn_activation " + std::to_string(static_cast<unsigned>(c.ffn_activation)));
    if (c.ffn_activation == FfnActivation::ClampedSwiGLU &&
        !(std::isfinite(c.ffn_alpha) && c.ffn_alpha > 0.0f && std::isfinite(c.ffn_limit) && c.ffn_limit > 0.0f))
        return fail("the clamped SwiGLU needs alpha and limit finite and > 0, got " + std::to_string(c.ffn_alpha) + " and " +
                    std::to_string(c.ffn_limit));
    if (static_cast<uint8_t>(c.router_mode) > static_cast<uint8_t>(RouterMode::SoftmaxAllNoRenorm))
        return fail("unknown router_mode " + std::to_string(static_cast<unsigned>(c.router_mode)));
    if ((c.feature_flags & ~kKnownFeatureFlags) != 0) return fail("unknown feature_flags bits " + std::to_string(c.feature_flags));
    if (!c.rope_skip_layers.empty()) {
        if (c.rope_skip_layers.size() != c.n_layers)
            return fail("rope skip layers: " + std::to_string(c.rope_skip_layers.size()) + " entries for " +
                        std::to_string(c.n_layers) + " layers");
        for (size_t i = 0; i < c.rope_skip_layers.size(); ++i)
            if (c.rope_skip_layers[i] != 0 && c.rope_skip_layers[i] != 1)
                return fail("rope skip layer entry " + std::to_string(i) + " must be 0 or 1");
    }
    if (!c.rope_freq_factors.empty()) {
        const uint32_t want = rotary_dim_count(c.head_dim, c.rope_fraction) / 2;
        if (c.rope_freq_factors.size() != want)
            return fail("rope frequency factors: " + std::to_string(c.rope_freq_factors.size()) + " given, expected " +
                        std::to_string(want) + " (half the rotary dims of head_dim " + std::to_string(c.head_dim) + ")");
        for (size_t i = 0; i < c.rope_freq_factors.size(); ++i)
            if (!std::isfinite(c.rope_freq_factors[i]) || !(c.rope_freq_factors[i] > 0.0f))
                return fail("rope frequency factor " + std::to_string(i) + " is " + std::to_string(c.rope_freq_factors[i]) +
                            ", must be finite and > 0");
    }
    if (!c.sliding_layers.empty()) {
        if (c.sliding_layers.size() != c.n_layers)
            return fail("sliding layers: " + std::to_string(c.sliding_layers.size()) + " entries for " +
                        std::to_string(c.n_layers) + " layers");
        for (size_t i = 0; i < c.sliding_layers.size(); ++i)
            if (c.sliding_layers[i] != 0 && c.sliding_layers[i] != 1)
                return fail("sliding layer entry " + std::to_string(i) + " must be 0 or 1");
        if (c.sliding_window == 0) return fail("sliding layers are listed but the sliding window is 0");
    }
    if (c.max_seq_len > 0 && c.sliding_window > c.max_seq_len)
        return fail("sliding window " + std::to_string(c.sliding_window) + " exceeds the context length " +
                    std::to_string(c.max_seq_len));
    if (!std::isfinite(c.rope_local_theta) || c.rope_local_theta < 0.0f)
        return fail("local rope base " + std::to_string(c.rope_local_theta) + " must be finite and >= 0");
    if (c.rope_local_theta > 0.0f && c.sliding_window == 0)
        return fail("a local rope base is set but no layer has a sliding window");
    if (!c.rope_freq_factors_long.empty()) {
        const uint32_t want = rotary_dim_count(c.head_dim, c.rope_fraction) / 2;
        if (c.rope_freq_factors.size() != want || c.rope_freq_factors_long.size() != want)
            return fail("LongRoPE factors: " + std::to_string(c.rope_freq_factors.size()) + " short and " +
                        std::to_string(c.rope_freq_factors_long.size()) + " long given, expected " + std::to_string(want) +
                        " each (half the rotary dims)");
        for (size_t i = 0; i < c.rope_freq_factors_long.size(); ++i)
            if (!std::isfinite(c.rope_freq_factors_long[i]) || !(c.rope_freq_factors_long[i] > 0.0f))
                return fail("LongRoPE long factor " + std::to_string(i) + " is " + std::to_string(c.rope_freq_factors_long[i]) +
                            ", must be finite and > 0");
        if (c.rope_original_context == 0) return fail("LongRoPE needs the original context length (> 0)");
    }
    if (!std::isfinite(c.rope_attn_factor) || c.rope_attn_factor < 0.0f)
        return fail("rope attention factor " + std::to_string(c.rope_attn_factor) + " must be finite and >= 0");
    if (!std::isfinite(c.query_scale) || c.query_scale < 0.0f)
        return fail("query scale " + std::to_string(c.query_scale) + " must be finite and >= 0");
    if (!std::isfinite(c.norm_eps) || c.norm_eps < 0.0f) return fail("norm_eps must be finite and >= 0");
    if (!std::isfinite(c.rope_theta) || c.rope_theta <= 0.0f) return fail("rope_theta must be > 0");
    if (!(c.rope_fraction > 0.0f && c.rope_fraction <= 1.0f)) return fail("rope_fraction must be in (0, 1]");
    if (c.rope_interleaved && c.head_dim % 2 != 0) return fail("rope_interleaved needs an even head_dim");
    if (!std::isfinite(c.final_logit_softcap) || c.final_logit_softcap < 0.0f ||
        !std::isfinite(c.attn_logit_softcap) || c.attn_logit_softcap < 0.0f || !std::isfinite(c.embedding_scale))
        return fail("soft-caps must be finite and >= 0, embedding_scale finite");
    return {};
}

} // namespace

Status validate_source(const SourceModel& src, const ConvertOptions& options) {
    if (Status s = check_config(src, options); !s) return s;
    const ModelConfig& c = src.config;
    const uint64_t d = c.d_model, q_rows = uint64_t{c.n_heads} * c.head_dim, kv_rows = uint64_t{c.n_kv_heads} * c.head_dim;
    const uint64_t dk = c.head_dim, vocab = c.vocab_size;
    Status first_failure;  // the first problem found; later checks are skipped
    auto need = [&](const std::string& name, std::vector<uint64_t> shape, const std::string& meaning) {
        if (first_failure) first_failure = check_tensor(src, name, shape, meaning);
    };
    need("token_embd.weight", {vocab, d}, "vocab_size x d_model");
    need("output_norm.weight", {d}, "d_model");
    const bool tied = (c.feature_flags & kFeatureTiedEmbeddings) != 0 || !src.find("output.weight");
    if (!tied) need("output.weight", {vocab, d}, "vocab_size x d_model");

    bool any_qk_norm = false;
    for (uint32_t l = 0; l < c.n_layers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        any_qk_norm = any_qk_norm || src.find(p + "attn_q_norm.weight") || src.find(p + "attn_k_norm.weight");
    }
    any_qk_norm = any_qk_norm || (c.feature_flags & kFeatureQkNorm) != 0;
    bool any_post_norm = false;  // Gemma 2/3's sandwich norms: in every layer or in none
    for (uint32_t l = 0; l < c.n_layers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        any_post_norm = any_post_norm || src.find(p + "post_attention_norm.weight") || src.find(p + "post_ffw_norm.weight");
    }

    // gpt-oss's sinks and biases: in every layer or in none (layer 0 decides, as the layout does).
    const bool sinks = src.find("blk.0.attn_sinks.weight") != nullptr;
    const bool out_bias = src.find("blk.0.attn_output.bias") != nullptr;
    const bool moe_biases = c.n_experts > 0 && src.find("blk.0.ffn_gate_inp.bias") != nullptr;
    for (uint32_t l = 0; l < c.n_layers && first_failure; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        need(p + "attn_norm.weight", {d}, "d_model");
        if (sinks) need(p + "attn_sinks.weight", {c.n_heads}, "n_heads; layer 0 has attention sinks, so every layer needs them");
        if (out_bias) need(p + "attn_output.bias", {d}, "d_model; layer 0 has an output bias, so every layer needs one");
        if (moe_biases) {
            const uint64_t e = c.n_experts, eff = c.expert_d_ff;
            const std::string why = "; layer 0 has MoE biases, so every layer needs them";
            need(p + "ffn_gate_inp.bias", {e}, "n_experts" + why);
            need(p + "ffn_gate_exps.bias", {e, eff}, "n_experts x expert_d_ff" + why);
            need(p + "ffn_up_exps.bias", {e, eff}, "n_experts x expert_d_ff" + why);
            need(p + "ffn_down_exps.bias", {e, d}, "n_experts x d_model" + why);
        }
        if (src.find(p + "attn_qkv.weight")) {  // fused (Phi-3)
            need(p + "attn_qkv.weight", {q_rows + 2 * kv_rows, d}, "(n_heads + 2 n_kv_heads) * head_dim x d_model (fused Q, K, V)");
        } else {
            need(p + "attn_q.weight", {q_rows, d}, "n_heads * head_dim x d_model");
            need(p + "attn_k.weight", {kv_rows, d}, "n_kv_heads * head_dim x d_model");
            need(p + "attn_v.weight", {kv_rows, d}, "n_kv_heads * head_dim x d_model");
        }
        need(p + "attn_output.weight", {d, q_rows}, "d_model x n_heads * head_dim");
        if (any_qk_norm) {
            need(p + "attn_q_norm.weight", {dk}, "head_dim; Q/K norm is present in some layer, so every layer needs it");
            need(p + "attn_k_norm.weight", {dk}, "head_dim; Q/K norm is present in some layer, so every layer needs it");
        }
        if (any_post_norm) {
            need(p + "post_attention_norm.weight", {d}, "d_model; post-norms are present in some layer, so every layer needs them");
            if (c.d_ff > 0)
                need(p + "post_ffw_norm.weight", {d}, "d_model; post-norms are present in some layer, so every layer needs them");
        }
        if (src.find(p + "attn_q.bias")) need(p + "attn_q.bias", {q_rows}, "n_heads * head_dim");
        if (src.find(p + "attn_k.bias")) need(p + "attn_k.bias", {kv_rows}, "n_kv_heads * head_dim");
        if (src.find(p + "attn_v.bias")) need(p + "attn_v.bias", {kv_rows}, "n_kv_heads * head_dim");
        if (c.d_ff > 0) {
            need(p + "ffn_norm.weight", {d}, "d_model");
            if (src.find(p + "ffn_gate_up.weight")) {  // fused (Phi-3)
                need(p + "ffn_gate_up.weight", {2ull * c.d_ff, d}, "2 d_ff x d_model (fused gate, up)");
            } else {
                need(p + "ffn_gate.weight", {c.d_ff, d}, "d_ff x d_model");
                need(p + "ffn_up.weight", {c.d_ff, d}, "d_ff x d_model");
            }
            need(p + "ffn_down.weight", {d, c.d_ff}, "d_model x d_ff");
        }
        if (c.n_experts > 0) {
            const uint64_t e = c.n_experts, eff = c.expert_d_ff;
            need(p + (src.find(p + "moe_norm.weight") ? "moe_norm.weight" : "ffn_norm.weight"), {d},
                 "d_model; the MoE norm falls back to ffn_norm");
            need(p + "ffn_gate_inp.weight", {e, d}, "n_experts x d_model");
            if (src.find(p + "ffn_gate_exps.weight") || !src.find(p + "ffn_gate.0.weight")) {
                need(p + "ffn_gate_exps.weight", {e, eff, d}, "n_experts x expert_d_ff x d_model");
                need(p + "ffn_up_exps.weight", {e, eff, d}, "n_experts x expert_d_ff x d_model");
                need(p + "ffn_down_exps.weight", {e, d, eff}, "n_experts x d_model x expert_d_ff");
            } else {  // per-expert HF tensors (source_model.h): every expert needs all three
                for (uint32_t x = 0; x < c.n_experts; ++x) {
                    std::string ex = ".";  // built by appends: GCC 12 -O3 warns (-Wrestrict) on "." + to_string(x)
                    ex += std::to_string(x);
                    ex += ".weight";
                    need(p + "ffn_gate" + ex, {eff, d}, "expert_d_ff x d_model (per-expert tensor)");
                    need(p + "ffn_up" + ex, {eff, d}, "expert_d_ff x d_model (per-expert tensor)");
                    need(p + "ffn_down" + ex, {d, eff}, "d_model x expert_d_ff (per-expert tensor)");
                }
            }
            if (c.shared_expert_d_ff > 0) {
                const uint64_t sff = c.shared_expert_d_ff;
                need(p + "ffn_gate_shexp.weight", {sff, d}, "shared_expert_d_ff x d_model");
                need(p + "ffn_up_shexp.weight", {sff, d}, "shared_expert_d_ff x d_model");
                need(p + "ffn_down_shexp.weight", {d, sff}, "d_model x shared_expert_d_ff");
                need(p + "ffn_gate_inp_shexp.weight", {d}, "d_model (sigmoid gate of the shared expert)");
            }
        }
    }
    return first_failure;
}

} // namespace cflow::convert_detail
