#pragma once
// A loaded .cflow model: the validated file, its tokenizer, and the per-layer views the
// forward pass reads. Immutable after load; shared by any number of sessions and threads.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cflow/engine/tokenizer/tokenizer.h"
#include "cflow/formats/cflow_reader.h"
#include "cflow/formats/mapped_file.h"
#include "cflow/base/result.h"

namespace cflow {

struct LoadOptions {
    LoadMode mode = LoadMode::Map;  // Map: zero-copy mmap; ReadAnon: copy into anonymous (huge-page) memory
    // Also read the file into anonymous memory with every Q4_0/Q8_0 matrix whose tiles allow it
    // rearranged into the lanes layout (kernels/lanes_layout.h), which the int8 kernels walk
    // without horizontal sums. Costs the file's size in RAM and a pass over it at load; `mode`
    // still serves everything else (norms, embeddings, tables), so pair it with Map. No copy is
    // made when under half the file's tile bytes have a lanes layout (K-quant tiles have none).
    bool lanes = false;
};

// The segments one decoder layer reads, resolved once at load.
struct LayerWeights {
    const SegmentView* attn_norm = nullptr;  // [d] f32
    const SegmentView* q_norm = nullptr;     // [dk] f32, optional
    const SegmentView* k_norm = nullptr;     // [dk] f32, optional
    const SegmentView* qkv = nullptr;        // tiles: Q [H*dk x d], K, V [Hkv*dk x d]
    const SegmentView* qkv_bias = nullptr;   // [(H + 2 Hkv) * dk] f32, optional
    const SegmentView* attn_sinks = nullptr;  // [H] f32: each query head's sink logit, optional (gpt-oss)
    const SegmentView* attn_out = nullptr;   // tiles: [d x H*dk]
    const SegmentView* attn_out_bias = nullptr;  // [d] f32, optional (gpt-oss)
    const SegmentView* attn_post_norm = nullptr;  // [d] f32: RMSNorm of the attention output, optional (Gemma 2/3)
    const SegmentView* ffn_norm = nullptr;   // [d] f32, when dense FFN
    const SegmentView* gate_up = nullptr;    // tiles: gate, up [d_ff x d]
    const SegmentView* down = nullptr;       // tiles: [d x d_ff]
    const SegmentView* ffn_post_norm = nullptr;   // [d] f32: RMSNorm of the dense FFN output, optional (Gemma 2/3)
    const SegmentView* moe_norm = nullptr;   // [d] f32, MoE layers
    const SegmentView* router = nullptr;     // [E x d] f32
    const SegmentView* router_bias = nullptr;  // [E] f32, optional (gpt-oss)
    const SegmentView* expert_bias = nullptr;  // [E x (2 eff + d)] f32: gate, up, down biases per expert, optional
    const SegmentView* expert_table = nullptr;
    const SegmentView* expert_bank = nullptr;
    const SegmentView* shared_gate_up = nullptr;  // tiles: shared expert gate, up [sff x d], optional
    const SegmentView* shared_down = nullptr;     // tiles: [d x sff]
    const SegmentView* shared_gate = nullptr;     // [d] f32: sigmoid gate of the shared expert
};

// The rotary embedding one layer applies: its base and its per-frequency divisors.
struct LayerRope {
    float theta = 10000.0f;
    std::span<const float> freq_factors;  // [rotary dims / 2] or empty
    float scale = 1.0f;                   // multiplies cos and sin (LongRoPE's attention factor)
};

class Model {
public:
    // Errors: Io when the file cannot be opened or read, InvalidInput when it is damaged or its
    // schedule is inconsistent, Unsupported for a newer format version or feature, a tokenizer
    // family or a limit (top_k, experts) this engine lacks, OutOfMemory when indexing fails.
    static Result<std::shared_ptr<const Model>> load(const std::string& path, const LoadOptions& options = {});

    const CflowFile& file() const { return *file_; }
    const GlobalHeader& header() const { return file_->header(); }
    const ModelParams& params() const { return file_->params(); }
    const Tokenizer& tokenizer() const { return *tokenizer_; }
    const std::vector<LayerWeights>& layers() const { return layers_; }
    const SegmentView& output_norm() const { return *output_norm_; }
    const SegmentView& lm_head() const { return *lm_head_; }      // TokenEmbd when tied
    const SegmentView& token_embd() const { return *token_embd_; }
    std::string name() const;  // general.name, else the file stem
    // Io "PATH changed on disk while in use (...)" once the mapped file was truncated or
    // rewritten (MappedFile::check_unchanged); ok for weights held in memory (LoadMode::ReadAnon).
    Status check_file_unchanged() const { return file_->file().check_unchanged(); }
    const std::string& chat_template() const { return chat_template_; }  // "" when the model has none
    // [rotary dims / 2] divisors of the rotary frequencies (Llama 3 rope scaling), empty for plain RoPE.
    std::span<const float> rope_freq_factors() const { return rope_freq_factors_; }
    // Whether stored layer `layer` rotates queries and keys (false on SmolLM3's NoPE layers).
    bool applies_rope(uint32_t layer) const { return layer >= rope_skip_layers_.size() || rope_skip_layers_[layer] == 0; }
    // Positions stored layer `layer` attends over: the last sliding_window ones, or 0 = all of them
    // (Gemma's full-attention layers between the sliding ones; every layer of a model without a window).
    uint32_t attention_window(uint32_t layer) const {
        const uint32_t window = header().sliding_window;
        if (window == 0 || sliding_layers_.empty()) return window;
        return layer < sliding_layers_.size() && sliding_layers_[layer] != 0 ? window : 0;
    }
    // Base, frequency divisors and scale of stored layer `layer`: Gemma 3's sliding layers have
    // their own base, unscaled; a LongRoPE model uses its long factors in a session whose
    // context exceeds the original one (long_context, uses_long_rope()).
    LayerRope rope(uint32_t layer, bool long_context = false) const {
        const float scale = params().rope_attn_factor > 0.0f ? params().rope_attn_factor : 1.0f;
        if ((params().extended_features & kExtLocalRope) && attention_window(layer) != 0) return {params().rope_local_theta, {}, scale};
        return {params().rope_theta, long_context && !rope_long_factors_.empty() ? rope_long_factors_ : rope_freq_factors_, scale};
    }
    // Whether a session of context_length tokens rotates with LongRoPE's long factors.
    bool uses_long_rope(uint32_t context_length) const {
        return !rope_long_factors_.empty() && context_length > params().rope_original_context;
    }
    // Whether any layer rotates differently from layer 0 (so one rope table per position is not enough).
    bool rope_varies_by_layer() const { return (params().extended_features & kExtLocalRope) != 0; }
    // The factor of q.k in attention scores: ModelParams.query_scale, else 1 / sqrt(head_dim).
    float query_scale() const;

    // Layers a token passes through: n_layers, or n_blocks * n_iter for FixedPoint.
    uint32_t effective_layers() const { return effective_layers_; }
    // Tiles of expert e of layer l, located on first use (so unselected experts are never
    // touched) and cached; thread-safe. Fails if the file's expert table entry is corrupt.
    // expert_bytes: a copy of the expert's bytes read by the expert fetcher; the first call checks
    // the tile headers there instead of in the mapping, so a streamed expert's mapped pages are
    // never faulted in (they were: RssFile grew to the experts used, and a cold read fetched them
    // twice, once by direct I/O and once by the page fault's readahead).
    Result<const ExpertView*> expert(uint32_t layer, uint32_t expert, const uint8_t* expert_bytes = nullptr) const;
    // Where the expert lies in the file, from its table entry alone (its tiles are not read).
    Result<ExpertLocation> expert_location(uint32_t layer, uint32_t expert) const { return file_->expert_location(layer, expert); }

    // LoadOptions::lanes: the copy of the file whose rearranged tiles the kernels read (byte for
    // byte at the same offsets as file().file().data()), or nullptr when the model was loaded
    // without it. A segment's (or a layer's expert bank's) tiles are in the lanes layout there only
    // when in_lanes says so; the others keep the file's layout and are read from the file.
    const uint8_t* lanes_base() const;
    bool in_lanes(const SegmentView& segment) const;
    bool expert_bank_in_lanes(uint32_t layer) const;

    ~Model();

private:
    struct ExpertSlot;
    std::shared_ptr<CflowFile> file_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::vector<LayerWeights> layers_;
    const SegmentView* output_norm_ = nullptr;
    const SegmentView* lm_head_ = nullptr;
    const SegmentView* token_embd_ = nullptr;
    std::string chat_template_;
    std::span<const float> rope_freq_factors_;  // into file_'s metadata
    std::span<const float> rope_long_factors_;  // [rotary dims / 2] or empty, into file_'s metadata
    std::span<const int32_t> rope_skip_layers_;  // [n_layers] or empty, into file_'s metadata
    std::span<const int32_t> sliding_layers_;    // [n_layers] or empty, into file_'s metadata
    uint32_t effective_layers_ = 0;
    std::unique_ptr<ExpertSlot[]> expert_slots_;  // [n_layers x n_experts]
    std::shared_ptr<MappedFile> lanes_;                 // [file bytes] LoadOptions::lanes, else null
    std::vector<const SegmentView*> lanes_segments_;    // sorted: segments rearranged in lanes_
    std::vector<uint8_t> lanes_expert_banks_;           // [n_layers] 1: that layer's experts rearranged
    friend struct LanesArenaBuilder;
};

} // namespace cflow
