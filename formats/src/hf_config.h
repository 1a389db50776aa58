#pragma once
// Hugging Face config.json -> ModelConfig, and HF tensor names -> canonical names
// (internal to formats/; used by the safetensors reader).
#include <optional>
#include <string>

#include "cflow/formats/result.h"
#include "cflow/formats/source_model.h"

namespace cflow::hf {

enum class Family { Llama, Mistral, Qwen2, Mixtral, Qwen2Moe, Olmoe };

struct HfConfig {
    ModelConfig config;
    Family family = Family::Llama;
    bool tie_word_embeddings = false;
};

// Reads and interprets config_path (a config.json). Errors name the file and the field.
Result<HfConfig> load_config(const std::string& config_path);

// What an HF tensor name becomes.
struct NameMapping {
    enum class Kind { Tensor, Ignore, Unknown } kind = Kind::Unknown;
    std::string canonical;  // for Kind::Tensor
};
// model.layers.N.self_attn.q_proj.weight -> blk.N.attn_q.weight, per-expert HF tensors
// -> blk.N.ffn_{gate,up,down}.E.weight, rotary inv_freq buffers -> Ignore.
NameMapping map_tensor_name(const std::string& hf_name);

} // namespace cflow::hf
