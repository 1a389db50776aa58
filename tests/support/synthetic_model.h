#pragma once
// A small, deterministic in-memory SourceModel for tests: random weights under the
// canonical tensor names (source_model.h), a ModelConfig matching the spec, and
// metadata with a tiny "llama" (SentencePiece-style) tokenizer vocabulary.
//
//   cflow::test::SyntheticSpec spec;           // 2-layer dense llama-like model
//   spec.n_experts = 4; spec.top_k = 2;        // ... or a MoE one
//   cflow::SourceModel model = cflow::test::make_synthetic_model(spec);
//   cflow::convert_to_cflow(model, path, {.weight_quant = cflow::DType::F32});
//
// Weights are drawn from a seeded generator (same spec -> same bytes on every platform):
// matrices ~ N(0, weight_std) with a per-row scale in [0.5, 2] so rows differ in range,
// norms ~ 1 + N(0, 0.1), biases ~ N(0, 0.1).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "cflow/formats/gguf_writer.h"
#include "cflow/formats/source_model.h"

namespace cflow::test {

struct SyntheticSpec {
    uint32_t d_model = 64;
    uint32_t n_layers = 2;
    uint32_t n_heads = 4;
    uint32_t n_kv_heads = 4;
    uint32_t head_dim = 16;
    uint32_t d_ff = 128;               // 0 = no dense FFN
    uint32_t vocab = 300;              // >= 259 gives <unk>,<s>,</s> + all 256 byte tokens
    uint32_t n_experts = 0;            // 0 = dense
    uint32_t top_k = 0;
    uint32_t expert_d_ff = 0;
    uint32_t shared_expert_d_ff = 0;
    CombineStyle combine_style = CombineStyle::Sequential;
    uint8_t dense_delay = 0;
    uint8_t expert_delay = 0;
    uint8_t n_iter = 2;                // FixedPoint only
    bool qkv_bias = false;             // attn_q/k/v.bias (Qwen2)
    bool qk_norm = false;              // attn_q_norm / attn_k_norm (Qwen3)
    bool post_norms = false;           // post_attention_norm / post_ffw_norm (Gemma 2/3's sandwich norms)
    // gpt-oss: attention sinks, attn_output.bias, router and expert biases (with experts), the clamped SwiGLU
    bool gpt_oss = false;
    bool moe_norm = true;              // MoE layers carry blk.N.moe_norm.weight (else ffn_norm is the fallback)
    bool tied = false;                 // no output.weight; kFeatureTiedEmbeddings set
    bool rope_interleaved = false;     // Q/K rows in adjacent-pair RoPE order (llama2.c)
    uint64_t seed = 1;
    DType dtype = DType::F32;          // matrices: F32, F16, BF16, Q8_0 or Q4_0 (Q types need cols % 32 == 0)
    float weight_std = 0.05f;          // in [0.02, 0.5]
    uint32_t max_seq_len = 256;
    // Router row e times 1 + router_skew * (E-1-e)/(E-1), as `cflow synth --router-skew`: wider
    // logits win top-k more often, so routing favours low-numbered experts. 0 = no skew.
    float router_skew = 0.0f;
};

// Builds the model; the tensor bytes live in a MappedFile kept in SourceModel::files.
// Vectors (norms, biases, the shared-expert gate) are always F32, as in GGUF; the
// router is F32 for Q8_0/Q4_0 sources and the source dtype otherwise.
SourceModel make_synthetic_model(const SyntheticSpec& spec);

// Dequantizes a whole source tensor (F32/F16/BF16/Q8_0/Q4_0) to f32, row-major, with an
// implementation independent of the converter's; GgmlBlock tensors go through
// dequantize_ggml_row, which tests/parity/ggml checks against an independent decoder.
std::vector<float> tensor_to_f32(const TensorView& tensor);

// The small pipeline-native MoE the CLI tests of expert reads use: 4 layers, 8 experts of 64,
// top-2, DelayedSum with dense delay 1 and expert delay 2.
SyntheticSpec delayed_moe_spec();

// Converts make_synthetic_model(spec) to `path` with matrices in `quant` (a failed conversion
// is a test failure); returns the path.
std::string write_synthetic_cflow(const SyntheticSpec& spec, const std::filesystem::path& path,
                                  DType quant = DType::Q4_0);

// The token strings make_synthetic_model puts in tokenizer.ggml.tokens for `vocab`.
std::vector<std::string> synthetic_vocabulary(uint32_t vocab);

// The general.*, llama.* and tokenizer.ggml.* keys llama.cpp's converter writes for a llama model
// of `spec` (context 256, rms eps 1e-5, rope base 10000, the synthetic vocabulary).
std::vector<GgufKeyValue> synthetic_llama_gguf_metadata(const SyntheticSpec& spec, const std::string& name);

} // namespace cflow::test
