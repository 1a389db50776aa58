// CflowFile::open: maps a .cflow or .vflow file (dispatch on the magic) and validates the
// GlobalHeader, ModelParams, the layer table, every region (cflow_region_reader.cpp), the
// .vflow group table and section order (vflow_reader.cpp) and the metadata section.
#include <cmath>
#include <cstddef>
#include <cstring>
#include <new>

#include "cflow/formats/cflow_reader.h"
#include "cflow_reader_internal.h"
#include "checked_math.h"

namespace cflow {
namespace reader_detail {

Error located(const FileContext& ctx, const std::string& field, uint64_t offset, const std::string& problem,
              ErrorKind kind) {
    return make_error(kind, ctx.path + ": " + field + " at offset " + std::to_string(offset) + ": " + problem);
}

} // namespace reader_detail

namespace {

using reader_detail::FileContext;
using reader_detail::located;

#define CFLOW_GH(field) "GlobalHeader." #field, ctx.header_offset + offsetof(GlobalHeader, field)
#define CFLOW_MP(field) "ModelParams." #field, ctx.header.params_offset + offsetof(ModelParams, field)

Status check_global_header(const FileContext& ctx) {
    const GlobalHeader& h = ctx.header;
    if (std::memcmp(h.magic, kCflowMagic, sizeof(h.magic)) != 0)
        return located(ctx, CFLOW_GH(magic), "bad magic: not a .cflow or .vflow file");
    if (h.version < kCflowOldestReadableVersion || h.version > kCflowVersion)
        return located(ctx, CFLOW_GH(version),
                       "unsupported version " + std::to_string(h.version) + " (this build reads versions " +
                           std::to_string(kCflowOldestReadableVersion) + " to " + std::to_string(kCflowVersion) + ")",
                       ErrorKind::Unsupported);
    if (h.file_bytes != ctx.size)
        return located(ctx, CFLOW_GH(file_bytes),
                       "header says the file has " + std::to_string(h.file_bytes) + " bytes but it has " +
                           std::to_string(ctx.size) + (ctx.size < h.file_bytes ? " (truncated)" : " (trailing bytes)"));
    if (h.tile_rows != kTileRows || h.tile_cols != kTileCols)
        return located(ctx, CFLOW_GH(tile_rows),
                       "tile dims " + std::to_string(h.tile_rows) + "x" + std::to_string(h.tile_cols) + ", expected " +
                           std::to_string(kTileRows) + "x" + std::to_string(kTileCols));
    if (!is_tile_dtype(static_cast<DType>(h.weight_quant)) || (h.version < 6 && is_ggml_tile(static_cast<DType>(h.weight_quant))))
        return located(ctx, CFLOW_GH(weight_quant), "unknown dtype " + std::to_string(h.weight_quant));
    auto nonzero = [&](uint64_t value, const char* field, size_t offset) -> Status {
        if (value == 0) return located(ctx, field, offset, "must not be 0");
        return {};
    };
    for (Status s : {nonzero(h.d_model, CFLOW_GH(d_model)), nonzero(h.n_layers, CFLOW_GH(n_layers)),
                     nonzero(h.n_heads, CFLOW_GH(n_heads)), nonzero(h.n_kv_heads, CFLOW_GH(n_kv_heads)),
                     nonzero(h.head_dim, CFLOW_GH(head_dim)), nonzero(h.vocab_size, CFLOW_GH(vocab_size))})
        if (!s) return s;
    if (h.n_layers > 0xFFFFu)
        return located(ctx, CFLOW_GH(n_layers), std::to_string(h.n_layers) + " layers exceed TileHeader.layer_id (u16)");
    if (h.n_heads % h.n_kv_heads != 0)
        return located(ctx, CFLOW_GH(n_kv_heads),
                       "n_heads " + std::to_string(h.n_heads) + " is not divisible by n_kv_heads " +
                           std::to_string(h.n_kv_heads));
    if (h.n_experts >= kNoExpert)
        return located(ctx, CFLOW_GH(n_experts), std::to_string(h.n_experts) + " experts exceed TileHeader.expert_id");
    if (h.top_k > h.n_experts)
        return located(ctx, CFLOW_GH(top_k),
                       "top_k " + std::to_string(h.top_k) + " exceeds n_experts " + std::to_string(h.n_experts));
    if (h.n_experts > 0 && (h.top_k == 0 || h.expert_d_ff == 0))
        return located(ctx, CFLOW_GH(expert_d_ff), "a MoE model needs top_k >= 1 and expert_d_ff >= 1");
    if (h.dense_delay >= h.n_layers)
        return located(ctx, CFLOW_GH(dense_delay),
                       "dense_delay " + std::to_string(h.dense_delay) + " must be below n_layers " +
                           std::to_string(h.n_layers));
    if (h.expert_delay >= h.n_layers)
        return located(ctx, CFLOW_GH(expert_delay),
                       "expert_delay " + std::to_string(h.expert_delay) + " must be below n_layers " +
                           std::to_string(h.n_layers));
    if (h.combine_style > static_cast<uint8_t>(CombineStyle::FixedPoint))
        return located(ctx, CFLOW_GH(combine_style), "unknown combine style " + std::to_string(h.combine_style));
    if ((h.feature_flags & ~kKnownFeatureFlags) != 0)
        // Flag bits are how later writers add features within a version: a file using one is
        // well-formed, just beyond this build.
        return located(ctx, CFLOW_GH(feature_flags), "unknown feature flag bits " + std::to_string(h.feature_flags),
                       ErrorKind::Unsupported);
    if (!std::isfinite(h.final_logit_softcap) || h.final_logit_softcap < 0.0f)
        return located(ctx, CFLOW_GH(final_logit_softcap), "must be finite and >= 0");
    // Reserved bytes only gain a meaning with a version bump (cflow-format.md, section 10):
    // in a version-5 or 6 file anything but 0 is damage, not data to ignore.
    if (h.reserved0 != 0) return located(ctx, CFLOW_GH(reserved0), "is " + std::to_string(h.reserved0) + ", must be 0");
    return {};
}

// A metadata entry that comes with a flag bit: present exactly when `flagged`, `flag` names the
// bit in messages ("GlobalHeader.feature_flags bit 32").
struct FlaggedEntry {
    const char* key;
    bool flagged;
    std::string flag;
};

// One divisor per rotary frequency, each finite and > 0 (Llama 3 / linear scaling, LongRoPE's
// short and long factors): a factor of 0, NaN or the wrong count would give every position wrong angles.
Status check_rope_factor_entry(const std::string& path, const GlobalHeader& h, const ModelParams& p, const Metadata& meta,
                               const FlaggedEntry& e) {
    const MetaValue* value = meta.find(e.key);
    const std::string where = path + ": metadata '" + e.key + "'";
    if (!e.flagged) {
        if (value) return make_error(where + " is present but " + e.flag + " is not set");
        return {};
    }
    const auto* factors = meta.get_floats(e.key);
    if (!factors) return make_error(where + (value ? " is not a float array" : " is missing (" + e.flag + " is set)"));
    const uint32_t want = rotary_dim_count(h.head_dim, p.rope_fraction) / 2;
    if (factors->size() != want)
        return make_error(where + " has " + std::to_string(factors->size()) + " factors, expected " + std::to_string(want) +
                          " (half the rotary dims of head_dim " + std::to_string(h.head_dim) + ")");
    for (size_t i = 0; i < factors->size(); ++i)
        if (!std::isfinite((*factors)[i]) || !((*factors)[i] > 0.0f))
            return make_error(where + " factor " + std::to_string(i) + " is " + std::to_string((*factors)[i]) +
                              ", must be finite and > 0");
    return {};
}

// One 0/1 per stored layer (NoPE layers, sliding-window layers).
Status check_layer_flags_entry(const std::string& path, const GlobalHeader& h, const Metadata& meta, const FlaggedEntry& e) {
    const MetaValue* value = meta.find(e.key);
    const std::string where = path + ": metadata '" + e.key + "'";
    if (!e.flagged) {
        if (value) return make_error(where + " is present but " + e.flag + " is not set");
        return {};
    }
    const auto* flags = meta.get_ints(e.key);
    if (!flags) return make_error(where + (value ? " is not an int array" : " is missing (" + e.flag + " is set)"));
    if (flags->size() != h.n_layers)
        return make_error(where + " has " + std::to_string(flags->size()) + " entries, expected one per layer (" +
                          std::to_string(h.n_layers) + ")");
    for (size_t i = 0; i < flags->size(); ++i)
        if ((*flags)[i] != 0 && (*flags)[i] != 1)
            return make_error(where + " entry " + std::to_string(i) + " is " + std::to_string((*flags)[i]) + ", must be 0 or 1");
    return {};
}

Status check_metadata_entries(const std::string& path, const GlobalHeader& h, const ModelParams& p, const Metadata& meta) {
    const FlaggedEntry factors{kRopeFreqFactorsKey, (h.feature_flags & kFeatureRopeFreqFactors) != 0,
                               "GlobalHeader.feature_flags bit 32 (rope factors)"};
    const FlaggedEntry long_factors{kRopeLongFactorsKey, (p.extended_features & kExtLongRope) != 0,
                                    "ModelParams.extended_features bit 8 (LongRoPE)"};
    const FlaggedEntry skip{kRopeSkipLayersKey, (h.feature_flags & kFeatureRopeSkipLayers) != 0,
                            "GlobalHeader.feature_flags bit 64 (layers without RoPE)"};
    const FlaggedEntry sliding{kSlidingLayersKey, (p.extended_features & kExtSlidingLayers) != 0,
                               "ModelParams.extended_features bit 2 (sliding-window layers)"};
    for (Status s : {check_rope_factor_entry(path, h, p, meta, factors), check_rope_factor_entry(path, h, p, meta, long_factors),
                     check_layer_flags_entry(path, h, meta, skip), check_layer_flags_entry(path, h, meta, sliding)})
        if (!s) return s;
    return {};
}

Status check_model_params(const FileContext& ctx) {
    const GlobalHeader& h = ctx.header;
    const ModelParams& p = ctx.params;
    if (p.params_bytes != sizeof(ModelParams))
        return located(ctx, CFLOW_MP(params_bytes),
                       "is " + std::to_string(p.params_bytes) + ", expected " + std::to_string(sizeof(ModelParams)));
    if (!std::isfinite(p.norm_eps) || p.norm_eps < 0.0f) return located(ctx, CFLOW_MP(norm_eps), "must be finite and >= 0");
    if (!std::isfinite(p.rope_theta) || p.rope_theta <= 0.0f) return located(ctx, CFLOW_MP(rope_theta), "must be > 0");
    if (!(p.rope_fraction > 0.0f && p.rope_fraction <= 1.0f))
        return located(ctx, CFLOW_MP(rope_fraction), "must be in (0, 1]");
    if (p.ffn_activation > static_cast<uint8_t>(FfnActivation::ClampedSwiGLU))
        return located(ctx, CFLOW_MP(ffn_activation), "unknown activation " + std::to_string(p.ffn_activation));
    if (p.router_mode > static_cast<uint8_t>(RouterMode::SoftmaxAllNoRenorm))
        return located(ctx, CFLOW_MP(router_mode), "unknown router mode " + std::to_string(p.router_mode));
    if (h.combine_style == static_cast<uint8_t>(CombineStyle::DecoupledStreams) && p.merge_interval == 0)
        return located(ctx, CFLOW_MP(merge_interval), "must be >= 1 for DecoupledStreams");
    if (h.combine_style == static_cast<uint8_t>(CombineStyle::FixedPoint) &&
        (p.n_blocks != h.n_layers || p.n_iter == 0))
        return located(ctx, CFLOW_MP(n_blocks),
                       "FixedPoint needs n_blocks == n_layers (" + std::to_string(h.n_layers) + ") and n_iter >= 1, got " +
                           std::to_string(p.n_blocks) + " and " + std::to_string(p.n_iter));
    if (p.shared_expert_d_ff > 0 && h.n_experts == 0)
        return located(ctx, CFLOW_MP(shared_expert_d_ff), "a shared expert needs n_experts > 0");
    if (!std::isfinite(p.attn_logit_softcap) || p.attn_logit_softcap < 0.0f)
        return located(ctx, CFLOW_MP(attn_logit_softcap), "must be finite and >= 0");
    if (!std::isfinite(p.embedding_scale)) return located(ctx, CFLOW_MP(embedding_scale), "must be finite");
    // The kFeatureExtended tail: all 0 without the flag (the bytes were reserved before it).
    const bool extended = (h.feature_flags & kFeatureExtended) != 0;
    if (!extended && (p.extended_features != 0 || p.query_scale != 0.0f || p.rope_local_theta != 0.0f ||
                      p.rope_original_context != 0 || p.rope_attn_factor != 0.0f || p.ffn_alpha != 0.0f ||
                      p.ffn_limit != 0.0f))
        return located(ctx, CFLOW_MP(extended_features),
                       "extended parameters are set but GlobalHeader.feature_flags lacks the extended bit (128)");
    if ((p.extended_features & ~kKnownExtendedFeatures) != 0)
        return located(ctx, CFLOW_MP(extended_features),
                       "unknown extended feature bits " + std::to_string(p.extended_features & ~kKnownExtendedFeatures),
                       ErrorKind::Unsupported);
    if (!std::isfinite(p.query_scale) || p.query_scale < 0.0f)
        return located(ctx, CFLOW_MP(query_scale), "must be finite and >= 0 (0 = 1/sqrt(head_dim))");
    const bool local_rope = (p.extended_features & kExtLocalRope) != 0;
    if (local_rope != (p.rope_local_theta != 0.0f) || !std::isfinite(p.rope_local_theta) || p.rope_local_theta < 0.0f)
        return located(ctx, CFLOW_MP(rope_local_theta),
                       "is " + std::to_string(p.rope_local_theta) +
                           (local_rope ? ": the local-rope feature needs a finite base > 0" : ": must be 0 without the local-rope feature"));
    if (!std::isfinite(p.rope_attn_factor) || p.rope_attn_factor < 0.0f)
        return located(ctx, CFLOW_MP(rope_attn_factor), "must be finite and >= 0 (0 = 1)");
    const bool long_rope = (p.extended_features & kExtLongRope) != 0;
    if (long_rope != (p.rope_original_context != 0))
        return located(ctx, CFLOW_MP(rope_original_context),
                       "is " + std::to_string(p.rope_original_context) +
                           (long_rope ? ": LongRoPE needs the original context length" : ": must be 0 without LongRoPE"));
    if (long_rope && (h.feature_flags & kFeatureRopeFreqFactors) == 0)
        return located(ctx, CFLOW_MP(extended_features), "LongRoPE needs the short factors (feature_flags bit 32)");
    const bool clamped = p.ffn_activation == static_cast<uint8_t>(FfnActivation::ClampedSwiGLU);
    if (clamped ? !(std::isfinite(p.ffn_alpha) && p.ffn_alpha > 0.0f && std::isfinite(p.ffn_limit) && p.ffn_limit > 0.0f)
                : (p.ffn_alpha != 0.0f || p.ffn_limit != 0.0f))
        return located(ctx, CFLOW_MP(ffn_alpha),
                       "is " + std::to_string(p.ffn_alpha) + " (limit " + std::to_string(p.ffn_limit) + ")" +
                           (clamped ? ": the clamped SwiGLU needs a finite alpha and limit > 0"
                                    : ": must be 0 unless the activation is the clamped SwiGLU"));
    if ((p.extended_features & kExtMoeBiases) != 0 && h.n_experts == 0)
        return located(ctx, CFLOW_MP(extended_features), "MoE biases are named but the model has no experts");
    if ((p.extended_features & (kExtSlidingLayers | kExtLocalRope)) != 0 && h.sliding_window == 0)
        return located(ctx, CFLOW_GH(sliding_window), "is 0 but the extended features name sliding-window layers");
    if (const auto at = reader_detail::first_nonzero(p.reserved1, sizeof p.reserved1))
        return located(ctx, "ModelParams.reserved1", ctx.header.params_offset + offsetof(ModelParams, reserved1) + *at,
                       "must be 0");
    if (const auto at = reader_detail::first_nonzero(p.reserved, sizeof p.reserved))
        return located(ctx, "ModelParams.reserved", ctx.header.params_offset + offsetof(ModelParams, reserved) + *at,
                       "must be 0");
    return {};
}

#undef CFLOW_GH
#undef CFLOW_MP

} // namespace

Result<std::shared_ptr<CflowFile>> CflowFile::open(const std::string& path, LoadMode mode) {
    auto mapped = MappedFile::open(path, mode);
    if (!mapped) return mapped.take_error();
    try {
        auto file = std::make_shared<CflowFile>();
        file->file_ = *mapped;
        const uint8_t* data = file->file_->data();
        const uint64_t size = file->file_->size();
        FileContext ctx{path, data, size, file->header_, file->params_, 0, nullptr};

        // A .vflow file starts with its VFlowHeader, which points at an embedded GlobalHeader.
        if (size >= sizeof(kVflowMagic) && std::memcmp(data, kVflowMagic, sizeof(kVflowMagic)) == 0) {
            auto vh = reader_detail::read_vflow_header(path, data, size);
            if (!vh) return vh.take_error();
            file->container_ = ContainerFormat::Vflow;
            file->vflow_header_ = *vh;
            ctx.header_offset = vh->cflow_header_offset;  // range checked by read_vflow_header
        } else if (size < sizeof(GlobalHeader)) {
            return located(ctx, "GlobalHeader", 0,
                           "file is " + std::to_string(size) + " bytes, smaller than the " +
                               std::to_string(sizeof(GlobalHeader)) + "-byte header");
        }
        std::memcpy(&file->header_, data + ctx.header_offset, sizeof(GlobalHeader));
        if (Status s = check_global_header(ctx); !s) return s.take_error();

        const GlobalHeader& h = file->header_;
        if (!checked::range_inside(h.params_offset, sizeof(ModelParams), size))
            return located(ctx, "GlobalHeader.params_offset", ctx.header_offset + offsetof(GlobalHeader, params_offset),
                           "ModelParams (" + std::to_string(sizeof(ModelParams)) + " bytes) at " +
                               std::to_string(h.params_offset) + " past end of file (" + std::to_string(size) + " bytes)");
        std::memcpy(&file->params_, data + h.params_offset, sizeof(ModelParams));
        if (Status s = check_model_params(ctx); !s) return s.take_error();

        const uint64_t table_bytes = (uint64_t{h.n_layers} + 1) * sizeof(RegionEntry);  // n_layers <= 65,535
        uint64_t table_end = 0;
        if (!checked::add(h.layer_table_offset, table_bytes, &table_end))
            return located(ctx, "GlobalHeader.layer_table_offset", ctx.header_offset + offsetof(GlobalHeader, layer_table_offset),
                           "offset " + std::to_string(h.layer_table_offset) + " + table size " +
                               std::to_string(table_bytes) + " overflows 64 bits");
        if (table_end > size)
            return located(ctx, "GlobalHeader.layer_table_offset", ctx.header_offset + offsetof(GlobalHeader, layer_table_offset),
                           "layer table [" + std::to_string(h.layer_table_offset) + ", " + std::to_string(table_end) +
                               ") past end of file (" + std::to_string(size) + " bytes)");

        reader_detail::VflowLayout vflow;
        if (file->container_ == ContainerFormat::Vflow) {
            auto layout = reader_detail::read_vflow_layout(ctx, file->vflow_header_);
            if (!layout) return layout.take_error();
            vflow = std::move(*layout);
            ctx.vflow = &vflow;
        }

        file->layers_.reserve(h.n_layers);
        for (uint32_t l = 0; l < h.n_layers; ++l) {
            auto region = reader_detail::read_region(ctx, l);
            if (!region) return region.take_error();
            file->layers_.push_back(std::move(*region));
        }
        auto vocab = reader_detail::read_region(ctx, h.n_layers);
        if (!vocab) return vocab.take_error();
        file->vocab_ = std::move(*vocab);
        if (ctx.vflow) {
            if (Status s = reader_detail::check_vflow_order(ctx, file->layers_, file->vocab_); !s) return s.take_error();
            file->groups_ = vflow.groups;
        }

        const ModelParams& p = file->params_;
        const uint64_t meta_field = h.params_offset + offsetof(ModelParams, metadata_offset);
        uint64_t meta_end = 0;
        if (!checked::add(p.metadata_offset, p.metadata_bytes, &meta_end))
            return located(ctx, "ModelParams.metadata_offset", meta_field, "offset + metadata_bytes overflows 64 bits");
        if (meta_end > size)
            return located(ctx, "ModelParams.metadata_offset", meta_field,
                           "metadata section [" + std::to_string(p.metadata_offset) + ", " + std::to_string(meta_end) +
                               ") past end of file (" + std::to_string(size) + " bytes)");
        auto meta = Metadata::parse(data + p.metadata_offset, p.metadata_bytes, path, p.metadata_offset);
        if (!meta) return meta.take_error();
        file->metadata_ = std::move(*meta);
        if (Status s = check_metadata_entries(path, h, p, file->metadata_); !s) return s.take_error();
        return file;
    } catch (const std::bad_alloc&) {
        return make_error(ErrorKind::OutOfMemory, path + ": out of memory while indexing the file");
    }
}

Result<ExpertView> CflowFile::expert(uint32_t layer, uint32_t expert_index, const uint8_t* expert_bytes) const {
    if (Status s = check_expert_index(layer, expert_index, "expert()"); !s) return s.take_error();
    try {
        return reader_detail::read_expert(expert_context(), layers_[layer], expert_index, expert_bytes);
    } catch (const std::bad_alloc&) {
        return make_error(ErrorKind::OutOfMemory,
                          path() + ": out of memory while indexing expert " + std::to_string(expert_index));
    }
}

Result<ExpertLocation> CflowFile::expert_location(uint32_t layer, uint32_t expert_index) const {
    if (Status s = check_expert_index(layer, expert_index, "expert_location()"); !s) return s.take_error();
    return reader_detail::read_expert_location(expert_context(), layers_[layer], expert_index);
}

Status CflowFile::check_expert_index(uint32_t layer, uint32_t expert_index, const char* what) const {
    if (layer >= layers_.size())
        return make_error(path() + ": " + what + ": layer " + std::to_string(layer) + " out of range (" +
                          std::to_string(layers_.size()) + " layers)");
    if (expert_index >= header_.n_experts)
        return make_error(path() + ": " + what + ": expert " + std::to_string(expert_index) + " out of range (" +
                          std::to_string(header_.n_experts) + " experts)");
    return {};
}

reader_detail::FileContext CflowFile::expert_context() const {
    // Expert lookups only read the (validated) ExpertTable and bank, which need no .vflow spans.
    const uint64_t header_offset = container_ == ContainerFormat::Vflow ? vflow_header_.cflow_header_offset : 0;
    return reader_detail::FileContext{path(), file_->data(), file_->size(), header_, params_, header_offset, nullptr};
}

} // namespace cflow
