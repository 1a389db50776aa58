// config.json interpretation and HF -> canonical tensor-name mapping.
#include "hf_config.h"
#include "yarn_rope.h"
#include "cflow/formats/llama3_rope.h"
#include "cflow/formats/whole_file.h"
#include "cflow/formats/json_depth.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <numbers>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

namespace cflow::hf {

namespace {

using nlohmann::json;

std::string squash(std::string s) {  // "Parallel_Sqrt2" -> "parallelsqrt2"
    std::string out;
    for (unsigned char c : s)
        if (c != '_' && c != '-' && c != ' ') out.push_back(static_cast<char>(std::tolower(c)));
    return out;
}

class ConfigReader {
public:
    ConfigReader(const json& j, std::string label) : j_(j), label_(std::move(label)) {}

    Error missing(const std::string& field) const {
        return make_error(label_ + ": required field '" + field + "' is missing");
    }
    Error bad(const std::string& field, const std::string& why) const {
        return make_error(label_ + ": field '" + field + "' " + why);
    }
    // A valid Hugging Face value this project does not implement (an activation, a layer mix).
    Error unsupported(const std::string& field, const std::string& why) const {
        return make_error(ErrorKind::Unsupported, label_ + ": field '" + field + "' " + why);
    }
    bool has(const std::string& field) const { return j_.contains(field) && !j_.at(field).is_null(); }

    // Unsigned integer field; fallback == nullopt makes it required.
    Result<uint32_t> u32(const std::string& field, std::optional<uint32_t> fallback) const {
        if (!has(field)) {
            if (fallback) return *fallback;
            return missing(field);
        }
        const json& v = j_.at(field);
        if (!v.is_number_integer()) return bad(field, "must be an integer");
        if (v.is_number_unsigned()) {
            uint64_t x = v.get<uint64_t>();
            if (x > std::numeric_limits<uint32_t>::max()) return bad(field, "value " + v.dump() + " is out of range");
            return static_cast<uint32_t>(x);
        }
        int64_t x = v.get<int64_t>();
        if (x < 0 || x > std::numeric_limits<uint32_t>::max()) return bad(field, "value " + v.dump() + " is out of range");
        return static_cast<uint32_t>(x);
    }
    Result<uint8_t> u8(const std::string& field, uint8_t fallback) const {
        auto r = u32(field, fallback);
        if (!r) return r.take_error();
        if (*r > 255) return bad(field, "value " + std::to_string(*r) + " does not fit 0..255");
        return static_cast<uint8_t>(*r);
    }
    Result<float> f32(const std::string& field, float fallback) const {
        if (!has(field)) return fallback;
        const json& v = j_.at(field);
        if (!v.is_number()) return bad(field, "must be a number");
        return v.get<float>();
    }
    Result<bool> boolean(const std::string& field, bool fallback) const {
        if (!has(field)) return fallback;
        const json& v = j_.at(field);
        if (!v.is_boolean()) return bad(field, "must be true or false");
        return v.get<bool>();
    }
    std::optional<std::string> str(const std::string& field) const {
        if (!has(field) || !j_.at(field).is_string()) return std::nullopt;
        return j_.at(field).get<std::string>();
    }
    const json& at(const std::string& field) const { return j_.at(field); }
    const std::string& label() const { return label_; }

private:
    const json& j_;
    std::string label_;
};

#define CFLOW_TRY_ASSIGN(dst, expr)          \
    do {                                     \
        auto r_ = (expr);                    \
        if (!r_) return r_.take_error();     \
        dst = *r_;                           \
    } while (0)

Result<Family> detect_family(const ConfigReader& r) {
    static const std::map<std::string, Family> kByClass = {
        {"LlamaForCausalLM", Family::Llama},       {"MistralForCausalLM", Family::Mistral},
        {"Qwen2ForCausalLM", Family::Qwen2},       {"MixtralForCausalLM", Family::Mixtral},
        {"Qwen2MoeForCausalLM", Family::Qwen2Moe}, {"OlmoeForCausalLM", Family::Olmoe},
        {"Qwen3ForCausalLM", Family::Qwen3},       {"Qwen3MoeForCausalLM", Family::Qwen3Moe},
        {"SmolLM3ForCausalLM", Family::SmolLM3},   {"GemmaForCausalLM", Family::Gemma},
        {"Gemma2ForCausalLM", Family::Gemma2},     {"Gemma3ForCausalLM", Family::Gemma3},
        {"Phi3ForCausalLM", Family::Phi3},         {"GptOssForCausalLM", Family::GptOss},
        {"CflowForCausalLM", Family::Cflow}};
    static const std::map<std::string, Family> kByType = {
        {"llama", Family::Llama},     {"mistral", Family::Mistral},    {"qwen2", Family::Qwen2},
        {"mixtral", Family::Mixtral}, {"qwen2_moe", Family::Qwen2Moe}, {"olmoe", Family::Olmoe},
        {"qwen3", Family::Qwen3},     {"qwen3_moe", Family::Qwen3Moe}, {"smollm3", Family::SmolLM3},
        {"gemma", Family::Gemma},     {"gemma2", Family::Gemma2},      {"gemma3_text", Family::Gemma3},
        {"phi3", Family::Phi3},       {"gpt_oss", Family::GptOss},
        {"cflow", Family::Cflow}};
    const char* kSupported = "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, MixtralForCausalLM, "
                             "Qwen2MoeForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, SmolLM3ForCausalLM, "
                             "OlmoeForCausalLM, GemmaForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, Phi3ForCausalLM (Phi-3, Phi-3.5, Phi-4-mini), "
                             "GptOssForCausalLM, CflowForCausalLM";
    if (r.has("architectures")) {
        const json& a = r.at("architectures");
        if (!a.is_array() || a.empty() || !a.front().is_string())
            return r.bad("architectures", "must be a non-empty list of class names");
        std::string name = a.front().get<std::string>();
        auto it = kByClass.find(name);
        if (it == kByClass.end())
            return make_error(ErrorKind::Unsupported, r.label() + ": unsupported architecture '" + name +
                                                          "' (field 'architectures'); supported: " + kSupported);
        return it->second;
    }
    if (auto type = r.str("model_type")) {
        auto it = kByType.find(*type);
        if (it == kByType.end())
            return make_error(ErrorKind::Unsupported, r.label() + ": unsupported model_type '" + *type +
                                                          "'; supported architectures: " + kSupported);
        return it->second;
    }
    return r.missing("architectures");
}

// Pipeline-native extension fields (this project's own checkpoints), all optional.
Status read_pipeline_fields(const ConfigReader& r, ModelConfig& c, bool read_hidden_act) {
    if (r.has("combine_style")) {
        const json& v = r.at("combine_style");
        static const std::map<std::string, CombineStyle> kNames = {
            {"parallelsqrt2", CombineStyle::ParallelSqrt2}, {"delayedsum", CombineStyle::DelayedSum},
            {"asyncexperts", CombineStyle::AsyncExperts},   {"sequential", CombineStyle::Sequential},
            {"decoupledstreams", CombineStyle::DecoupledStreams}, {"pipelineregisters", CombineStyle::PipelineRegisters},
            {"fixedpoint", CombineStyle::FixedPoint}};
        if (v.is_number_integer()) {
            int64_t x = v.get<int64_t>();
            if (x < 0 || x > static_cast<int64_t>(CombineStyle::FixedPoint)) return r.bad("combine_style", "value " + v.dump() + " is not 0..6");
            c.combine_style = static_cast<CombineStyle>(x);
        } else if (v.is_string()) {
            auto it = kNames.find(squash(v.get<std::string>()));
            if (it == kNames.end()) return r.bad("combine_style", "name " + v.dump() + " is not a known combine style");
            c.combine_style = it->second;
        } else {
            return r.bad("combine_style", "must be an integer or a name");
        }
    }
    CFLOW_TRY_ASSIGN(c.dense_delay, r.u8("dense_delay", 0));
    CFLOW_TRY_ASSIGN(c.expert_delay, r.u8("expert_delay", 0));
    CFLOW_TRY_ASSIGN(c.merge_interval, r.u8("merge_interval", 3));
    CFLOW_TRY_ASSIGN(c.n_blocks, r.u8("n_blocks", 0));
    CFLOW_TRY_ASSIGN(c.n_iter, r.u8("n_iter", 0));
    CFLOW_TRY_ASSIGN(c.final_logit_softcap, r.f32("final_logit_softcap", 0.0f));
    if (auto act = r.str("ffn_activation")) {
        std::string a = squash(*act);
        if (a == "swiglu") c.ffn_activation = FfnActivation::SwiGLU;
        else if (a == "geglutanh") c.ffn_activation = FfnActivation::GeGLUTanh;
        else return r.bad("ffn_activation", "'" + *act + "' is not one of swiglu, geglu_tanh");
    } else if (auto hidden = r.str("hidden_act"); hidden && read_hidden_act) {
        if (*hidden == "gelu_pytorch_tanh") c.ffn_activation = FfnActivation::GeGLUTanh;
        else if (*hidden == "silu" || *hidden == "swish") c.ffn_activation = FfnActivation::SwiGLU;
        else return r.unsupported("hidden_act", "'" + *hidden + "' is not supported (silu or gelu_pytorch_tanh)");
    }
    if (r.has("router_mode")) {
        const json& v = r.at("router_mode");
        if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1)) {
            c.router_mode = static_cast<RouterMode>(v.get<int64_t>());
        } else if (v.is_string() && squash(v.get<std::string>()) == "softmaxtopk") {
            c.router_mode = RouterMode::SoftmaxTopK;
        } else if (v.is_string() && squash(v.get<std::string>()) == "softmaxallnorenorm") {
            c.router_mode = RouterMode::SoftmaxAllNoRenorm;
        } else {
            return r.bad("router_mode", "value " + v.dump() + " is not 0/1, softmax_topk or softmax_all_no_renorm");
        }
    }
    return Status::success();
}

// CflowForCausalLM: a dense FFN and an MoE, each optional (intermediate_size 0 / num_experts 0;
// no Llama-style "intermediate_size is required and non-zero"). router_mode / ffn_activation are
// authoritative (read_pipeline_fields); norm_topk_prob only stands in for a missing router_mode.
Status read_cflow_ffn_fields(const ConfigReader& r, ModelConfig& c) {
    CFLOW_TRY_ASSIGN(c.d_ff, r.u32("intermediate_size", std::nullopt));
    CFLOW_TRY_ASSIGN(c.n_experts, r.u32("num_experts", 0));
    if (c.n_experts == 0) {
        uint32_t k = 0;
        CFLOW_TRY_ASSIGN(k, r.u32("num_experts_per_tok", 0));
        if (k != 0) return r.bad("num_experts_per_tok", std::to_string(k) + " is set but num_experts is 0");
        uint32_t shared = 0;
        CFLOW_TRY_ASSIGN(shared, r.u32("shared_expert_intermediate_size", 0));
        if (shared != 0) return r.bad("shared_expert_intermediate_size", std::to_string(shared) + " is set but num_experts is 0");
    } else {
        CFLOW_TRY_ASSIGN(c.expert_d_ff, r.u32("moe_intermediate_size", std::nullopt));
        if (c.expert_d_ff == 0) return r.bad("moe_intermediate_size", "is 0 but num_experts is " + std::to_string(c.n_experts));
        CFLOW_TRY_ASSIGN(c.shared_expert_d_ff, r.u32("shared_expert_intermediate_size", 0));
    }
    if (c.d_ff == 0 && c.n_experts == 0)
        return r.bad("intermediate_size", "and num_experts are both 0: the model has neither a dense FFN nor experts");
    bool norm_topk = true;
    CFLOW_TRY_ASSIGN(norm_topk, r.boolean("norm_topk_prob", true));
    c.router_mode = norm_topk ? RouterMode::SoftmaxTopK : RouterMode::SoftmaxAllNoRenorm;
    return Status::success();
}

// Llama 3.1's rope scaling as transformers computes it (modeling_rope_utils.py,
// _compute_llama3_parameters): frequencies whose wavelength is above
// original_max_position_embeddings / low_freq_factor are divided by factor, those below
// .. / high_freq_factor kept, the band between interpolated. Returned as one divisor per rotary
// frequency (what llama.cpp stores as rope_freqs.weight): inv_freq_scaled = inv_freq / divisor.
Result<std::vector<float>> llama3_rope_factors(const ConfigReader& rs, const ModelConfig& c) {
    float factor = 0, low = 0, high = 0;
    uint32_t original_context = 0;
    CFLOW_TRY_ASSIGN(factor, rs.f32("factor", 0.0f));
    CFLOW_TRY_ASSIGN(low, rs.f32("low_freq_factor", 1.0f));
    CFLOW_TRY_ASSIGN(high, rs.f32("high_freq_factor", 4.0f));
    CFLOW_TRY_ASSIGN(original_context, rs.u32("original_max_position_embeddings", std::nullopt));
    if (!std::isfinite(factor) || !(factor >= 1.0f)) return rs.bad("factor", "must be a finite number >= 1");
    if (!std::isfinite(low) || !(low > 0.0f)) return rs.bad("low_freq_factor", "must be a finite number > 0");
    if (!std::isfinite(high) || !(high > low)) return rs.bad("high_freq_factor", "must be finite and above low_freq_factor");
    if (original_context == 0) return rs.bad("original_max_position_embeddings", "must be > 0");
    return llama3_rope_divisors({factor, low, high, original_context}, c.rope_theta, rotary_dim_count(c.head_dim, c.rope_fraction));
}

// LongRoPE (Phi-3.5, Phi-4-mini; transformers' _compute_longrope_parameters): one short and one
// long factor per rotary frequency (inv_freq_i = 1 / (factor_i * base^(2i/rot))), the long ones
// for contexts past original_max_position_embeddings, and cos/sin multiplied by attention_factor
// (default sqrt(1 + ln(max / original) / ln(original)) when max > original, else 1).
Status read_longrope(const ConfigReader& r, ModelConfig& c) {
    const ConfigReader rs(r.at("rope_scaling"), r.label() + ": rope_scaling");
    const uint32_t want = rotary_dim_count(c.head_dim, c.rope_fraction) / 2;
    auto factors = [&](const char* field, std::vector<float>& out) -> Status {
        if (!rs.has(field) || !rs.at(field).is_array() || rs.at(field).size() != want)
            return rs.bad(field, "must list " + std::to_string(want) + " factors (half the rotary dims)");
        out.clear();
        for (const json& v : rs.at(field)) {
            if (!v.is_number() || !std::isfinite(v.get<double>()) || !(v.get<double>() > 0.0))
                return rs.bad(field, "entry " + std::to_string(out.size()) + " " + v.dump() + " is not a finite number > 0");
            out.push_back(v.get<float>());
        }
        return Status::success();
    };
    if (Status s = factors("short_factor", c.rope_freq_factors); !s) return s;
    if (Status s = factors("long_factor", c.rope_freq_factors_long); !s) return s;
    uint32_t original = 0;
    CFLOW_TRY_ASSIGN(original, rs.u32("original_max_position_embeddings", 0));
    if (original == 0) CFLOW_TRY_ASSIGN(original, r.u32("original_max_position_embeddings", c.max_seq_len));
    if (original == 0) return r.missing("original_max_position_embeddings");
    c.rope_original_context = original;
    const double scale = double(c.max_seq_len) / double(original);
    double attention = scale > 1.0 ? std::sqrt(1.0 + std::log(scale) / std::log(double(original))) : 1.0;
    if (rs.has("attention_factor")) {
        float given = 0.0f;
        CFLOW_TRY_ASSIGN(given, rs.f32("attention_factor", 1.0f));
        if (!std::isfinite(given) || !(given > 0.0f)) return rs.bad("attention_factor", "must be a finite number > 0");
        attention = given;
    }
    c.rope_attn_factor = float(attention);
    return Status::success();
}

// SmolLM3 (modeling_smollm3.py): layer l rotates queries and keys only when no_rope_layers[l]
// is 1; without the list, every no_rope_layer_interval-th layer (default 4) skips RoPE.
Status read_smollm3_nope_layers(const ConfigReader& r, ModelConfig& c) {
    bool sliding = false;
    CFLOW_TRY_ASSIGN(sliding, r.boolean("use_sliding_window", false));
    if (sliding) return r.unsupported("use_sliding_window", "is true: SmolLM3's sliding-window layers are not supported");
    c.rope_skip_layers.assign(c.n_layers, 0);
    if (r.has("no_rope_layers")) {
        const json& list = r.at("no_rope_layers");
        if (!list.is_array() || list.size() != c.n_layers)
            return r.bad("no_rope_layers", "must list one 0 or 1 per layer (" + std::to_string(c.n_layers) + ")");
        for (size_t l = 0; l < list.size(); ++l) {
            if (!list[l].is_number_integer() || (list[l].get<int64_t>() != 0 && list[l].get<int64_t>() != 1))
                return r.bad("no_rope_layers", "entry " + std::to_string(l) + " must be 0 or 1");
            c.rope_skip_layers[l] = list[l].get<int64_t>() == 0 ? 1 : 0;
        }
        return Status::success();
    }
    uint32_t interval = 4;
    CFLOW_TRY_ASSIGN(interval, r.u32("no_rope_layer_interval", 4));
    if (interval == 0) return r.bad("no_rope_layer_interval", "must be >= 1");
    for (uint32_t l = 0; l < c.n_layers; ++l) c.rope_skip_layers[l] = (l + 1) % interval == 0 ? 1 : 0;
    return Status::success();
}

// Which layers slide: a `layer_types` list ("sliding_attention" / "full_attention") when the
// config has one, else the family's rule (Gemma 2 and gpt-oss: every even layer; Gemma 3: all
// but every sliding_window_pattern-th, default 6), as modeling_gemma2.py / modeling_gemma3.py /
// configuration_gpt_oss.py decide.
Status read_sliding_layers(const ConfigReader& r, Family family, ModelConfig& c) {
    c.sliding_layers.assign(c.n_layers, 0);
    if (r.has("layer_types")) {
        const json& list = r.at("layer_types");
        if (!list.is_array() || list.size() != c.n_layers)
            return r.bad("layer_types", "must list one attention type per layer (" + std::to_string(c.n_layers) + ")");
        for (size_t l = 0; l < list.size(); ++l) {
            const std::string type = list[l].is_string() ? list[l].get<std::string>() : std::string();
            if (type != "sliding_attention" && type != "full_attention")
                return r.unsupported("layer_types", "entry " + std::to_string(l) + " is " + list[l].dump() +
                                                        " (sliding_attention or full_attention)");
            c.sliding_layers[l] = type == "sliding_attention" ? 1 : 0;
        }
        return Status::success();
    }
    uint32_t period = family == Family::Gemma3 ? 6 : 2;
    if (family == Family::Gemma3) CFLOW_TRY_ASSIGN(period, r.u32("sliding_window_pattern", 6));
    if (period == 0) return r.bad("sliding_window_pattern", "must be >= 1");
    for (uint32_t l = 0; l < c.n_layers; ++l) c.sliding_layers[l] = (l + 1) % period != 0 ? 1 : 0;
    return Status::success();
}

// Gemma, Gemma 2, Gemma 3 (modeling_gemma*.py): embeddings times sqrt(hidden_size), the
// tanh-approximate GELU gate, scores scaled by query_pre_attn_scalar^-0.5, soft-capped attention
// and final logits (Gemma 2), sliding-window layers (2 and 3) whose own RoPE base is
// rope_local_base_freq (3). Norm weights are shifted by the reader (stores_norm_minus_one).
Status read_gemma_fields(const ConfigReader& r, Family family, ModelConfig& c) {
    c.feature_flags |= kFeatureEmbedScaleSqrtD;
    for (const char* act : {"hidden_activation", "hidden_act"}) {
        auto name = r.str(act);
        if (!name) continue;
        // Gemma 1's config says "gelu" but transformers runs it as gelu_pytorch_tanh, as llama.cpp does.
        if (*name != "gelu_pytorch_tanh" && !(family == Family::Gemma && *name == "gelu"))
            return r.unsupported(act, "'" + *name + "' is not supported for Gemma (gelu_pytorch_tanh)");
        break;
    }
    c.ffn_activation = FfnActivation::GeGLUTanh;
    float scalar = float(c.head_dim);
    CFLOW_TRY_ASSIGN(scalar, r.f32("query_pre_attn_scalar", float(c.head_dim)));
    if (!std::isfinite(scalar) || !(scalar > 0.0f)) return r.bad("query_pre_attn_scalar", "must be a finite number > 0");
    if (scalar != float(c.head_dim)) c.query_scale = float(1.0 / std::sqrt(double(scalar)));
    CFLOW_TRY_ASSIGN(c.attn_logit_softcap, r.f32("attn_logit_softcapping", 0.0f));
    CFLOW_TRY_ASSIGN(c.final_logit_softcap, r.f32("final_logit_softcapping", 0.0f));
    if (!std::isfinite(c.attn_logit_softcap) || c.attn_logit_softcap < 0.0f)
        return r.bad("attn_logit_softcapping", "must be a finite number >= 0");
    if (!std::isfinite(c.final_logit_softcap) || c.final_logit_softcap < 0.0f)
        return r.bad("final_logit_softcapping", "must be a finite number >= 0");
    if (family == Family::Gemma) return Status::success();
    CFLOW_TRY_ASSIGN(c.sliding_window, r.u32("sliding_window", std::nullopt));
    if (c.sliding_window == 0) return r.bad("sliding_window", "must be >= 1");
    if (Status s = read_sliding_layers(r, family, c); !s) return s;
    if (family == Family::Gemma3) {
        CFLOW_TRY_ASSIGN(c.rope_local_theta, r.f32("rope_local_base_freq", 10000.0f));
        if (!std::isfinite(c.rope_local_theta) || !(c.rope_local_theta > 0.0f))
            return r.bad("rope_local_base_freq", "must be a finite number > 0");
    }
    return Status::success();
}

// YaRN as transformers computes it (modeling_rope_utils.py, _compute_yarn_parameters): factor,
// original_max_position_embeddings (else max_position_embeddings), beta_fast / beta_slow (32 / 1),
// the correction range rounded outward unless truncate is false (gpt-oss says false), and
// cos/sin times attention_factor, else mscale / mscale_all_dim's ratio, else 0.1 ln(factor) + 1.
Status read_yarn(const ConfigReader& r, ModelConfig& c) {
    const ConfigReader rs(r.at("rope_scaling"), r.label() + ": rope_scaling");
    yarn::Params p;
    p.rotary_dims = rotary_dim_count(c.head_dim, c.rope_fraction);
    p.base = c.rope_theta;
    CFLOW_TRY_ASSIGN(p.factor, rs.f32("factor", 0.0f));
    if (!std::isfinite(p.factor) || !(p.factor >= 1.0f)) return rs.bad("factor", "must be a finite number >= 1 for YaRN");
    CFLOW_TRY_ASSIGN(p.original_context, rs.u32("original_max_position_embeddings", c.max_seq_len));
    if (p.original_context == 0)
        return rs.bad("original_max_position_embeddings", "(or max_position_embeddings) must be > 0 for YaRN");
    CFLOW_TRY_ASSIGN(p.beta_fast, rs.f32("beta_fast", 32.0f));
    CFLOW_TRY_ASSIGN(p.beta_slow, rs.f32("beta_slow", 1.0f));
    for (auto [field, v] : {std::pair{"beta_fast", p.beta_fast}, std::pair{"beta_slow", p.beta_slow}})
        if (!std::isfinite(v) || !(v > 0.0f)) return rs.bad(field, "must be a finite number > 0");
    CFLOW_TRY_ASSIGN(p.truncate, rs.boolean("truncate", true));
    float attention = yarn::attention_factor(p.factor);
    if (rs.has("attention_factor")) {
        CFLOW_TRY_ASSIGN(attention, rs.f32("attention_factor", 1.0f));
    } else if (rs.has("mscale") && rs.has("mscale_all_dim")) {
        float mscale = 0.0f, mscale_all = 0.0f;
        CFLOW_TRY_ASSIGN(mscale, rs.f32("mscale", 0.0f));
        CFLOW_TRY_ASSIGN(mscale_all, rs.f32("mscale_all_dim", 0.0f));
        if (mscale != 0.0f && mscale_all != 0.0f) {
            const auto get = [&](float m) { return p.factor <= 1.0f ? 1.0 : 0.1 * m * std::log(double(p.factor)) + 1.0; };
            attention = float(get(mscale) / get(mscale_all));
        }
    }
    if (!std::isfinite(attention) || !(attention > 0.0f)) return rs.bad("attention_factor", "must be a finite number > 0");
    c.rope_freq_factors = yarn::freq_divisors(p);
    c.rope_attn_factor = attention;
    return Status::success();
}

// gpt-oss (modeling_gpt_oss.py): a biased router whose top-k logits are softmaxed, experts with
// biases and the clamped SwiGLU (alpha 1.702 fixed in GptOssExperts, limit swiglu_limit), a sink
// logit per head, every other layer sliding (layer_types). Experts stored as MXFP4 blocks are the
// only quantization the checkpoints use; any other quant_method changes what the bytes mean.
Status read_gpt_oss_fields(const ConfigReader& r, ModelConfig& c) {
    c.router_mode = RouterMode::SoftmaxTopK;
    c.ffn_activation = FfnActivation::ClampedSwiGLU;
    c.ffn_alpha = 1.702f;
    CFLOW_TRY_ASSIGN(c.ffn_limit, r.f32("swiglu_limit", 7.0f));
    if (!std::isfinite(c.ffn_limit) || !(c.ffn_limit > 0.0f)) return r.bad("swiglu_limit", "must be a finite number > 0");
    CFLOW_TRY_ASSIGN(c.sliding_window, r.u32("sliding_window", 128));
    if (c.sliding_window == 0) return r.bad("sliding_window", "must be >= 1");
    if (Status s = read_sliding_layers(r, Family::GptOss, c); !s) return s;
    if (r.has("quantization_config")) {
        const json& q = r.at("quantization_config");
        const std::string method = q.is_object() && q.contains("quant_method") && q.at("quant_method").is_string()
                                       ? q.at("quant_method").get<std::string>() : std::string();
        if (method != "mxfp4")
            return r.unsupported("quantization_config", "has quant_method '" + method + "': only mxfp4 (the released gpt-oss experts) is supported");
    }
    return Status::success();
}

Result<HfConfig> interpret(const ConfigReader& r) {
    HfConfig out;
    CFLOW_TRY_ASSIGN(out.family, detect_family(r));
    ModelConfig& c = out.config;
    static const std::map<Family, std::string> kArch = {
        {Family::Llama, "llama"},     {Family::Mistral, "mistral"},    {Family::Qwen2, "qwen2"},
        {Family::Mixtral, "mixtral"}, {Family::Qwen2Moe, "qwen2moe"}, {Family::Olmoe, "olmoe"},
        {Family::Qwen3, "qwen3"},     {Family::Qwen3Moe, "qwen3moe"}, {Family::SmolLM3, "smollm3"},
        {Family::Gemma, "gemma"},     {Family::Gemma2, "gemma2"},     {Family::Gemma3, "gemma3"},
        {Family::Phi3, "phi3"},       {Family::GptOss, "gpt-oss"},
        {Family::Cflow, "cflow"}};
    c.architecture = kArch.at(out.family);

    std::string rope_scaling_type = "default";
    if (r.has("rope_scaling")) {
        const json& rs = r.at("rope_scaling");
        rope_scaling_type = "unknown";
        if (rs.is_object()) {
            for (const char* k : {"rope_type", "type"})
                if (rs.contains(k) && rs.at(k).is_string()) rope_scaling_type = rs.at(k).get<std::string>();
        }
        if (rope_scaling_type == "su") rope_scaling_type = "longrope";  // the early Phi-3 configs' name
        if (rope_scaling_type != "default" && rope_scaling_type != "llama3" && rope_scaling_type != "linear" &&
            rope_scaling_type != "longrope" && rope_scaling_type != "yarn")
            return r.unsupported("rope_scaling",
                                 "of type '" + rope_scaling_type + "' is not supported (default, linear, llama3, longrope, yarn)");
    }

    CFLOW_TRY_ASSIGN(c.d_model, r.u32("hidden_size", std::nullopt));
    CFLOW_TRY_ASSIGN(c.n_layers, r.u32("num_hidden_layers", std::nullopt));
    CFLOW_TRY_ASSIGN(c.n_heads, r.u32("num_attention_heads", std::nullopt));
    CFLOW_TRY_ASSIGN(c.n_kv_heads, r.u32("num_key_value_heads", c.n_heads));
    CFLOW_TRY_ASSIGN(c.vocab_size, r.u32("vocab_size", std::nullopt));
    if (c.n_heads == 0 || c.d_model == 0 || c.n_layers == 0)
        return make_error(r.label() + ": hidden_size, num_hidden_layers and num_attention_heads must be non-zero");
    if (c.n_kv_heads == 0 || c.n_heads % c.n_kv_heads != 0)
        return r.bad("num_key_value_heads", std::to_string(c.n_kv_heads) + " does not divide num_attention_heads " + std::to_string(c.n_heads));
    if (!r.has("head_dim") && c.d_model % c.n_heads != 0)
        return r.bad("hidden_size", std::to_string(c.d_model) + " is not a multiple of num_attention_heads and no head_dim is given");
    CFLOW_TRY_ASSIGN(c.head_dim, r.u32("head_dim", c.d_model / c.n_heads));
    CFLOW_TRY_ASSIGN(c.max_seq_len, r.u32("max_position_embeddings", 0));
    CFLOW_TRY_ASSIGN(c.norm_eps, r.f32("rms_norm_eps", out.family == Family::Olmoe ? 1e-5f : 1e-6f));
    CFLOW_TRY_ASSIGN(c.rope_theta, r.f32("rope_theta", 10000.0f));
    CFLOW_TRY_ASSIGN(c.rope_fraction, r.f32("partial_rotary_factor", 1.0f));
    CFLOW_TRY_ASSIGN(out.tie_word_embeddings, r.boolean("tie_word_embeddings", false));
    if (rope_scaling_type == "llama3") {
        auto factors = llama3_rope_factors(ConfigReader(r.at("rope_scaling"), r.label() + ": rope_scaling"), c);
        if (!factors) return factors.take_error();
        c.rope_freq_factors = std::move(*factors);
    } else if (rope_scaling_type == "longrope") {
        if (Status s = read_longrope(r, c); !s) return s.take_error();
    } else if (rope_scaling_type == "yarn") {
        if (Status s = read_yarn(r, c); !s) return s.take_error();
    } else if (rope_scaling_type == "linear") {
        // Position interpolation: every frequency divided by the factor (inv_freq / factor).
        float factor = 0.0f;
        CFLOW_TRY_ASSIGN(factor, ConfigReader(r.at("rope_scaling"), r.label() + ": rope_scaling").f32("factor", 0.0f));
        if (!std::isfinite(factor) || !(factor > 0.0f)) return r.bad("rope_scaling", "factor must be a finite number > 0");
        if (factor != 1.0f) c.rope_freq_factors.assign(rotary_dim_count(c.head_dim, c.rope_fraction) / 2, factor);
    }

    if (out.family == Family::Qwen2 || out.family == Family::Qwen2Moe || out.family == Family::Qwen3 ||
        out.family == Family::Qwen3Moe) {
        bool use_sw = false;
        CFLOW_TRY_ASSIGN(use_sw, r.boolean("use_sliding_window", false));
        if (use_sw) CFLOW_TRY_ASSIGN(c.sliding_window, r.u32("sliding_window", 0));
    } else if (out.family == Family::Mistral || out.family == Family::Mixtral) {
        CFLOW_TRY_ASSIGN(c.sliding_window, r.u32("sliding_window", 0));
    }

    bool norm_topk = false;
    switch (out.family) {
        case Family::Llama:
        case Family::Mistral:
        case Family::Qwen2:
        case Family::Qwen3:
            CFLOW_TRY_ASSIGN(c.d_ff, r.u32("intermediate_size", std::nullopt));
            break;
        case Family::SmolLM3:
            CFLOW_TRY_ASSIGN(c.d_ff, r.u32("intermediate_size", std::nullopt));
            if (Status s = read_smollm3_nope_layers(r, c); !s) return s.take_error();
            break;
        case Family::Gemma:
        case Family::Gemma2:
        case Family::Gemma3:
            CFLOW_TRY_ASSIGN(c.d_ff, r.u32("intermediate_size", std::nullopt));
            break;
        case Family::Phi3:
            CFLOW_TRY_ASSIGN(c.d_ff, r.u32("intermediate_size", std::nullopt));
            // Phi-3-mini-4k slides over 2047 positions on every layer; Phi-3.5 and Phi-4-mini's
            // 262144 outruns their context and masks nothing.
            CFLOW_TRY_ASSIGN(c.sliding_window, r.u32("sliding_window", 0));
            if (c.max_seq_len > 0 && c.sliding_window >= c.max_seq_len) c.sliding_window = 0;
            break;
        case Family::Mixtral:
            CFLOW_TRY_ASSIGN(c.n_experts, r.u32("num_local_experts", std::nullopt));
            CFLOW_TRY_ASSIGN(c.expert_d_ff, r.u32("intermediate_size", std::nullopt));
            c.router_mode = RouterMode::SoftmaxTopK;
            break;
        case Family::Qwen2Moe:
        case Family::Qwen3Moe: {  // Qwen3-MoE: the same fields, no shared expert
            CFLOW_TRY_ASSIGN(c.n_experts, r.u32("num_experts", std::nullopt));
            CFLOW_TRY_ASSIGN(c.expert_d_ff, r.u32("moe_intermediate_size", std::nullopt));
            CFLOW_TRY_ASSIGN(c.shared_expert_d_ff, r.u32("shared_expert_intermediate_size", 0));
            uint32_t step = 1;
            CFLOW_TRY_ASSIGN(step, r.u32("decoder_sparse_step", 1));
            bool mixed = step != 1 || (r.has("mlp_only_layers") && r.at("mlp_only_layers").is_array() && !r.at("mlp_only_layers").empty());
            if (mixed)
                return r.unsupported("decoder_sparse_step",
                                     "/ mlp_only_layers: models mixing dense and MoE layers are not supported");
            CFLOW_TRY_ASSIGN(norm_topk, r.boolean("norm_topk_prob", false));
            c.router_mode = norm_topk ? RouterMode::SoftmaxTopK : RouterMode::SoftmaxAllNoRenorm;
            break;
        }
        case Family::GptOss:
            CFLOW_TRY_ASSIGN(c.n_experts, r.u32("num_local_experts", std::nullopt));
            CFLOW_TRY_ASSIGN(c.expert_d_ff, r.u32("intermediate_size", std::nullopt));
            break;
        case Family::Olmoe:
            CFLOW_TRY_ASSIGN(c.n_experts, r.u32("num_experts", std::nullopt));
            CFLOW_TRY_ASSIGN(c.expert_d_ff, r.u32("intermediate_size", std::nullopt));
            CFLOW_TRY_ASSIGN(norm_topk, r.boolean("norm_topk_prob", false));
            c.router_mode = norm_topk ? RouterMode::SoftmaxTopK : RouterMode::SoftmaxAllNoRenorm;
            break;
        case Family::Cflow:
            if (Status s = read_cflow_ffn_fields(r, c); !s) return s.take_error();
            break;
    }
    if (c.n_experts > 0) {
        CFLOW_TRY_ASSIGN(c.top_k, r.u32("num_experts_per_tok", std::nullopt));
        if (c.top_k == 0 || c.top_k > c.n_experts)
            return r.bad("num_experts_per_tok", std::to_string(c.top_k) + " is not in 1.." + std::to_string(c.n_experts));
    }
    c.rope_interleaved = false;  // HF checkpoints use the split-half convention
    c.combine_style = CombineStyle::Sequential;
    c.ffn_activation = FfnActivation::SwiGLU;
    const bool gemma = stores_norm_minus_one(out.family);
    if (Status s = read_pipeline_fields(r, c, !gemma); !s) return s.take_error();
    if (gemma) {
        if (Status s = read_gemma_fields(r, out.family, c); !s) return s.take_error();
        bool tied = true;  // Gemma ties the LM head unless the config says otherwise
        CFLOW_TRY_ASSIGN(tied, r.boolean("tie_word_embeddings", true));
        out.tie_word_embeddings = tied;
    }
    if (out.family == Family::GptOss)
        if (Status s = read_gpt_oss_fields(r, c); !s) return s.take_error();
    if (out.family == Family::Cflow && c.combine_style == CombineStyle::FixedPoint && c.n_blocks != c.n_layers)
        return r.bad("n_blocks", std::to_string(c.n_blocks) + " must equal num_hidden_layers " + std::to_string(c.n_layers) +
                                     " for FixedPoint (one stored layer per unique block)");
    if (out.tie_word_embeddings) c.feature_flags |= kFeatureTiedEmbeddings;
    return out;
}

bool parse_index(const std::string& s, size_t& pos, uint32_t& value) {
    size_t end = s.find('.', pos);
    if (end == std::string::npos || end == pos) return false;
    auto [p, ec] = std::from_chars(s.data() + pos, s.data() + end, value);
    if (ec != std::errc() || p != s.data() + end) return false;
    pos = end + 1;
    return true;
}

} // namespace

namespace {

// Gemma3TextConfig's defaults (transformers' configuration_gemma3.py): a Gemma 3 config lists only
// what differs from them; google/gemma-3-4b-it's text_config gives six keys.
json gemma3_text_defaults() {
    return {{"vocab_size", 262208},        {"hidden_size", 2304},
            {"intermediate_size", 9216},   {"num_hidden_layers", 26},
            {"num_attention_heads", 8},    {"num_key_value_heads", 4},
            {"head_dim", 256},             {"hidden_activation", "gelu_pytorch_tanh"},
            {"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-6},
            {"tie_word_embeddings", true}, {"rope_theta", 1000000.0},
            {"query_pre_attn_scalar", 256}, {"sliding_window", 4096},
            {"rope_local_base_freq", 10000.0}, {"sliding_window_pattern", 6}};
}

bool is_gemma3_multimodal(const json& j) {
    const bool by_class = j.contains("architectures") && j.at("architectures").is_array() && !j.at("architectures").empty() &&
                          j.at("architectures").front() == "Gemma3ForConditionalGeneration";
    const bool by_type = !j.contains("architectures") && j.contains("model_type") && j.at("model_type") == "gemma3";
    return by_class || by_type;
}

// Gemma3ForConditionalGeneration (Gemma 3 4B/12B/27B): its text_config over Gemma3TextConfig's
// defaults, read as the Gemma3ForCausalLM it contains; the vision tower is left out by the reader.
Result<json> gemma3_text_config(const json& j, const std::string& label) {
    if (!j.contains("text_config") || !j.at("text_config").is_object())
        return make_error(label + ": field 'text_config' is missing or not an object (Gemma3ForConditionalGeneration)");
    json text = gemma3_text_defaults();
    for (const auto& [key, value] : j.at("text_config").items()) text[key] = value;
    text["architectures"] = json::array({"Gemma3ForCausalLM"});
    text["model_type"] = "gemma3_text";
    return text;
}

} // namespace

Result<HfConfig> load_config(const std::string& config_path) {
    try {
        auto text = read_whole_file(config_path, kMaxJsonConfigBytes, "a config.json");
        if (!text) {
            Error e = text.take_error();
            if (e.kind == ErrorKind::Io) e.message += " (an HF model folder needs config.json)";
            return e;
        }
        if (Status depth = check_json_depth(*text, config_path); !depth) return depth.take_error();
        json j = json::parse(*text);
        if (!j.is_object()) return make_error(config_path + ": top level is not a JSON object");
        if (is_gemma3_multimodal(j)) {
            auto text_config = gemma3_text_config(j, config_path);
            if (!text_config) return text_config.take_error();
            auto out = interpret(ConfigReader(*text_config, config_path + ": text_config"));
            if (out) out->multimodal_text_only = true;
            return out;
        }
        const bool gemma3_text = j.contains("model_type") && j.at("model_type") == "gemma3_text";
        if (gemma3_text) {
            json filled = gemma3_text_defaults();
            for (const auto& [key, value] : j.items()) filled[key] = value;
            return interpret(ConfigReader(filled, config_path));
        }
        return interpret(ConfigReader(j, config_path));
    } catch (const json::exception& e) {
        return make_error(config_path + ": invalid JSON: " + e.what());
    } catch (const std::bad_alloc&) {
        return make_error(ErrorKind::OutOfMemory, config_path + ": out of memory while reading");
    }
}

NameMapping map_tensor_name(const std::string& hf, Family family) {
    auto tensor = [](std::string n) { return NameMapping{NameMapping::Kind::Tensor, std::move(n)}; };
    static const std::map<std::string, std::string> kGlobal = {
        {"model.embed_tokens.weight", "token_embd.weight"},
        {"model.norm.weight", "output_norm.weight"},
        {"lm_head.weight", "output.weight"}};
    if (auto it = kGlobal.find(hf); it != kGlobal.end()) return tensor(it->second);

    if (family == Family::Gemma3) {
        // Gemma3ForConditionalGeneration: the text model under language_model (older checkpoints:
        // language_model.model.*, language_model.lm_head; transformers 4.52 on: model.language_model.*),
        // the vision tower and its projector beside it.
        for (const char* p : {"language_model.model.", "model.language_model."})
            if (hf.rfind(p, 0) == 0) return map_tensor_name("model." + hf.substr(std::strlen(p)), family);
        if (hf == "language_model.lm_head.weight") return map_tensor_name("lm_head.weight", family);
        for (const char* p : {"vision_tower.", "multi_modal_projector.", "model.vision_tower.", "model.multi_modal_projector."})
            if (hf.rfind(p, 0) == 0) return {NameMapping::Kind::Ignore, "the vision tower and its projector: cflow runs the text model"};
    }
    const std::string prefix = "model.layers.";
    if (hf.rfind(prefix, 0) != 0) return {};
    size_t pos = prefix.size();
    uint32_t layer = 0;
    if (!parse_index(hf, pos, layer)) return {};
    const std::string rest = hf.substr(pos);
    const std::string blk = "blk." + std::to_string(layer) + ".";

    static const std::map<std::string, std::string> kGemmaLayer = {
        {"post_attention_layernorm.weight", "post_attention_norm.weight"},
        {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
        {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"}};
    if (family == Family::Gemma2 || family == Family::Gemma3)
        if (auto it = kGemmaLayer.find(rest); it != kGemmaLayer.end()) return tensor(blk + it->second);
    if (family == Family::GptOss) {
        static const std::map<std::string, std::string> kGptOssLayer = {
            {"self_attn.sinks", "attn_sinks.weight"},    {"self_attn.o_proj.bias", "attn_output.bias"},
            {"mlp.router.weight", "ffn_gate_inp.weight"}, {"mlp.router.bias", "ffn_gate_inp.bias"}};
        if (auto it = kGptOssLayer.find(rest); it != kGptOssLayer.end()) return tensor(blk + it->second);
        const std::string experts = "mlp.experts.";
        if (rest.rfind(experts, 0) == 0) return {NameMapping::Kind::GptOssExperts, rest.substr(experts.size()), layer};
    }
    static const std::map<std::string, std::string> kLayer = {
        {"input_layernorm.weight", "attn_norm.weight"},
        {"post_attention_layernorm.weight", "ffn_norm.weight"},
        {"self_attn.q_proj.weight", "attn_q.weight"},
        {"self_attn.k_proj.weight", "attn_k.weight"},
        {"self_attn.v_proj.weight", "attn_v.weight"},
        {"self_attn.o_proj.weight", "attn_output.weight"},
        {"self_attn.q_proj.bias", "attn_q.bias"},
        {"self_attn.k_proj.bias", "attn_k.bias"},
        {"self_attn.v_proj.bias", "attn_v.bias"},
        {"self_attn.q_norm.weight", "attn_q_norm.weight"},
        {"self_attn.qkv_proj.weight", "attn_qkv.weight"},
        {"mlp.gate_up_proj.weight", "ffn_gate_up.weight"},
        {"self_attn.k_norm.weight", "attn_k_norm.weight"},
        {"mlp.gate_proj.weight", "ffn_gate.weight"},
        {"mlp.up_proj.weight", "ffn_up.weight"},
        {"mlp.down_proj.weight", "ffn_down.weight"},
        {"block_sparse_moe.gate.weight", "ffn_gate_inp.weight"},
        {"mlp.gate.weight", "ffn_gate_inp.weight"},
        {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
        {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
        {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
        {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"},
        // CflowForCausalLM: mlp.* is the dense FFN only; the MoE lives under moe.*.
        {"pre_moe_layernorm.weight", "moe_norm.weight"},
        {"moe.gate.weight", "ffn_gate_inp.weight"},
        {"moe.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
        {"moe.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
        {"moe.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
        {"moe.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"}};
    if (auto it = kLayer.find(rest); it != kLayer.end()) return tensor(blk + it->second);
    if (rest == "self_attn.rotary_emb.inv_freq") return {NameMapping::Kind::Ignore, ""};

    // Per-expert tensors: block_sparse_moe.experts.E.w1 (Mixtral) / mlp.experts.E.gate_proj
    // (Qwen2-MoE, OLMoE) / moe.experts.E.gate_proj (Cflow).
    static const std::map<std::string, std::string> kExpertPrefix = {
        {"block_sparse_moe.experts.", "mixtral"}, {"mlp.experts.", "qwen"}, {"moe.experts.", "cflow"}};
    static const std::map<std::string, std::string> kExpertMatrix = {
        {"w1.weight", "ffn_gate"},        {"w3.weight", "ffn_up"},        {"w2.weight", "ffn_down"},
        {"gate_proj.weight", "ffn_gate"}, {"up_proj.weight", "ffn_up"}, {"down_proj.weight", "ffn_down"}};
    for (const auto& [p, style] : kExpertPrefix) {
        if (rest.rfind(p, 0) != 0) continue;
        size_t epos = p.size();
        uint32_t expert = 0;
        if (!parse_index(rest, epos, expert)) return {};
        std::string matrix = rest.substr(epos);
        bool mixtral_name = !matrix.empty() && matrix[0] == 'w';
        if ((style == "mixtral") != mixtral_name) return {};
        auto it = kExpertMatrix.find(matrix);
        if (it == kExpertMatrix.end()) return {};
        return tensor(blk + it->second + "." + std::to_string(expert) + ".weight");
    }
    return {};
}

} // namespace cflow::hf
