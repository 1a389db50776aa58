#include "cflow/engine/forward/model.h"

#include <cmath>
#include <filesystem>
#include <mutex>
#include <new>
#include <optional>

#include "cflow/engine/forward/telemetry.h"
#include "forward/lanes_arena.h"

namespace cflow {

struct Model::ExpertSlot {
    std::once_flag once;
    std::optional<ExpertView> view;
    Error error;  // when view is empty: kept whole so every later lookup reports the same kind
};

Model::~Model() = default;

namespace {

std::string layer_label(const std::string& path, uint32_t layer) {
    return path + ": layer " + std::to_string(layer);
}

// The engine supports what the header can express; this checks the file's tensors can satisfy
// its combine style, so a mismatch is reported at load, not as garbage output.
Status check_layer(const CflowFile& file, uint32_t index, const LayerWeights& w) {
    const auto& h = file.header();
    const std::string where = layer_label(file.path(), index);
    if (!w.attn_norm || !w.qkv || !w.attn_out) return make_error(where + ": attention segments missing");
    if (h.d_ff > 0 && (!w.ffn_norm || !w.gate_up || !w.down))
        return make_error(where + ": header says d_ff = " + std::to_string(h.d_ff) + " but dense FFN segments are missing");
    if (h.n_experts > 0 && (!w.router || !w.expert_table || !w.expert_bank))
        return make_error(where + ": header says " + std::to_string(h.n_experts) + " experts but MoE segments are missing");
    return {};
}

// Header fields the engine's scheduler depends on, checked before anything runs.
Status check_schedule(const CflowFile& f) {
    const GlobalHeader& h = f.header();
    const ModelParams& p = f.params();
    const std::string where = f.path() + ": header";
    if (h.combine_style > static_cast<uint8_t>(CombineStyle::FixedPoint))
        return make_error(where + ": unknown combine style " + std::to_string(h.combine_style));
    const auto style = static_cast<CombineStyle>(h.combine_style);
    if (h.top_k > kMaxTopK)
        return make_error(ErrorKind::Unsupported, where + ": top_k " + std::to_string(h.top_k) +
                                                      " exceeds the engine's limit of " + std::to_string(kMaxTopK) +
                                                      " experts per token");
    if (h.n_experts > 256)
        return make_error(ErrorKind::Unsupported,
                          where + ": " + std::to_string(h.n_experts) + " experts exceed the engine's limit of 256");
    if (h.dense_delay >= h.n_layers || h.expert_delay >= h.n_layers)
        return make_error(where + ": delays (dense " + std::to_string(h.dense_delay) + ", expert " +
                          std::to_string(h.expert_delay) + ") must be smaller than the layer count " + std::to_string(h.n_layers));
    const bool delays_allowed = style == CombineStyle::DelayedSum || style == CombineStyle::AsyncExperts;
    if (!delays_allowed && (h.dense_delay || h.expert_delay))
        return make_error(where + ": combine style " + std::to_string(h.combine_style) + " takes no delays (dense " +
                          std::to_string(h.dense_delay) + ", expert " + std::to_string(h.expert_delay) + ")");
    if (style == CombineStyle::AsyncExperts && h.dense_delay)
        return make_error(where + ": AsyncExperts reads the pre-attention residual and takes no dense delay");
    if (h.dense_delay && h.d_ff == 0)
        return make_error(where + ": dense_delay " + std::to_string(h.dense_delay) + " but the model has no dense FFN");
    if (h.expert_delay && h.n_experts == 0)
        return make_error(where + ": expert_delay " + std::to_string(h.expert_delay) + " but the model has no experts");
    if (h.d_ff == 0 && h.n_experts == 0) return make_error(where + ": the model has neither a dense FFN nor experts");
    if (style == CombineStyle::FixedPoint && (p.n_blocks != h.n_layers || p.n_iter == 0))
        return make_error(where + ": FixedPoint needs n_blocks == n_layers (" + std::to_string(p.n_blocks) + " vs " +
                          std::to_string(h.n_layers) + ") and n_iter >= 1 (" + std::to_string(p.n_iter) + ")");
    if (style == CombineStyle::DecoupledStreams && p.merge_interval == 0)
        return make_error(where + ": DecoupledStreams needs merge_interval >= 1");
    return {};
}

} // namespace

Result<std::shared_ptr<const Model>> Model::load(const std::string& path, const LoadOptions& options) {
    try {
        auto file = CflowFile::open(path, options.mode);
        if (!file) return file.take_error();

        auto model = std::shared_ptr<Model>(new Model());
        model->file_ = std::move(file.value());
        const CflowFile& f = *model->file_;
        const GlobalHeader& h = f.header();

        if (auto st = check_schedule(f); !st) return st.take_error();

        auto tokenizer = Tokenizer::from_metadata(f.metadata());
        if (!tokenizer) return make_error(tokenizer.kind(), path + ": tokenizer: " + tokenizer.error());
        model->tokenizer_ = std::move(tokenizer.value());
        if (model->tokenizer_->vocab_size() != h.vocab_size)
            return make_error(path + ": tokenizer has " + std::to_string(model->tokenizer_->vocab_size()) +
                              " tokens but the header says vocab_size = " + std::to_string(h.vocab_size));

        model->layers_.resize(h.n_layers);
        for (uint32_t l = 0; l < h.n_layers; ++l) {
            const RegionView& r = f.layers()[l];
            LayerWeights& w = model->layers_[l];
            w.attn_norm = r.find(SegmentRole::AttnNorm);
            w.q_norm = r.find(SegmentRole::QNorm);
            w.k_norm = r.find(SegmentRole::KNorm);
            w.qkv = r.find(SegmentRole::Qkv);
            w.qkv_bias = r.find(SegmentRole::QkvBias);
            w.attn_sinks = r.find(SegmentRole::AttnSinks);
            w.attn_out = r.find(SegmentRole::AttnOut);
            w.attn_out_bias = r.find(SegmentRole::AttnOutBias);
            w.attn_post_norm = r.find(SegmentRole::AttnPostNorm);
            w.ffn_norm = r.find(SegmentRole::FfnNorm);
            w.gate_up = r.find(SegmentRole::GateUp);
            w.down = r.find(SegmentRole::Down);
            w.ffn_post_norm = r.find(SegmentRole::FfnPostNorm);
            w.moe_norm = r.find(SegmentRole::MoeNorm);
            w.router = r.find(SegmentRole::Router);
            w.router_bias = r.find(SegmentRole::RouterBias);
            w.expert_bias = r.find(SegmentRole::ExpertBias);
            w.expert_table = r.find(SegmentRole::ExpertTable);
            w.expert_bank = r.find(SegmentRole::ExpertBank);
            w.shared_gate_up = r.find(SegmentRole::SharedGateUp);
            w.shared_down = r.find(SegmentRole::SharedDown);
            w.shared_gate = r.find(SegmentRole::SharedGate);
            if (auto st = check_layer(f, l, w); !st) return st.take_error();
        }
        model->output_norm_ = f.vocab().find(SegmentRole::OutputNorm);
        model->token_embd_ = f.vocab().find(SegmentRole::TokenEmbd);
        model->lm_head_ = f.vocab().find(SegmentRole::LmHead);
        if (!model->lm_head_) model->lm_head_ = model->token_embd_;
        if (!model->output_norm_ || !model->token_embd_)
            return make_error(path + ": vocabulary region lacks the output norm or the token embedding");

        if (auto tmpl = f.metadata().get_string("tokenizer.chat_template")) model->chat_template_ = *tmpl;
        model->rope_freq_factors_ = f.rope_freq_factors();
        model->rope_long_factors_ = f.rope_long_factors();
        model->rope_skip_layers_ = f.rope_skip_layers();
        model->sliding_layers_ = f.sliding_layers();
        model->effective_layers_ = static_cast<CombineStyle>(h.combine_style) == CombineStyle::FixedPoint
                                       ? h.n_layers * f.params().n_iter
                                       : h.n_layers;
        model->expert_slots_ = std::make_unique<ExpertSlot[]>(size_t(h.n_layers) * h.n_experts);
        if (options.lanes)
            if (auto st = build_lanes_arena(*model, path); !st) return st.take_error();
        return std::shared_ptr<const Model>(std::move(model));
    } catch (const std::bad_alloc&) {
        return make_error(ErrorKind::OutOfMemory, path + ": out of memory while loading the model");
    }
}

float Model::query_scale() const {
    const float stored = params().query_scale;
    return stored > 0.0f ? stored : 1.0f / std::sqrt(float(header().head_dim));
}

std::string Model::name() const {
    if (auto n = file_->metadata().get_string("general.name"); n && !n->empty()) return *n;
    return std::filesystem::path(file_->path()).stem().string();
}

} // namespace cflow

namespace cflow {

Result<const ExpertView*> Model::expert(uint32_t layer, uint32_t expert, const uint8_t* expert_bytes) const {
    const GlobalHeader& h = header();
    if (layer >= h.n_layers || expert >= h.n_experts)
        return make_error(file_->path() + ": expert " + std::to_string(expert) + " of layer " + std::to_string(layer) +
                          " does not exist");
    ExpertSlot& slot = expert_slots_[size_t(layer) * h.n_experts + expert];
    std::call_once(slot.once, [&] {
        auto view = file_->expert(layer, expert, expert_bytes);
        if (view) slot.view = std::move(view.value());
        else slot.error = view.take_error();
    });
    if (!slot.view) return slot.error;
    return &*slot.view;
}

} // namespace cflow
