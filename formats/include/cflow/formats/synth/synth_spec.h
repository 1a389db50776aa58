#pragma once
// What a synthetic model is: a seeded random-weight llama-family geometry (`cflow synth`, the
// paper scorecard's models, benchmarks against llama.cpp on identical weights). Presets give real
// models' shapes; check_synth_spec reports a geometry the writers cannot make as one line naming
// the `cflow synth` option that sets the value, and why.
#include <cstdint>
#include <optional>
#include <string>

#include "cflow/base/result.h"
#include "cflow/formats/cflow_layout.h"
#include "cflow/formats/dtype.h"

namespace cflow {

struct SynthSpec {
    std::string name = "custom";   // preset name, or "custom" for a geometry from flags alone
    // The GGUF architecture: "llama" (Llama, Mixtral-style MoE) or "qwen3moe" (per-head Q/K RMS
    // norms, NEOX RoPE, softmax over all experts renormalised over the top k).
    std::string arch = "llama";
    uint32_t head_dim_override = 0; // 0: d_model / n_heads (Qwen3's heads are 128 wide whatever d is)
    bool tied = false;              // no output.weight: the LM head is the token embedding (Llama 3.2 1B / 3B)
    bool llama3_rope = false;       // rope_freqs.weight: Llama 3.1's scaling (factor 32, 1, 4, original 8192)
    float rope_theta = 10000.0f;
    uint32_t d_model = 0;
    uint32_t n_layers = 0;
    uint32_t n_heads = 0;
    uint32_t n_kv_heads = 0;
    uint32_t d_ff = 0;             // 0 = no dense FFN
    uint32_t n_experts = 0;        // 0 = dense
    uint32_t top_k = 0;
    uint32_t expert_d_ff = 0;
    uint32_t vocab = 32000;
    uint32_t max_seq_len = 2048;
    uint8_t dense_delay = 0;
    uint8_t expert_delay = 0;
    CombineStyle combine_style = CombineStyle::Sequential;
    // Q4_0 or Q8_0: every matrix, token embedding and LM head. Q4_K: llama.cpp's Q4_K_M mix
    // (synth_model.cpp kquant_mix_type): Q4_K matrices, Q6_K LM head and, on llama.cpp's
    // "more bits" layers, Q6_K attn_v / ffn_down; every matrix width a multiple of 256.
    DType quant = DType::Q4_0;
    uint64_t seed = 1;
    // Router rows of expert e scaled by 1 + router_skew * (E-1-e)/(E-1): a wider logit spread wins
    // top-k more often (up to about half the tokens for the widest), so routing is skewed toward
    // low-numbered experts as in trained routers. 0 = every expert alike.
    double router_skew = 0.0;

    uint32_t head_dim() const { return head_dim_override ? head_dim_override : n_heads ? d_model / n_heads : 0; }
    bool qk_norm() const { return arch == "qwen3moe"; }
    // True when the .cflow computes what llama.cpp computes from the GGUF: plain sequential layers.
    bool llama_schedule() const {
        return combine_style == CombineStyle::Sequential && dense_delay == 0 && expert_delay == 0;
    }
};

// A preset's geometry (synth_preset_names()); nullopt for another name.
std::optional<SynthSpec> synth_preset(const std::string& name);
// "dense-1b, moe-1b, llama3.2-1b, qwen3-moe" (for messages), and whether `name` is one.
const std::string& synth_preset_names();
bool is_synth_preset(const std::string& name);

// The cross-checks a writable geometry passes: multiples of the 32-weight block (256 for
// K-quants), heads dividing d, even head dimension, top-k within the experts, delays below the
// layers and on streams the model has, a vocabulary holding the byte tokens.
Status check_synth_spec(const SynthSpec& spec);

// llama.cpp's use_more_bits(layer, n_layers) of the Q4_K_M recipe: the first and last eighth of
// the layers and every third one between take Q6_K for attn_v and ffn_down.
bool q4_k_m_more_bits(uint32_t layer, uint32_t n_layers);

// synth's --quant values, and each one's name and llama.cpp file type (LLAMA_FTYPE_MOSTLY_*).
inline constexpr const char* kSynthQuantNames = "q4_0, q8_0, q4_k_m, q4_1, q5_0, q5_1 or iq4_nl";
std::string synth_quant_name(DType quant);
uint32_t synth_file_type(DType quant);

// What a llama GGUF can describe: no layer with both a dense FFN and experts.
Status check_gguf_expressible(const SynthSpec& spec);

} // namespace cflow
