// Synthetic model geometries: presets and the cross-checks (synth_spec.h).
#include "cflow/formats/synth/synth_spec.h"

#include <utility>

namespace cflow {
namespace {

constexpr long long kMinVocab = 259;      // <unk>, <s>, </s> and the 256 byte tokens
constexpr uint32_t kBlock = 32;           // weights per Q4_0 / Q8_0 block

// Every name preset() knows, in the order help and errors list them.
constexpr const char* kPresetNames[] = {"dense-1b", "moe-1b", "llama3.2-1b", "qwen3-moe"};

std::optional<SynthSpec> preset(const std::string& name) {
    SynthSpec s;
    s.name = name;
    s.d_model = 2048;
    s.n_heads = 32;     // head_dim 64
    s.n_kv_heads = 4;
    s.vocab = 32000;
    if (name == "dense-1b") {  // TinyLlama-1.1B's shape
        s.n_layers = 22;
        s.d_ff = 5632;
        return s;
    }
    if (name == "moe-1b") {    // Mixtral-style: every layer 8 experts of 1408, top-2, no dense FFN
        s.n_layers = 16;
        s.n_experts = 8;
        s.top_k = 2;
        s.expert_d_ff = 1408;
        return s;
    }
    if (name == "llama3.2-1b") {  // Llama-3.2-1B's shape: tied LM head over a 128256 vocabulary, rope scaling
        s.n_layers = 16;
        s.n_kv_heads = 8;
        s.d_ff = 8192;
        s.vocab = 128256;
        s.tied = true;
        s.llama3_rope = true;
        s.rope_theta = 500000.0f;
        return s;
    }
    if (name == "qwen3-moe") {  // Qwen3-30B-A3B's shape: 48 layers of 128 experts of 768, top-8, heads of 128
        s.arch = "qwen3moe";
        s.n_layers = 48;
        s.head_dim_override = 128;
        s.n_experts = 128;
        s.top_k = 8;
        s.expert_d_ff = 768;
        s.vocab = 151936;
        s.rope_theta = 1000000.0f;
        return s;
    }
    return std::nullopt;
}

Error option_error(const std::string& name, uint32_t value, const std::string& why) {
    return make_error("option " + name + ": " + std::to_string(value) + " " + why);
}

Status check_attention(const SynthSpec& s) {
    if (s.d_model % kBlock != 0)
        return option_error("--d", s.d_model, "is not a multiple of 32 (the Q4_0/Q8_0 block)");
    if (s.head_dim_override == 0 && s.d_model % s.n_heads != 0)
        return option_error("--heads", s.n_heads, "does not divide --d " + std::to_string(s.d_model));
    if (s.head_dim() % 2 != 0)
        return option_error("--heads", s.n_heads, "gives an odd head dimension " + std::to_string(s.head_dim()) +
                                                      " (--d / --heads); RoPE rotates pairs");
    if (s.n_kv_heads > s.n_heads || s.n_heads % s.n_kv_heads != 0)
        return option_error("--kv-heads", s.n_kv_heads, "does not divide --heads " + std::to_string(s.n_heads));
    return {};
}

Status check_ffn(const SynthSpec& s) {
    if (s.d_ff % kBlock != 0) return option_error("--d-ff", s.d_ff, "is not a multiple of 32 (the Q4_0/Q8_0 block)");
    if (s.n_experts == 0) {
        if (s.top_k != 0 || s.expert_d_ff != 0) return make_error("option --top-k / --expert-hidden need --experts N (N > 0)");
    } else {
        if (s.top_k == 0) return make_error("option --experts " + std::to_string(s.n_experts) + " needs --top-k K (1..N)");
        if (s.top_k > s.n_experts)
            return option_error("--top-k", s.top_k, "exceeds --experts " + std::to_string(s.n_experts));
        if (s.expert_d_ff == 0) return make_error("option --experts " + std::to_string(s.n_experts) + " needs --expert-hidden N");
        if (s.expert_d_ff % kBlock != 0)
            return option_error("--expert-hidden", s.expert_d_ff, "is not a multiple of 32 (the Q4_0/Q8_0 block)");
    }
    if (s.d_ff == 0 && s.n_experts == 0)
        return make_error("options --d-ff and --experts are both 0: each layer needs a dense FFN or experts");
    return {};
}

// K-quant super-blocks span 256 weights of a row: every matrix's input width must be whole blocks.
Status check_kquant_widths(const SynthSpec& s) {
    if (s.quant != DType::Q4_K) return {};
    constexpr uint32_t kSuperBlock = 256;
    const std::pair<const char*, uint32_t> widths[] = {{"--d", s.d_model}, {"--d-ff", s.d_ff}, {"--expert-hidden", s.expert_d_ff}};
    for (const auto& [option, width] : widths)
        if (width % kSuperBlock != 0)
            return option_error(option, width, "is not a multiple of 256, as --quant q4_k_m's super-blocks need");
    return {};
}

Status check_schedule(const SynthSpec& s) {
    if (s.vocab < kMinVocab)
        return option_error("--vocab", s.vocab, "is below 259 (<unk>, <s>, </s> and the 256 byte tokens)");
    if (s.dense_delay >= s.n_layers)
        return option_error("--dense-delay", s.dense_delay, "must be below --layers " + std::to_string(s.n_layers));
    if (s.expert_delay >= s.n_layers)
        return option_error("--expert-delay", s.expert_delay, "must be below --layers " + std::to_string(s.n_layers));
    // The loader refuses a delay on a stream the model does not have (it wrote such files before).
    if (s.dense_delay > 0 && s.d_ff == 0)
        return option_error("--dense-delay", s.dense_delay, "needs a dense FFN (--d-ff N; moe-1b has none)");
    if (s.expert_delay > 0 && s.n_experts == 0)
        return option_error("--expert-delay", s.expert_delay, "needs experts (--experts N)");
    if (s.combine_style == CombineStyle::FixedPoint)
        return make_error("option --combine-style: FixedPoint is not supported by synth (its repeated blocks need --blocks/--iters)");
    if (s.combine_style == CombineStyle::ParallelSqrt2 && (s.dense_delay || s.expert_delay))
        return make_error("option --combine-style: ParallelSqrt2 needs --dense-delay 0 and --expert-delay 0");
    return {};
}

} // namespace

std::optional<SynthSpec> synth_preset(const std::string& name) { return preset(name); }

Status check_synth_spec(const SynthSpec& s) {
    if (s.d_model == 0 || s.n_layers == 0 || s.n_heads == 0 || s.n_kv_heads == 0)
        return make_error("a synthetic model needs --d, --layers, --heads and --kv-heads above 0");
    if (Status st = check_attention(s); !st) return st;
    if (Status st = check_ffn(s); !st) return st;
    if (Status st = check_schedule(s); !st) return st;
    return check_kquant_widths(s);
}

const std::string& synth_preset_names() {
    static const std::string names = [] {
        std::string joined;
        for (const char* name : kPresetNames) joined += (joined.empty() ? "" : ", ") + std::string(name);
        return joined;
    }();
    return names;
}

bool is_synth_preset(const std::string& name) { return preset(name).has_value(); }

std::string synth_quant_name(DType quant) {
    switch (quant) {
    case DType::Q4_K: return "q4_k_m";
    case DType::Q4_0: return "q4_0";
    case DType::Q4_1: return "q4_1";
    case DType::Q5_0: return "q5_0";
    case DType::Q5_1: return "q5_1";
    case DType::IQ4_NL: return "iq4_nl";
    default: return "q8_0";
    }
}

uint32_t synth_file_type(DType quant) {
    switch (quant) {
    case DType::Q4_K: return 15;
    case DType::Q4_0: return 2;
    case DType::Q4_1: return 3;
    case DType::Q5_0: return 8;
    case DType::Q5_1: return 9;
    case DType::IQ4_NL: return 25;
    default: return 7;
    }
}

bool q4_k_m_more_bits(uint32_t layer, uint32_t n_layers) {
    return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

Status check_gguf_expressible(const SynthSpec& spec) {
    if (spec.d_ff > 0 && spec.n_experts > 0)
        return make_error("option --gguf: a llama GGUF has no layers with both a dense FFN (--d-ff " +
                          std::to_string(spec.d_ff) + ") and experts (--experts " + std::to_string(spec.n_experts) +
                          "); use --d-ff 0 or drop --gguf");
    return {};
}

} // namespace cflow
