#pragma once
// Hugging Face config.json -> ModelConfig, and HF tensor names -> canonical names
// (internal to formats/; used by the safetensors reader).
#include <optional>
#include <string>

#include "cflow/base/result.h"
#include "cflow/formats/source_model.h"

namespace cflow::hf {

// Cflow = this project's own pipeline-native checkpoints (CflowForCausalLM, model_type "cflow";
// tests/reference/README.md, "What the C++ side must read").
enum class Family { Llama, Mistral, Qwen2, Mixtral, Qwen2Moe, Qwen3, Qwen3Moe, SmolLM3, Olmoe, Gemma, Gemma2, Gemma3, Phi3, GptOss, Cflow };

// Gemma's RMSNorm multiplies by (1 + weight): its checkpoints store weight - 1 (what llama.cpp's
// converter undoes when it writes the GGUF).
constexpr bool stores_norm_minus_one(Family f) { return f == Family::Gemma || f == Family::Gemma2 || f == Family::Gemma3; }

struct HfConfig {
    ModelConfig config;
    Family family = Family::Llama;
    bool tie_word_embeddings = false;
    // Gemma3ForConditionalGeneration read as its text model (the vision tower is not converted).
    bool multimodal_text_only = false;
};

// Reads and interprets config_path (a config.json). Errors name the file and the field.
Result<HfConfig> load_config(const std::string& config_path);

// What an HF tensor name becomes.
struct NameMapping {
    enum class Kind { Tensor, Ignore, GptOssExperts, Unknown } kind = Kind::Unknown;
    std::string canonical;  // for Kind::Tensor; the part after mlp.experts. for Kind::GptOssExperts;
                            // for Kind::Ignore, why it is left out when the report should say so
    uint32_t layer = 0;     // for Kind::GptOssExperts
};
// model.layers.N.self_attn.q_proj.weight -> blk.N.attn_q.weight, per-expert HF tensors
// (block_sparse_moe.experts.E.w1, mlp.experts.E.gate_proj, moe.experts.E.gate_proj)
// -> blk.N.ffn_{gate,up,down}.E.weight, pre_moe_layernorm -> blk.N.moe_norm.weight,
// moe.gate (the Cflow router; mlp.gate_proj stays the dense FFN's gate) -> blk.N.ffn_gate_inp.weight,
// rotary inv_freq buffers -> Ignore.
// Gemma 2/3 name their four norms differently: post_attention_layernorm normalises the
// attention output (-> post_attention_norm), pre_feedforward_layernorm is the FFN's input norm
// (-> ffn_norm) and post_feedforward_layernorm its output norm (-> post_ffw_norm).
// gpt-oss: self_attn.sinks -> attn_sinks.weight, self_attn.o_proj.bias -> attn_output.bias,
// mlp.router.{weight,bias} -> ffn_gate_inp.{weight,bias}; its stacked mlp.experts.* tensors are
// Kind::GptOssExperts (hf_gpt_oss_experts.h repacks them).
NameMapping map_tensor_name(const std::string& hf_name, Family family = Family::Llama);

} // namespace cflow::hf
