// GGUF keys of a synth model (synth_metadata.h).
#include "cflow/formats/synth/synth_metadata.h"

#include <string>

#include "cflow/formats/synth/synth_vocab.h"

namespace cflow {

std::vector<GgufKeyValue> synth_gguf_metadata(const SynthSpec& s) {
    const std::string quant = synth_quant_name(s.quant);
    const uint32_t file_type = synth_file_type(s.quant);
    // Mixtral-style llama GGUFs give the expert width as feed_forward_length.
    const uint32_t ff = s.d_ff > 0 ? s.d_ff : s.expert_d_ff;
    const std::string a = s.arch + ".";
    std::vector<GgufKeyValue> kv = {
        {"general.architecture", s.arch},
        {"general.name", "cflow-synth-" + s.name},
        {"general.description", "random weights from cflow synth (seed " + std::to_string(s.seed) + ", " + quant +
                                    "): for speed comparisons on identical weights; they model nothing"},
        {"general.file_type", file_type},
        {"general.quantization_version", uint32_t{2}},   // ggml's current block layouts
        {"general.alignment", uint32_t{32}},
        {a + "vocab_size", s.vocab},
        {a + "context_length", s.max_seq_len},
        {a + "embedding_length", s.d_model},
        {a + "block_count", s.n_layers},
        {a + "feed_forward_length", ff},
        {a + "attention.head_count", s.n_heads},
        {a + "attention.head_count_kv", s.n_kv_heads},
        {a + "attention.layer_norm_rms_epsilon", kSynthNormEps},
        {a + "rope.freq_base", s.rope_theta},
        {a + "rope.dimension_count", s.head_dim()},
    };
    if (s.head_dim_override) {  // Qwen3: heads not d / n_heads wide
        kv.push_back({a + "attention.key_length", s.head_dim()});
        kv.push_back({a + "attention.value_length", s.head_dim()});
    }
    if (s.n_experts > 0) {
        kv.push_back({a + "expert_count", s.n_experts});
        kv.push_back({a + "expert_used_count", s.top_k});
        if (s.arch != "llama") kv.push_back({a + "expert_feed_forward_length", s.expert_d_ff});
    }
    SynthVocab vocab = make_synth_vocab(s.vocab);
    kv.push_back({"tokenizer.ggml.model", std::string("llama")});
    kv.push_back({"tokenizer.ggml.tokens", std::move(vocab.tokens)});
    kv.push_back({"tokenizer.ggml.scores", std::move(vocab.scores)});
    kv.push_back({"tokenizer.ggml.token_type", std::move(vocab.types)});
    kv.push_back({"tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(kSynthUnk)});
    kv.push_back({"tokenizer.ggml.bos_token_id", static_cast<uint32_t>(kSynthBos)});
    kv.push_back({"tokenizer.ggml.eos_token_id", static_cast<uint32_t>(kSynthEos)});
    kv.push_back({"tokenizer.ggml.add_bos_token", true});
    kv.push_back({"tokenizer.ggml.add_eos_token", false});
    return kv;
}

} // namespace cflow
