#include "cflow/formats/default_quantisation.h"

#include <algorithm>
#include <cstdio>

#include "cflow/formats/conversion_plan.h"

namespace cflow {
namespace {

std::string dq_size_text(uint64_t bytes) {
    char buf[32];
    if (bytes >= (uint64_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(uint64_t{1} << 30));
    else if (bytes >= (uint64_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(uint64_t{1} << 20));
    else std::snprintf(buf, sizeof buf, "%.0f KiB", double(bytes) / 1024.0);
    return buf;
}

std::string dq_percent(double share) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * share);
    return buf;
}

bool dq_is_weight_matrix(const TensorView& t) {
    const std::string_view name = t.name;
    if (t.shape.size() < 2 || !name.ends_with(".weight")) return false;
    return name.find("ffn_gate_inp") == std::string_view::npos;  // routers stay F32 whatever the options
}

// Position on the ladder: ties in size go to the later (more precise) type, e.g. a K-quant the
// matrices' widths turn into q8_0 anyway is not named as if it were smaller.
size_t dq_rung(DType t) {
    const auto& ladder = default_quantisation_ladder();
    return size_t(std::find(ladder.begin(), ladder.end(), t) - ladder.begin());
}

// What the next smaller candidate would save and cost; "" when the choice is the smallest.
std::string dq_smaller_cost(const QuantCandidate& chosen, const std::vector<QuantCandidate>& candidates) {
    const QuantCandidate* smaller = nullptr;
    for (const QuantCandidate& c : candidates)
        if (c.file_bytes < chosen.file_bytes && (!smaller || c.file_bytes > smaller->file_bytes ||
                                                 (c.file_bytes == smaller->file_bytes && dq_rung(c.type) > dq_rung(smaller->type))))
            smaller = &c;
    if (!smaller) return {};
    const double saved = 1.0 - double(smaller->file_bytes) / double(chosen.file_bytes);
    return " " + std::string(dtype_name(smaller->type)) + " would make it " + dq_size_text(smaller->file_bytes) + " (" +
           dq_percent(saved) + " smaller) but moves the weights by " + dq_percent(smaller->weight_change) +
           " RMS, and the validation may then warn.";
}

} // namespace

SourceMatrixTypes count_source_matrix_types(const SourceModel& source) {
    SourceMatrixTypes n;
    for (const auto& [name, t] : source.tensors) {
        if (!dq_is_weight_matrix(t)) continue;
        switch (t.dtype) {
            case DType::F16: ++n.f16; break;
            case DType::BF16: ++n.bf16; break;
            case DType::F32: ++n.f32; break;
            default: ++n.quantised; break;
        }
    }
    return n;
}

const std::vector<DType>& default_quantisation_ladder() {
    static const std::vector<DType> ladder = {DType::Q4_0, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_0, DType::F16};
    return ladder;
}

DefaultQuantisation choose_default_quantisation(const SourceMatrixTypes& types, const std::vector<QuantCandidate>& candidates) {
    DefaultQuantisation d;
    auto find = [&](DType t) -> const QuantCandidate* {
        for (const QuantCandidate& c : candidates)
            if (c.type == t) return &c;
        return nullptr;
    };
    if (types.quantised > 0) {
        // The converter keeps every quantised type a tile holds (and the F16/F32 matrices the
        // recipe left); the class type applies only to a type it cannot keep: q8_0 loses nothing.
        d.class_type = DType::Q8_0;
        d.keeps_source_types = true;
        d.reason = "Default: the file's own quantised types, copied bit for bit (nothing re-quantised, so the "
                   "converted model computes what the file does).";
        if (const QuantCandidate* q4 = find(DType::Q4_0); q4 && q4->weight_change > 0)
            d.reason += " Re-quantising every matrix to q4_0 moves the weights by " + dq_percent(q4->weight_change) + " RMS.";
        return d;
    }
    if (types.f16 > 0 && types.bf16 == 0) {
        d.class_type = DType::F16;
        d.reason = "Default f16: the file's own type, which the engine runs as it is (the weights do not change).";
        if (const QuantCandidate* f16 = find(DType::F16)) d.reason += dq_smaller_cost(*f16, candidates);
        return d;
    }
    // F32 (the engine runs it, at twice f16's bytes per token) or BF16 (no tiles): the smallest
    // type within the budget.
    const QuantCandidate* best = nullptr;
    for (const QuantCandidate& c : candidates) {
        if (c.weight_change > kDefaultMaxWeightChange) continue;
        if (!best || c.file_bytes < best->file_bytes || (c.file_bytes == best->file_bytes && dq_rung(c.type) > dq_rung(best->type)))
            best = &c;
    }
    const std::string source_type = types.bf16 > 0 ? "bf16, which the engine has no tiles for" : "f32";
    if (!best) {
        d.class_type = DType::F32;
        d.reason = "Default f32: no smaller type keeps this file's weights within " + dq_percent(kDefaultMaxWeightChange) +
                   " RMS of the " + source_type + " source.";
        return d;
    }
    d.class_type = best->type;
    d.reason = "Default " + std::string(dtype_name(best->type)) + ": the smallest type that moves this file's " + source_type +
               " weights by at most " + dq_percent(kDefaultMaxWeightChange) + " RMS (" + dq_percent(best->weight_change) +
               "), which keeps the validation's agreement with the source." + dq_smaller_cost(*best, candidates);
    return d;
}

Result<DefaultQuantisation> default_quantisation(const SourceModel& source, const ConvertOptions& base) {
    std::vector<QuantCandidate> candidates;
    for (DType t : default_quantisation_ladder()) {
        ConvertOptions o = base;
        o.keep_source_types = false;  // every matrix at t: what the type itself costs
        o.weight_quant = t;
        for (TensorClass c : kTensorClasses) set_quant_for(o, c, t);
        auto plan = plan_conversion(source, o);
        if (!plan) return plan.take_error();
        candidates.push_back({t, plan->file_bytes, plan->sampled_weight_change});
    }
    return choose_default_quantisation(count_source_matrix_types(source), candidates);
}

} // namespace cflow
