// The complete layout of a conversion, computed before a byte is written. .cflow:
// GlobalHeader @0, ModelParams @88, LayerTable right after, then the regions (each
// segment 64-byte aligned, layer segments in read order, schedule_order.h), then the
// metadata section. .vflow: converter_vflow_layout.cpp. All sizes follow from geometry.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "cflow/formats/model_path_kind.h"
#include "cflow/formats/schedule_order.h"

#include "checked_math.h"
#include "converter_internal.h"
#include "tile_geometry.h"

namespace cflow::convert_detail {
namespace {

constexpr const char* kConverterVersion = "cflow 0.1.0";

using segment_shapes::SegmentShape;
using segment_shapes::Storage;

// Output row i of a head reads source row map(i): adjacent-pair RoPE -> split-half over
// the rotated dims rot = head_dim * rope_fraction (rounded down to even); the rest keep their place.
std::vector<uint32_t> rope_row_map(uint32_t n_heads, uint32_t head_dim, float rope_fraction) {
    uint32_t rot = static_cast<uint32_t>(static_cast<double>(head_dim) * rope_fraction);
    rot -= rot % 2;
    std::vector<uint32_t> map(static_cast<size_t>(n_heads) * head_dim);
    for (uint32_t h = 0; h < n_heads; ++h)
        for (uint32_t i = 0; i < head_dim; ++i) {
            uint32_t src = i;
            if (i < rot / 2)
                src = 2 * i;
            else if (i < rot)
                src = 2 * (i - rot / 2) + 1;
            map[static_cast<size_t>(h) * head_dim + i] = h * head_dim + src;
        }
    return map;
}

MatrixSource matrix(const TensorView* t, uint32_t rows, uint32_t cols, std::vector<uint32_t> row_map = {},
                    uint64_t first_row = 0) {
    MatrixSource m;
    m.tensor = t;
    m.rows = rows;
    m.cols = cols;
    m.row_map = std::move(row_map);
    m.first_row = first_row;
    return m;
}

class LayoutBuilder {
public:
    LayoutBuilder(const SourceModel& src, const ConvertOptions& options)
        : src_(src), c_(src.config), options_(options), quantised_source_(has_quantised_matrix(src)) {}

    Result<FilePlan> build() {
        make_headers();
        for (uint32_t l = 0; l < c_.n_layers; ++l) {
            auto region = layer_region(l);
            if (!region) return region.take_error();
            plan_.regions.push_back(std::move(*region));
        }
        auto vocab = vocab_region();
        if (!vocab) return vocab.take_error();
        plan_.regions.push_back(std::move(*vocab));
        if (Status s = check_every_tensor_used(); !s) return s.take_error();
        plan_.header.weight_quant = static_cast<uint8_t>(bulk_dtype());
        if (Status s = assign_offsets(); !s) return s.take_error();
        return std::move(plan_);
    }

private:
    const TensorView* t(const std::string& name) const { return src_.find(name); }

    // GlobalHeader.weight_quant: the tile type holding the most bytes (a kept Q4_K_M file: Q4_K).
    DType bulk_dtype() const {
        std::map<DType, uint64_t> bytes;
        for (const RegionPlan& region : plan_.regions)
            for (const SegmentPlan& seg : region.segments) {
                if (seg.shape.storage == Storage::Raw) continue;
                const uint64_t copies = seg.shape.storage == Storage::ExpertBank ? c_.n_experts : 1;
                for (size_t p = 0; p < seg.shape.parts.size(); ++p) {
                    const bool down = seg.shape.storage == Storage::ExpertBank && p == 2;
                    const uint32_t cols = down ? segment_shapes::expert_down_cols(seg.shape) : seg.shape.cols;
                    if (auto size = tile_geometry::segment_size({seg.shape.parts[p]}, cols))
                        bytes[seg.shape.parts[p].dtype] += size->bytes * copies;
                }
            }
        DType best = options_.weight_quant;
        uint64_t most = 0;
        for (const auto& [dtype, n] : bytes)
            if (n > most) most = n, best = dtype;
        return best;
    }

    // A tensor the planned segments leave out would be dropped without a word: refuse it,
    // naming it, unless the reader folded it into the config or said why the forward never
    // reads it.
    Status check_every_tensor_used() {
        std::set<std::string> used(src_.config_tensors.begin(), src_.config_tensors.end());
        std::map<std::string, std::string> ignored = src_.ignored_tensors;
        if (tied_ && (c_.feature_flags & kFeatureTiedEmbeddings) && t("output.weight"))
            ignored.emplace("output.weight", "the config ties the LM head to the token embeddings");
        for (const RegionPlan& region : plan_.regions)
            for (const SegmentPlan& seg : region.segments) used.insert(seg.tensor_names.begin(), seg.tensor_names.end());
        std::vector<std::string> unused;
        for (const auto& [name, tensor] : src_.tensors)
            if (!used.count(name) && !ignored.count(name)) unused.push_back(tensor.origin.empty() ? "'" + name + "'" : tensor.origin);
        // Entries naming no tensor summarise what the reader left out itself (a vision tower).
        for (const auto& [name, why] : ignored)
            if (!used.count(name)) plan_.ignored_tensors.push_back(name + ": " + why);
        if (unused.empty()) return Status::success();
        std::string list;
        for (size_t i = 0; i < unused.size() && i < 5; ++i) list += (i ? "; " : "") + unused[i];
        if (unused.size() > 5) list += "; and " + std::to_string(unused.size() - 5) + " more";
        return make_error(ErrorKind::Unsupported,
                          std::to_string(unused.size()) + " tensor(s) that cflow's forward pass for architecture '" +
                              c_.architecture + "' does not read, which converting would drop: " + list);
    }

    void make_headers() {
        tied_ = (c_.feature_flags & kFeatureTiedEmbeddings) != 0 || !t("output.weight");
        has_bias_ = (c_.feature_flags & kFeatureQkvBias) != 0;
        has_qk_norm_ = (c_.feature_flags & kFeatureQkNorm) != 0;
        for (uint32_t l = 0; l < c_.n_layers; ++l) {
            const std::string p = "blk." + std::to_string(l) + ".";
            has_bias_ = has_bias_ || t(p + "attn_q.bias") || t(p + "attn_k.bias") || t(p + "attn_v.bias");
            has_qk_norm_ = has_qk_norm_ || t(p + "attn_q_norm.weight");
        }
        uint8_t flags = c_.feature_flags & static_cast<uint8_t>(~(kFeatureTiedEmbeddings | kFeatureQkvBias | kFeatureQkNorm));
        if (tied_) flags |= kFeatureTiedEmbeddings;
        if (has_bias_) flags |= kFeatureQkvBias;
        if (has_qk_norm_) flags |= kFeatureQkNorm;
        flags = static_cast<uint8_t>(flags & ~(kFeatureRopeFreqFactors | kFeatureRopeSkipLayers));
        if (!c_.rope_freq_factors.empty()) flags |= kFeatureRopeFreqFactors;
        const bool skips_rope = std::find(c_.rope_skip_layers.begin(), c_.rope_skip_layers.end(), 1) != c_.rope_skip_layers.end();
        if (skips_rope) flags |= kFeatureRopeSkipLayers;
        has_post_norms_ = t("blk.0.post_attention_norm.weight") != nullptr;
        has_sinks_ = t("blk.0.attn_sinks.weight") != nullptr;
        has_out_bias_ = t("blk.0.attn_output.bias") != nullptr;
        has_moe_biases_ = c_.n_experts > 0 && t("blk.0.ffn_gate_inp.bias") != nullptr;
        // Per-layer windows only when some layer attends globally; a window on every layer is the
        // plain (version 5) sliding_window.
        const bool sliding_per_layer = c_.sliding_window > 0 && !c_.sliding_layers.empty() &&
                                       std::find(c_.sliding_layers.begin(), c_.sliding_layers.end(), 0) != c_.sliding_layers.end();
        const bool local_rope = c_.sliding_window > 0 && c_.rope_local_theta > 0.0f;
        const bool long_rope = !c_.rope_freq_factors_long.empty();
        uint32_t extended = 0;
        if (long_rope) extended |= kExtLongRope;
        if (has_post_norms_) extended |= kExtPostNorms;
        if (sliding_per_layer) extended |= kExtSlidingLayers;
        if (local_rope) extended |= kExtLocalRope;
        if (has_sinks_) extended |= kExtAttnSinks;
        if (has_out_bias_) extended |= kExtAttnOutBias;
        if (has_moe_biases_) extended |= kExtMoeBiases;
        flags = static_cast<uint8_t>(flags & ~kFeatureExtended);  // set below from what the tail holds

        plan_.format = options_.format;
        GlobalHeader& h = plan_.header;
        std::memcpy(h.magic, kCflowMagic, sizeof(h.magic));
        h.version = kCflowVersion;
        h.d_model = c_.d_model;
        h.n_layers = c_.n_layers;
        h.n_heads = static_cast<uint16_t>(c_.n_heads);
        h.n_kv_heads = static_cast<uint16_t>(c_.n_kv_heads);
        h.head_dim = static_cast<uint16_t>(c_.head_dim);
        h.n_experts = static_cast<uint16_t>(c_.n_experts);
        h.top_k = static_cast<uint16_t>(c_.top_k);
        h.weight_quant = static_cast<uint8_t>(options_.weight_quant);
        h.d_ff = c_.d_ff;
        h.expert_d_ff = c_.n_experts ? c_.expert_d_ff : 0;
        h.vocab_size = c_.vocab_size;
        h.max_seq_len = c_.max_seq_len;
        h.tile_rows = kTileRows;
        h.tile_cols = kTileCols;
        // A window over every layer that no layer uses is no window (all layers global).
        const bool any_sliding = c_.sliding_layers.empty() ||
                                 std::find(c_.sliding_layers.begin(), c_.sliding_layers.end(), 1) != c_.sliding_layers.end();
        h.sliding_window = any_sliding ? c_.sliding_window : 0;
        // .cflow positions; a .vflow layout moves these (assign_vflow_offsets).
        h.params_offset = sizeof(GlobalHeader);
        h.layer_table_offset = sizeof(GlobalHeader) + sizeof(ModelParams);
        h.dense_delay = c_.dense_delay;
        h.expert_delay = c_.expert_delay;
        h.combine_style = static_cast<uint8_t>(c_.combine_style);
        h.feature_flags = flags;
        h.final_logit_softcap = c_.final_logit_softcap;

        ModelParams& p = plan_.params;
        p.params_bytes = sizeof(ModelParams);
        p.norm_eps = c_.norm_eps;
        p.rope_theta = c_.rope_theta;
        p.rope_fraction = c_.rope_fraction;
        p.ffn_activation = static_cast<uint8_t>(c_.ffn_activation);
        p.router_mode = static_cast<uint8_t>(c_.router_mode);
        p.merge_interval = c_.merge_interval;
        const bool fixed_point = c_.combine_style == CombineStyle::FixedPoint;
        p.n_blocks = fixed_point ? static_cast<uint8_t>(c_.n_layers) : 0;
        p.n_iter = fixed_point ? c_.n_iter : 0;
        p.attn_logit_softcap = c_.attn_logit_softcap;
        p.embedding_scale = c_.embedding_scale;
        p.shared_expert_d_ff = c_.shared_expert_d_ff;
        p.extended_features = h.sliding_window > 0 ? extended : (extended & ~(kExtSlidingLayers | kExtLocalRope));
        p.query_scale = c_.query_scale;
        p.rope_local_theta = (p.extended_features & kExtLocalRope) ? c_.rope_local_theta : 0.0f;
        p.rope_original_context = long_rope ? c_.rope_original_context : 0;
        p.rope_attn_factor = c_.rope_attn_factor == 1.0f ? 0.0f : c_.rope_attn_factor;
        if (c_.ffn_activation == FfnActivation::ClampedSwiGLU) {
            p.ffn_alpha = c_.ffn_alpha;
            p.ffn_limit = c_.ffn_limit;
        }
        if (p.extended_features != 0 || p.query_scale != 0.0f || p.rope_attn_factor != 0.0f || p.ffn_alpha != 0.0f)
            h.feature_flags |= kFeatureExtended;

        Metadata meta = src_.metadata;
        meta.erase(kRopeFreqFactorsKey);  // only what this config says reaches the file
        if (!c_.rope_freq_factors.empty()) meta.set(kRopeFreqFactorsKey, c_.rope_freq_factors);
        meta.erase(kRopeSkipLayersKey);
        if (skips_rope) meta.set(kRopeSkipLayersKey, c_.rope_skip_layers);
        meta.erase(kRopeLongFactorsKey);
        if (long_rope) meta.set(kRopeLongFactorsKey, c_.rope_freq_factors_long);
        meta.erase(kSlidingLayersKey);
        if (p.extended_features & kExtSlidingLayers) meta.set(kSlidingLayersKey, c_.sliding_layers);
        meta.set("general.converter", std::string(kConverterVersion));
        if (!meta.contains("general.source_format") && !src_.source_label.empty()) {
            // The readers label a source with the path they opened: the same rule that picked the reader names it.
            const std::string format = source_format_name(sniff_model_path(src_.source_label));
            if (!format.empty()) meta.set("general.source_format", format);
        }
        if (!meta.contains("general.source") && !src_.source_label.empty())
            meta.set("general.source", std::filesystem::path(src_.source_label).filename().string());
        plan_.metadata = meta.serialize();
    }

    // part_dtypes (one per part of a tiled segment) overrides dtype part by part.
    Result<SegmentPlan> segment(SegmentRole role, DType dtype, std::vector<std::string> names,
                                const std::vector<DType>& part_dtypes = {}) {
        auto shape = segment_shapes::segment_shape(plan_.header, plan_.params, role);
        if (!shape)
            return make_error(shape.kind(), std::string(segment_shapes::role_name(role)) + ": " + shape.error());
        SegmentPlan seg;
        seg.role = role;
        seg.shape = std::move(*shape);
        for (size_t p = 0; p < seg.shape.parts.size(); ++p) {
            DType& part = seg.shape.parts[p].dtype;
            part = p < part_dtypes.size() ? part_dtypes[p] : dtype;
            // A K-quant super-block covers 256 inputs (a Q4_1 / Q5_0 / Q5_1 / IQ4_NL block 32): a
            // matrix whose rows are not whole blocks takes Q8_0 instead (llama-quantize falls back
            // too), and the report says so. A GGUF's own tensors are always whole blocks.
            const uint32_t cols = seg.shape.storage == Storage::ExpertBank && p == 2 ? segment_shapes::expert_down_cols(seg.shape)
                                                                                     : seg.shape.cols;
            if (const uint32_t weights = ggml_tile_block_weights(part); weights && cols % weights != 0) {
                const MatrixId matrix = seg.shape.parts[p].matrix;
                plan_.kquant_fallbacks.push_back(std::string(segment_shapes::matrix_name(matrix)) + " of " +
                                                 segment_shapes::role_name(role) + ": " + std::string(dtype_name(part)) +
                                                 " -> q8_0 (" + std::to_string(cols) + " inputs are not whole " +
                                                 std::to_string(weights) +
                                                 (weights == kKQuantBlock ? "-weight super-blocks)" : "-weight blocks)"));
                part = DType::Q8_0;
            }
        }
        seg.dtype = seg.shape.storage == Storage::Raw ? DType::F32 : seg.shape.parts[0].dtype;
        auto bytes = segment_shapes::segment_bytes(plan_.header, seg.shape);
        if (!bytes)
            return make_error(bytes.kind(), std::string(segment_shapes::role_name(role)) + ": " + bytes.error());
        seg.bytes = bytes->bytes;
        seg.n_tiles = bytes->n_tiles;
        seg.expert_gate_up_bytes = bytes->expert_gate_up_bytes;
        seg.expert_bytes = bytes->expert_bytes;
        seg.tensor_names = std::move(names);
        plan_.tensors_total += seg.tensor_names.size();
        return seg;
    }

    // The tile type of one source matrix: its own quantised type when the options keep source
    // types and the tiles hold it (re-tiled block for block), else the class's target. Unquantised
    // matrices (F32, F16, BF16) take the class's target: quantising them is the user's choice.
    // In a quantised file (llama-quantize output) its F16 / F32 matrices are the ones the recipe left
    // unquantised on purpose (widths no block type divides, F16 heads): they keep their type (BF16
    // as F32, which holds it exactly), as llama.cpp runs them. An unquantised file (every matrix
    // F16/BF16/F32) takes the class's target: quantising it is the user's choice.
    DType part_dtype(const TensorView* tensor, DType target) const {
        if (!options_.keep_source_types || !options_.retile_exact || !tensor) return target;
        if (quantised_source_) {
            if (tensor->dtype == DType::F16 || tensor->dtype == DType::F32) return tensor->dtype;
            if (tensor->dtype == DType::BF16) return DType::F32;
        }
        const std::optional<DType> own = native_tile_type(*tensor);
        if (!own || !(is_block_quant(*own) || is_ggml_tile(*own))) return target;
        if (kept(*own)) return *own;
        // A type the front end does not keep (no fast kernels): the nearest kept type that holds
        // its precision, so the file stays close to what the user chose.
        const DType nearest = ggml_tile_block_weights(*own) == kKQuantBlock ? DType::Q6_K : DType::Q8_0;
        return kept(nearest) ? nearest : target;
    }

    bool kept(DType dtype) const {
        return options_.keep_dtype_mask == 0 || (options_.keep_dtype_mask & (1u << static_cast<unsigned>(dtype))) != 0;
    }

    bool exact(const TensorView* tensor, DType part) const {
        if (!options_.retile_exact || !tensor) return false;
        if (is_ggml_tile(part))
            return tensor->dtype == part || (tensor->dtype == DType::GgmlBlock && tensor->ggml_type == ggml_tile_ggml_type(part));
        return is_block_quant(part) && tensor->dtype == part;
    }

    // A raw f32 segment of one vector tensor (optionally permuted per head).
    Result<SegmentPlan> vector_segment(SegmentRole role, const std::string& name, std::vector<uint32_t> element_map = {}) {
        auto seg = segment(role, DType::F32, {name});
        if (!seg) return seg;
        const TensorView* tensor = t(name);
        seg->raw.push_back({matrix(tensor, 1, static_cast<uint32_t>(seg->shape.cols)), std::move(element_map)});
        return seg;
    }

    Result<SegmentPlan> tiled_segment(SegmentRole role, DType dtype, std::vector<std::string> names,
                                      std::vector<std::vector<uint32_t>> row_maps = {}) {
        std::vector<DType> part_dtypes;
        for (const std::string& name : names) part_dtypes.push_back(part_dtype(t(name), dtype));
        auto seg = segment(role, dtype, names, part_dtypes);
        if (!seg) return seg;
        for (size_t p = 0; p < seg->shape.parts.size(); ++p) {
            const TensorView* tensor = t(names[p]);
            std::vector<uint32_t> map = p < row_maps.size() ? std::move(row_maps[p]) : std::vector<uint32_t>{};
            seg->parts.push_back(matrix(tensor, seg->shape.parts[p].rows, seg->shape.cols, std::move(map)));
            seg->exact_parts.push_back(exact(tensor, seg->shape.parts[p].dtype));
        }
        return seg;
    }

    // The parts of one segment cut from one source tensor (fused QKV / gate-up): part i starts at
    // source row first_rows[i].
    Result<SegmentPlan> fused_segment(SegmentRole role, DType dtype, const std::string& name, std::vector<uint64_t> first_rows,
                                      std::vector<std::vector<uint32_t>> row_maps = {}) {
        const TensorView* tensor = t(name);
        auto seg = segment(role, part_dtype(tensor, dtype), {name});
        if (!seg) return seg;
        for (size_t p = 0; p < seg->shape.parts.size(); ++p) {
            std::vector<uint32_t> map = p < row_maps.size() ? std::move(row_maps[p]) : std::vector<uint32_t>{};
            seg->parts.push_back(matrix(tensor, seg->shape.parts[p].rows, seg->shape.cols, std::move(map), first_rows[p]));
            seg->exact_parts.push_back(exact(tensor, seg->shape.parts[p].dtype));
        }
        return seg;
    }

    // Experts come as 3-D banks (GGUF ffn_*_exps) or as per-expert tensors ffn_{gate,up,down}.E
    // (HF checkpoints, source_model.h); validate_source has checked whichever is present.
    Result<SegmentPlan> expert_bank(const std::string& p) {
        const uint32_t d = c_.d_model, eff = c_.expert_d_ff;
        const DType wq = quant_for(options_, TensorClass::Experts);
        const std::string gate = p + "ffn_gate_exps.weight", up = p + "ffn_up_exps.weight", down = p + "ffn_down_exps.weight";
        const bool stacked = t(gate) != nullptr || t(p + "ffn_gate.0.weight") == nullptr;
        auto per_expert = [&](const char* matrix_name, uint32_t e) {
            return p + matrix_name + "." + std::to_string(e) + ".weight";
        };
        std::vector<std::string> names;
        if (stacked) {
            names = {gate, up, down};
        } else {
            for (uint32_t e = 0; e < c_.n_experts; ++e)
                for (const char* m : {"ffn_gate", "ffn_up", "ffn_down"}) names.push_back(per_expert(m, e));
        }
        // Each of gate, up, down keeps its source type only when every expert's tensor has it.
        std::vector<DType> part_dtypes;
        for (const char* m : {"ffn_gate", "ffn_up", "ffn_down"}) {
            const std::string bank_name = p + m + "_exps.weight";
            DType kept = part_dtype(stacked ? t(bank_name) : t(per_expert(m, 0)), wq);
            for (uint32_t e = 1; !stacked && e < c_.n_experts; ++e)
                if (part_dtype(t(per_expert(m, e)), wq) != kept) kept = wq;
            part_dtypes.push_back(kept);
        }
        auto bank = segment(SegmentRole::ExpertBank, wq, names, part_dtypes);
        if (!bank) return bank;
        if (stacked) {
            for (uint32_t e = 0; e < c_.n_experts; ++e)
                bank->experts.push_back({matrix(t(gate), eff, d, {}, uint64_t{e} * eff),
                                         matrix(t(up), eff, d, {}, uint64_t{e} * eff),
                                         matrix(t(down), d, eff, {}, uint64_t{e} * d)});
            bank->exact_parts = {exact(t(gate), part_dtypes[0]), exact(t(up), part_dtypes[1]), exact(t(down), part_dtypes[2])};
            return bank;
        }
        // A part is re-tiled block for block only when every expert's tensor allows it.
        std::vector<bool> all_exact(3, true);
        for (uint32_t e = 0; e < c_.n_experts; ++e) {
            const std::array<const TensorView*, 3> ts = {t(per_expert("ffn_gate", e)), t(per_expert("ffn_up", e)),
                                                        t(per_expert("ffn_down", e))};
            bank->experts.push_back({matrix(ts[0], eff, d), matrix(ts[1], eff, d), matrix(ts[2], d, eff)});
            for (size_t i = 0; i < 3; ++i) all_exact[i] = all_exact[i] && exact(ts[i], part_dtypes[i]);
        }
        bank->exact_parts = std::move(all_exact);
        return bank;
    }

    // Per expert: its gate bias row, up bias row and down bias row of the stacked bias tensors.
    Result<SegmentPlan> expert_biases(const std::string& p) {
        const uint32_t d = c_.d_model, eff = c_.expert_d_ff;
        const std::string gate = p + "ffn_gate_exps.bias", up = p + "ffn_up_exps.bias", down = p + "ffn_down_exps.bias";
        auto seg = segment(SegmentRole::ExpertBias, DType::F32, {gate, up, down});
        if (!seg) return seg;
        for (uint32_t e = 0; e < c_.n_experts; ++e) {
            seg->raw.push_back({matrix(t(gate), 1, eff, {}, e), {}});
            seg->raw.push_back({matrix(t(up), 1, eff, {}, e), {}});
            seg->raw.push_back({matrix(t(down), 1, d, {}, e), {}});
        }
        return seg;
    }

    Result<RegionPlan> layer_region(uint32_t l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        const DType attention_quant = quant_for(options_, TensorClass::Attention);
        const DType ffn_quant = quant_for(options_, TensorClass::DenseFfn);
        const DType shared_quant = quant_for(options_, TensorClass::Experts);
        const uint32_t d = c_.d_model;
        RegionPlan region;
        region.index = l;
        auto add = [&](Result<SegmentPlan> seg) -> Status {
            if (!seg) return make_error(seg.kind(), "layer " + std::to_string(l) + " " + seg.error());
            region.segments.push_back(std::move(*seg));
            return {};
        };
        std::vector<uint32_t> q_map, k_map, head_map;
        if (c_.rope_interleaved) {
            q_map = rope_row_map(c_.n_heads, c_.head_dim, c_.rope_fraction);
            k_map = rope_row_map(c_.n_kv_heads, c_.head_dim, c_.rope_fraction);
            head_map = rope_row_map(1, c_.head_dim, c_.rope_fraction);
        }
        std::vector<Status> steps;
        steps.push_back(add(vector_segment(SegmentRole::AttnNorm, p + "attn_norm.weight")));
        if (has_qk_norm_) {
            steps.push_back(add(vector_segment(SegmentRole::QNorm, p + "attn_q_norm.weight", head_map)));
            steps.push_back(add(vector_segment(SegmentRole::KNorm, p + "attn_k_norm.weight", head_map)));
        }
        if (t(p + "attn_qkv.weight")) {  // fused (Phi-3): Q rows, then K, then V
            const uint32_t qn = c_.n_heads * c_.head_dim, kvn = c_.n_kv_heads * c_.head_dim;
            steps.push_back(add(fused_segment(SegmentRole::Qkv, attention_quant, p + "attn_qkv.weight", {0, qn, qn + kvn},
                                              {q_map, k_map})));
        } else {
            steps.push_back(add(tiled_segment(SegmentRole::Qkv, attention_quant,
                                              {p + "attn_q.weight", p + "attn_k.weight", p + "attn_v.weight"}, {q_map, k_map})));
        }
        if (has_bias_) {
            std::vector<std::string> names;
            for (const char* b : {"attn_q.bias", "attn_k.bias", "attn_v.bias"})
                if (t(p + b)) names.push_back(p + b);
            auto seg = segment(SegmentRole::QkvBias, DType::F32, names);
            if (seg) {
                const uint32_t qn = c_.n_heads * c_.head_dim, kvn = c_.n_kv_heads * c_.head_dim;
                seg->raw.push_back({matrix(t(p + "attn_q.bias"), 1, qn), q_map});
                seg->raw.push_back({matrix(t(p + "attn_k.bias"), 1, kvn), k_map});
                seg->raw.push_back({matrix(t(p + "attn_v.bias"), 1, kvn), {}});
            }
            steps.push_back(add(std::move(seg)));
        }
        if (has_sinks_) steps.push_back(add(vector_segment(SegmentRole::AttnSinks, p + "attn_sinks.weight")));
        steps.push_back(add(tiled_segment(SegmentRole::AttnOut, attention_quant, {p + "attn_output.weight"})));
        if (has_out_bias_) steps.push_back(add(vector_segment(SegmentRole::AttnOutBias, p + "attn_output.bias")));
        if (has_post_norms_) steps.push_back(add(vector_segment(SegmentRole::AttnPostNorm, p + "post_attention_norm.weight")));
        if (c_.d_ff > 0) {
            steps.push_back(add(vector_segment(SegmentRole::FfnNorm, p + "ffn_norm.weight")));
            if (t(p + "ffn_gate_up.weight"))  // fused (Phi-3): gate rows, then up
                steps.push_back(add(fused_segment(SegmentRole::GateUp, ffn_quant, p + "ffn_gate_up.weight", {0, c_.d_ff})));
            else
                steps.push_back(add(tiled_segment(SegmentRole::GateUp, ffn_quant, {p + "ffn_gate.weight", p + "ffn_up.weight"})));
            steps.push_back(add(tiled_segment(SegmentRole::Down, ffn_quant, {p + "ffn_down.weight"})));
            if (has_post_norms_) steps.push_back(add(vector_segment(SegmentRole::FfnPostNorm, p + "post_ffw_norm.weight")));
        }
        if (c_.n_experts > 0) {
            const std::string norm = t(p + "moe_norm.weight") ? p + "moe_norm.weight" : p + "ffn_norm.weight";
            steps.push_back(add(vector_segment(SegmentRole::MoeNorm, norm)));
            auto router = segment(SegmentRole::Router, DType::F32, {p + "ffn_gate_inp.weight"});
            if (router) router->raw.push_back({matrix(t(p + "ffn_gate_inp.weight"), c_.n_experts, d), {}});
            steps.push_back(add(std::move(router)));
            if (has_moe_biases_) {
                steps.push_back(add(vector_segment(SegmentRole::RouterBias, p + "ffn_gate_inp.bias")));
                steps.push_back(add(expert_biases(p)));
            }
            steps.push_back(add(segment(SegmentRole::ExpertTable, DType::F32, {})));  // contents set by assign_offsets
            steps.push_back(add(expert_bank(p)));
            if (c_.shared_expert_d_ff > 0) {
                steps.push_back(add(tiled_segment(SegmentRole::SharedGateUp, shared_quant,
                                                  {p + "ffn_gate_shexp.weight", p + "ffn_up_shexp.weight"})));
                steps.push_back(add(tiled_segment(SegmentRole::SharedDown, shared_quant, {p + "ffn_down_shexp.weight"})));
                steps.push_back(add(vector_segment(SegmentRole::SharedGate, p + "ffn_gate_inp_shexp.weight")));
            }
        }
        for (Status& s : steps)
            if (!s) return s.take_error();
        // The engine reads a layer's segments in the order of its schedule (the dense FFN first
        // when it does not depend on the layer's attention): write them in that order.
        const auto style = c_.combine_style;
        const uint8_t dense_delay = c_.dense_delay;
        std::stable_sort(region.segments.begin(), region.segments.end(), [&](const SegmentPlan& a, const SegmentPlan& b) {
            return layer_read_rank(a.role, style, dense_delay) < layer_read_rank(b.role, style, dense_delay);
        });
        return region;
    }

    Result<RegionPlan> vocab_region() {
        const DType eq = quant_for(options_, TensorClass::Embeddings);
        const DType lm_head_quant = quant_for(options_, TensorClass::Output);
        RegionPlan region;
        region.index = c_.n_layers;
        std::vector<Result<SegmentPlan>> segs;
        segs.push_back(vector_segment(SegmentRole::OutputNorm, "output_norm.weight"));
        if (!tied_) segs.push_back(tiled_segment(SegmentRole::LmHead, lm_head_quant, {"output.weight"}));
        segs.push_back(tiled_segment(SegmentRole::TokenEmbd, eq, {"token_embd.weight"}));
        for (auto& seg : segs) {
            if (!seg) return make_error(seg.kind(), "vocabulary region " + seg.error());
            region.segments.push_back(std::move(*seg));
        }
        return region;
    }

    // Places regions and segments; every segment and region start is 64-byte aligned.
    Status assign_offsets() {
        uint64_t pos = 0;
        if (options_.format == ContainerFormat::Vflow) {
            auto end = assign_vflow_offsets(plan_);
            if (!end) return end.take_error();
            pos = *end;
        } else {
            auto end = assign_cflow_offsets();
            if (!end) return end.take_error();
            pos = *end;
        }
        fill_expert_tables(plan_);
        if (!checked::align_up(pos, kSegmentAlignment, &pos)) return make_error("file size overflows 64 bits");
        plan_.params.metadata_offset = pos;
        plan_.params.metadata_bytes = plan_.metadata.size();
        uint64_t file_bytes = 0;
        if (!checked::add(pos, plan_.metadata.size(), &file_bytes)) return make_error("file size overflows 64 bits");
        plan_.header.file_bytes = file_bytes;
        return {};
    }

    // .cflow: LayerTable after ModelParams, then each region = header, directory, segments.
    Result<uint64_t> assign_cflow_offsets() {
        uint64_t pos = plan_.header.layer_table_offset + (uint64_t{c_.n_layers} + 1) * sizeof(RegionEntry);
        auto align = [&](uint64_t* value) -> Status {
            if (!checked::align_up(*value, kSegmentAlignment, value)) return make_error("file size overflows 64 bits");
            return {};
        };
        for (RegionPlan& region : plan_.regions) {
            if (Status s = align(&pos); !s) return s.take_error();
            region.offset = pos;
            pos += sizeof(RegionHeader) + region.segments.size() * sizeof(SegmentEntry);
            for (SegmentPlan& seg : region.segments) {
                if (Status s = align(&pos); !s) return s.take_error();
                seg.offset = pos;
                if (!checked::add(pos, seg.bytes, &pos)) return make_error("file size overflows 64 bits");
            }
            region.bytes = pos - region.offset;
        }
        return pos;
    }

    const SourceModel& src_;
    const ModelConfig& c_;
    const ConvertOptions& options_;
    const bool quantised_source_;  // some weight matrix of the source is block-quantised
    FilePlan plan_;
    bool tied_ = false, has_bias_ = false, has_qk_norm_ = false, has_post_norms_ = false, has_sinks_ = false, has_out_bias_ = false,
         has_moe_biases_ = false;
};

} // namespace

void fill_expert_tables(FilePlan& plan) {
    const uint32_t n_experts = plan.header.n_experts;
    for (RegionPlan& region : plan.regions) {
        SegmentPlan* table = nullptr;
        const SegmentPlan* bank = nullptr;
        for (SegmentPlan& seg : region.segments) {
            if (seg.role == SegmentRole::ExpertTable) table = &seg;
            if (seg.role == SegmentRole::ExpertBank) bank = &seg;
        }
        if (!table || !bank) continue;
        table->raw_bytes.resize(sizeof(ExpertEntry) * n_experts);  // [E x 16] bytes
        for (uint32_t e = 0; e < n_experts; ++e) {
            const ExpertEntry entry{bank->offset + uint64_t{e} * bank->expert_bytes, bank->expert_bytes};
            std::memcpy(table->raw_bytes.data() + uint64_t{e} * sizeof(ExpertEntry), &entry, sizeof(entry));
        }
    }
}

bool has_quantised_matrix(const SourceModel& source) {
    for (const auto& [name, tensor] : source.tensors)
        if (tensor.shape.size() >= 2 && (tensor.dtype == DType::GgmlBlock || is_block_quant(tensor.dtype) || is_ggml_tile(tensor.dtype)))
            return true;
    return false;
}

std::optional<DType> native_tile_type(const TensorView& tensor) {
    switch (tensor.dtype) {
        case DType::F32:
        case DType::F16:
        case DType::Q8_0:
        case DType::Q4_0: return tensor.dtype;
        case DType::GgmlBlock:
            for (DType k : kGgmlTileTypes)
                if (tensor.ggml_type == ggml_tile_ggml_type(k)) return k;
            return std::nullopt;
        default: return is_ggml_tile(tensor.dtype) ? std::optional<DType>(tensor.dtype) : std::nullopt;
    }
}

// Records "NAME: Q5_0 -> q8_0" when tensor i of a tiled segment was block-quantised in the source
// and its blocks were not copied (its values changed).
void note_requantised(const SourceModel& source, const SegmentPlan& seg, size_t i, std::set<std::string>* out) {
    if (seg.shape.storage == segment_shapes::Storage::Raw || seg.shape.parts.empty()) return;
    const TensorView* tensor = source.find(seg.tensor_names[i]);
    if (!tensor || (tensor->dtype != DType::GgmlBlock && !is_block_quant(tensor->dtype))) return;
    const DType part = seg.shape.parts[i % seg.shape.parts.size()].dtype;
    if (part == DType::F32) return;  // holds every dequantised value exactly: nothing changes
    std::string from(dtype_name(tensor->dtype));
    if (const GgmlBlockType* block = find_ggml_block_type(tensor->ggml_type); tensor->dtype == DType::GgmlBlock && block)
        from = std::string(block->name);
    for (char& c : from) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out->insert(seg.tensor_names[i] + ": " + from + " -> " + std::string(dtype_name(part)));
}

Result<FilePlan> plan_file(const SourceModel& source, const ConvertOptions& options) {
    return LayoutBuilder(source, options).build();
}

} // namespace cflow::convert_detail
