#include "cflow/engine/model.h"

#include <filesystem>

namespace cflow {
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

} // namespace

Result<std::shared_ptr<const Model>> Model::load(const std::string& path, const LoadOptions& options) {
    auto file = CflowFile::open(path, options.mode);
    if (!file) return file.take_error();

    auto model = std::shared_ptr<Model>(new Model());
    model->file_ = std::move(file.value());
    const CflowFile& f = *model->file_;
    const GlobalHeader& h = f.header();

    const auto style = static_cast<CombineStyle>(h.combine_style);
    if (style != CombineStyle::Sequential)
        return make_error(path + ": combine style " + std::to_string(h.combine_style) +
                          " is not supported by this engine build (supported: 3 = Sequential)");
    if (h.n_experts > 0)
        return make_error(path + ": mixture-of-experts models (" + std::to_string(h.n_experts) +
                          " experts) are not supported by this engine build");

    auto tokenizer = Tokenizer::from_metadata(f.metadata());
    if (!tokenizer) return make_error(path + ": tokenizer: " + tokenizer.error());
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
        w.attn_out = r.find(SegmentRole::AttnOut);
        w.ffn_norm = r.find(SegmentRole::FfnNorm);
        w.gate_up = r.find(SegmentRole::GateUp);
        w.down = r.find(SegmentRole::Down);
        w.moe_norm = r.find(SegmentRole::MoeNorm);
        w.router = r.find(SegmentRole::Router);
        w.expert_table = r.find(SegmentRole::ExpertTable);
        w.expert_bank = r.find(SegmentRole::ExpertBank);
        if (auto st = check_layer(f, l, w); !st) return st.take_error();
    }
    model->output_norm_ = f.vocab().find(SegmentRole::OutputNorm);
    model->token_embd_ = f.vocab().find(SegmentRole::TokenEmbd);
    model->lm_head_ = f.vocab().find(SegmentRole::LmHead);
    if (!model->lm_head_) model->lm_head_ = model->token_embd_;
    if (!model->output_norm_ || !model->token_embd_)
        return make_error(path + ": vocabulary region lacks the output norm or the token embedding");

    if (auto tmpl = f.metadata().get_string("tokenizer.chat_template")) model->chat_template_ = *tmpl;
    return std::shared_ptr<const Model>(std::move(model));
}

std::string Model::name() const {
    if (auto n = file_->metadata().get_string("general.name"); n && !n->empty()) return *n;
    return std::filesystem::path(file_->path()).stem().string();
}

} // namespace cflow
