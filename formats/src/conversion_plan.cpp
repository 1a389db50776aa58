// plan_conversion: the converter's layout, summed by tensor class, without writing the file;
// and the per-class quantisation choices of ConvertOptions.
#include "cflow/formats/conversion_plan.h"

#include <new>
#include <set>

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
        std::set<std::string> consumed;
        for (const RegionPlan& region : plan->regions)
            for (const SegmentPlan& seg : region.segments) {
                add_segment(out, seg, source.config, tied);
                segment_bytes += seg.bytes;
                consumed.insert(seg.tensor_names.begin(), seg.tensor_names.end());
            }
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
