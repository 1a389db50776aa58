#pragma once
// A checkpoint opened for conversion, whatever its format: geometry + semantics in
// ModelConfig, tensors under canonical GGUF-style names with HF-convention shapes,
// and metadata (tokenizer, chat template, name, licence) under GGUF keys.
//
// Canonical tensor names (shape is {rows = out, cols = in} for matrices):
//   token_embd.weight [vocab x d]      output_norm.weight [d]      output.weight [vocab x d] (absent if tied)
//   blk.N.attn_norm.weight [d]         blk.N.attn_q.weight [H*dk x d]   attn_k / attn_v [Hkv*dk x d]
//   blk.N.attn_q.bias / attn_k.bias / attn_v.bias          blk.N.attn_output.weight [d x H*dk]
//   blk.N.attn_q_norm.weight / attn_k_norm.weight [dk]
//   blk.N.ffn_norm.weight [d]          blk.N.ffn_gate.weight / ffn_up.weight [d_ff x d]   ffn_down.weight [d x d_ff]
//   blk.N.post_attention_norm.weight / post_ffw_norm.weight [d] (Gemma 2/3: RMSNorm of the attention / FFN output)
//   Fused (Phi-3): blk.N.attn_qkv.weight [(H + 2 Hkv)*dk x d] (Q, K, V rows) instead of attn_q/k/v,
//                  blk.N.ffn_gate_up.weight [2 d_ff x d] (gate rows, then up) instead of ffn_gate/ffn_up
//   MoE: blk.N.ffn_gate_inp.weight [E x d] (router), blk.N.ffn_gate_exps.weight / ffn_up_exps [E x eff x d],
//        blk.N.ffn_down_exps.weight [E x d x eff], blk.N.moe_norm.weight [d],
//        blk.N.ffn_gate_shexp / ffn_up_shexp [sff x d], ffn_down_shexp [d x sff], ffn_gate_inp_shexp [d]
//   gpt-oss: blk.N.attn_sinks.weight [H], blk.N.attn_output.bias [d], blk.N.ffn_gate_inp.bias [E],
//        blk.N.ffn_gate_exps.bias / ffn_up_exps.bias [E x eff], ffn_down_exps.bias [E x d]
//   MoE from per-expert HF tensors: blk.N.ffn_gate.E.weight / ffn_up.E [eff x d], ffn_down.E [d x eff] (instead of *_exps)
#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "cflow/formats/cflow_layout.h"
#include "cflow/formats/dtype.h"
#include "cflow/formats/mapped_file.h"
#include "cflow/formats/metadata.h"
#include "cflow/base/result.h"

namespace cflow {

struct ModelConfig {
    std::string architecture;        // "llama", "mistral", "qwen2", "llama2c", ... (informational)
    uint32_t d_model = 0;
    uint32_t n_layers = 0;
    uint32_t n_heads = 0;
    uint32_t n_kv_heads = 0;
    uint32_t head_dim = 0;
    uint32_t d_ff = 0;               // 0 = no dense FFN
    uint32_t n_experts = 0;
    uint32_t top_k = 0;
    uint32_t expert_d_ff = 0;
    uint32_t shared_expert_d_ff = 0;
    uint32_t vocab_size = 0;
    uint32_t max_seq_len = 0;
    uint32_t sliding_window = 0;
    float norm_eps = 1e-6f;
    float rope_theta = 10000.0f;
    float rope_fraction = 1.0f;
    FfnActivation ffn_activation = FfnActivation::SwiGLU;
    RouterMode router_mode = RouterMode::SoftmaxTopK;
    CombineStyle combine_style = CombineStyle::Sequential;
    uint8_t dense_delay = 0;
    uint8_t expert_delay = 0;
    uint8_t merge_interval = 3;
    uint8_t n_blocks = 0;
    uint8_t n_iter = 0;
    uint8_t feature_flags = 0;       // FeatureFlag bits (tied embeddings, qkv bias, ...)
    float final_logit_softcap = 0.0f;
    float attn_logit_softcap = 0.0f;
    float embedding_scale = 0.0f;
    // Q/K rows are stored in the interleaved (adjacent-pair) RoPE convention (llama2.c,
    // GGUF "llama"): the converter permutes them to split-half per head.
    bool rope_interleaved = false;
    // [rotary dims / 2] divisors of the rotary frequencies: Llama 3's rope scaling (GGUF
    // rope_freqs.weight, HF rope_scaling type llama3). Empty = plain RoPE.
    std::vector<float> rope_freq_factors;
    // [n_layers] 1 = that layer applies no RoPE (SmolLM3: every fourth). Empty = every layer.
    std::vector<int32_t> rope_skip_layers;
    // [n_layers] 1 = that layer attends over the last sliding_window positions only (Gemma 2:
    // every other layer, Gemma 3: five of six). Empty = sliding_window, if any, applies to every layer.
    std::vector<int32_t> sliding_layers;
    // RoPE base of the sliding layers, which also skip the frequency factors (Gemma 3's
    // rope_local_base_freq); 0 = they rotate as the other layers do.
    float rope_local_theta = 0.0f;
    // Factor of q.k in attention scores; 0 = 1 / sqrt(head_dim) (Gemma: query_pre_attn_scalar^-0.5).
    float query_scale = 0.0f;
    // LongRoPE (Phi-3.5 / Phi-4-mini): rope_freq_factors are the short factors, these the long
    // ones, used when the context exceeds rope_original_context. Empty / 0 = no LongRoPE.
    std::vector<float> rope_freq_factors_long;
    uint32_t rope_original_context = 0;
    // cos and sin of every rotation multiplied by it (LongRoPE's / YaRN's attention factor); 0 = 1.
    float rope_attn_factor = 0.0f;
    // FfnActivation::ClampedSwiGLU's sigmoid slope and clamp (gpt-oss: 1.702, 7.0); 0 otherwise.
    float ffn_alpha = 0.0f;
    float ffn_limit = 0.0f;
};

struct TensorView {
    std::string name;                // canonical name
    DType dtype = DType::F32;        // F32, F16, BF16, Q8_0 or Q4_0; GgmlBlock (GGUF) for the other ggml types
    uint32_t ggml_type = 0;          // ggml type code (ggml_blocks.h) of a GGUF tensor; what dtype GgmlBlock means
    std::vector<uint64_t> shape;     // outermost first: {rows, cols} for matrices, {E, rows, cols} for expert banks
    const uint8_t* data = nullptr;   // into a mapping kept alive by SourceModel::files
    uint64_t bytes = 0;
    std::string origin;              // "file.safetensors: tensor 'model.layers.0.self_attn.q_proj.weight'"
};

struct SourceModel {
    ModelConfig config;
    Metadata metadata;                              // tokenizer.*, general.name/source/license, chat template
    std::map<std::string, TensorView> tensors;      // by canonical name
    std::vector<std::shared_ptr<MappedFile>> files; // keep-alive for TensorView::data
    std::string source_label;                       // what was opened, for messages
    // Tensors the reader folded into config (rope_freqs.weight -> rope_freq_factors): the
    // converter counts them as used; any other tensor no segment reads is refused.
    std::set<std::string> config_tensors;
    // Every file the source is made of or may be read from (the checkpoint, its tokenizer, an HF
    // folder's files): a conversion never writes over one of them (checked by identity, dev + inode).
    std::vector<std::string> input_files;
    // Tensors the forward pass does not read and that do not change it, each with the reason
    // (an lm_head tied to the embeddings): left out and listed in the conversion report.
    std::map<std::string, std::string> ignored_tensors;

    const TensorView* find(const std::string& name) const {
        auto it = tensors.find(name);
        return it == tensors.end() ? nullptr : &it->second;
    }
};

// Readers. Every offset and size is bounds- and overflow-checked; errors name the file,
// the field and the byte offset.
Result<SourceModel> read_gguf_model(const std::string& path);
Result<SourceModel> read_safetensors_model(const std::string& dir_or_file);  // HF folder: config.json + (sharded) safetensors + tokenizer files
Result<SourceModel> read_llama2c_model(const std::string& bin_path, const std::string& tokenizer_bin_path);
// Dispatches on what path is (sniff_model_path, model_path_kind.h): a folder or safetensors file
// (HF), a GGUF, else a llama2.c checkpoint (tokenizer required); a .cflow/.vflow is refused.
Result<SourceModel> open_source_model(const std::string& path, const std::string& tokenizer_path = "");

} // namespace cflow
