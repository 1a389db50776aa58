// plan_conversion: the converter's layout, summed by tensor class, without writing the file;
// and the per-class quantisation choices of ConvertOptions.
#include "cflow/formats/conversion_plan.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <set>

#include "cflow/formats/tile_codec.h"
#include "converter_internal.h"

namespace cflow {

std::string_view tensor_class_name(TensorClass c) {
    switch (c) {
        case TensorClass::Embeddings: return "embeddings";
        case TensorClass::Attention: return "attention";
        case TensorClass::DenseFfn: return "ffn";
        case TensorClass::Experts: return "experts";
        case TensorClass::Output: return "output";
    }
    return "?";
}

std::optional<TensorClass> parse_tensor_class(std::string_view name) {
    for (TensorClass c : kTensorClasses)
        if (tensor_class_name(c) == name) return c;
    return std::nullopt;
}

DType quant_for(const ConvertOptions& o, TensorClass c) {
    switch (c) {
        case TensorClass::Embeddings: return o.embedding_quant.value_or(o.weight_quant);
        case TensorClass::Attention: return o.attention_quant.value_or(o.weight_quant);
        case TensorClass::DenseFfn: return o.ffn_quant.value_or(o.weight_quant);
        case TensorClass::Experts: return o.expert_quant.value_or(o.weight_quant);
        case TensorClass::Output: return o.output_quant.value_or(o.embedding_quant.value_or(o.weight_quant));
    }
    return o.weight_quant;
}

void set_quant_for(ConvertOptions& o, TensorClass c, DType quant) {
    switch (c) {
        case TensorClass::Embeddings: o.embedding_quant = quant; break;
        case TensorClass::Attention: o.attention_quant = quant; break;
        case TensorClass::DenseFfn: o.ffn_quant = quant; break;
        case TensorClass::Experts: o.expert_quant = quant; break;
        case TensorClass::Output: o.output_quant = quant; break;
    }
}

namespace {

using namespace convert_detail;

uint64_t elements_of(const TensorView& t) {
    uint64_t n = 1;
    for (uint64_t dim : t.shape) n *= dim;  // validate_source bounded every dimension of the tensors it admits
    return n;
}

void add_segment(ConversionPlan& out, const SegmentPlan& seg, const ModelConfig& c, bool tied) {
    switch (seg.role) {
        case SegmentRole::Qkv:
        case SegmentRole::AttnOut: out.attention_bytes += seg.bytes; break;
        case SegmentRole::GateUp:
        case SegmentRole::Down: out.dense_ffn_bytes += seg.bytes; break;
        case SegmentRole::ExpertBank: out.expert_bank_bytes += seg.bytes; break;
        case SegmentRole::SharedGateUp:
        case SegmentRole::SharedDown: out.shared_expert_bytes += seg.bytes; break;
        case SegmentRole::TokenEmbd: out.embedding_bytes += seg.bytes; break;
        case SegmentRole::LmHead: out.output_bytes += seg.bytes; break;
        default: out.other_bytes += seg.bytes; break;
    }
    if (seg.role == SegmentRole::ExpertBank) {
        out.decode_bytes_per_token += seg.expert_bytes * c.top_k;
    } else if (seg.role == SegmentRole::TokenEmbd) {
        // One row per token, unless the table is also the LM head and so read whole.
        out.decode_bytes_per_token += tied ? seg.bytes : seg.bytes / (c.vocab_size ? c.vocab_size : 1);
    } else {
        out.decode_bytes_per_token += seg.bytes;
    }
}

// Relative weight change of the matrices the conversion re-quantises, from a few rows of each:
// the exact source values against what the target type will hold (encode, then decode, as
// the tile writer does). Only lossy targets of non-copied matrices change anything.
constexpr uint32_t kSampledRowsPerMatrix = 4;

struct ChangeSums {
    double error2 = 0, weight2 = 0;
};

void sample_change(const MatrixSource& m, DType target, ChangeSums& sums) {
    if (!m.tensor || m.rows == 0 || m.cols == 0 || !is_block_quant(target)) return;  // F32/F16: at most f16 rounding, left out
    std::vector<float> row(m.cols), decoded(kTileCols);          // [cols], [256]
    std::vector<uint8_t> payload(tile_payload_bytes(target, 1, kTileCols));
    for (uint32_t k = 0; k < kSampledRowsPerMatrix && k < m.rows; ++k) {
        const uint32_t r = uint32_t(uint64_t{m.rows} * k / kSampledRowsPerMatrix);  // spread over the matrix
        m.read_rows_f32(r, 1, row.data());
        for (uint32_t c0 = 0; c0 < m.cols; c0 += kTileCols) {
            const uint32_t n = std::min<uint32_t>(kTileCols, m.cols - c0);
            encode_tile(target, row.data() + c0, n, 1, n, payload.data());
            decode_tile_row(target, payload.data(), 1, n, 0, decoded.data());
            for (uint32_t c = 0; c < n; ++c) {
                const double w = row[c0 + c], e = double(decoded[c]) - w;
                if (!std::isfinite(w) || !std::isfinite(e)) continue;
                sums.error2 += e * e;
                sums.weight2 += w * w;
            }
        }
    }
}

void sample_segment_change(const SegmentPlan& seg, ChangeSums& sums) {
    const auto& parts = seg.shape.parts;
    auto exact = [&](size_t i) { return !seg.exact_parts.empty() && seg.exact_parts[i % seg.exact_parts.size()]; };
    if (seg.role == SegmentRole::ExpertBank) {
        // Experts share their types: the first one stands for the bank.
        if (seg.experts.empty()) return;
        for (size_t k = 0; k < seg.experts.front().size() && k < parts.size(); ++k)
            if (!exact(k)) sample_change(seg.experts.front()[k], parts[k].dtype, sums);
        return;
    }
    for (size_t i = 0; i < seg.parts.size() && i < parts.size(); ++i)
        if (!exact(i)) sample_change(seg.parts[i], parts[i].dtype, sums);
}

} // namespace

Result<ConversionPlan> plan_conversion(const SourceModel& source, const ConvertOptions& options) {
    try {
        if (Status s = validate_source(source, options); !s) return s.take_error();
        auto plan = plan_file(source, options);
        if (!plan) return make_error(plan.kind(), source.source_label + ": " + plan.error());
        ConversionPlan out;
        out.file_bytes = plan->header.file_bytes;
        const bool tied = (plan->header.feature_flags & kFeatureTiedEmbeddings) != 0;
        uint64_t segment_bytes = 0;
        std::set<std::string> consumed, exact, requantised;
        for (const RegionPlan& region : plan->regions)
            for (const SegmentPlan& seg : region.segments) {
                add_segment(out, seg, source.config, tied);
                segment_bytes += seg.bytes;
                consumed.insert(seg.tensor_names.begin(), seg.tensor_names.end());
                for (size_t i = 0; i < seg.tensor_names.size(); ++i) {
                    // As the converter counts them: per-expert bank sources cycle through the parts.
                    if (!seg.exact_parts.empty() && seg.exact_parts[i % seg.exact_parts.size()]) exact.insert(seg.tensor_names[i]);
                    else note_requantised(source, seg, i, &requantised);
                }
            }
        ChangeSums change;
        for (const RegionPlan& region : plan->regions)
            for (const SegmentPlan& seg : region.segments)
                if (seg.shape.storage != segment_shapes::Storage::Raw) sample_segment_change(seg, change);
        out.sampled_weight_change = change.weight2 > 0 ? std::sqrt(change.error2 / change.weight2) : 0.0;
        out.retiled_exact_tensors = exact.size();
        out.requantised_tensors.assign(requantised.begin(), requantised.end());
        out.other_bytes += out.file_bytes - segment_bytes;  // headers, directories, metadata, padding
        for (const std::string& name : consumed)
            if (const TensorView* t = source.find(name)) out.parameters_total += elements_of(*t);
        const ModelConfig& c = source.config;
        const uint64_t idle_experts = c.n_experts > c.top_k ? c.n_experts - c.top_k : 0;
        const uint64_t idle = uint64_t{c.n_layers} * idle_experts * 3 * uint64_t{c.d_model} * c.expert_d_ff;
        out.parameters_active = out.parameters_total > idle ? out.parameters_total - idle : out.parameters_total;
        return out;
    } catch (const std::bad_alloc&) {
        return make_error(ErrorKind::OutOfMemory, source.source_label + ": out of memory while planning the conversion");
    }
}

} // namespace cflow
