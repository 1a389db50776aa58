#pragma once
// What a conversion will produce, computed from the source and the options without writing a
// byte: the exact output size (the converter's own layout), where the bytes go by tensor
// class, what one decode step reads, and the parameter counts. The preflight of the
// conversion wizard and of `cflow convert --preflight` is built on it.
#include <cstdint>
#include <string>
#include <vector>

#include "cflow/base/result.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/source_model.h"

namespace cflow {

struct ConversionPlan {
    uint64_t file_bytes = 0;              // the output file, exactly
    uint64_t embedding_bytes = 0;         // token embedding table
    uint64_t output_bytes = 0;            // LM head; 0 when tied to the embeddings
    uint64_t attention_bytes = 0;         // Q, K, V, O tiles of every layer
    uint64_t dense_ffn_bytes = 0;         // gate/up/down tiles of every layer
    uint64_t expert_bank_bytes = 0;       // every routed expert of every layer
    uint64_t shared_expert_bytes = 0;     // shared-expert tiles of every layer
    uint64_t other_bytes = 0;             // norms, biases, routers, expert tables, headers, metadata
    // One decode step's weight reads: every layer's attention, dense FFN, shared expert, norms
    // and router, top_k of its E experts, the LM head (the embedding table when tied) and one
    // embedding row.
    uint64_t decode_bytes_per_token = 0;
    uint64_t parameters_total = 0;        // elements of every source tensor the output holds
    uint64_t parameters_active = 0;       // per token: total minus the (E - top_k) experts not routed to
    uint64_t retiled_exact_tensors = 0;   // block-quantised matrices whose blocks are copied unchanged
    // "NAME: Q5_0 -> q8_0": block-quantised source matrices whose values the conversion changes
    // (the same list ConvertReport::requantised_tensors will hold).
    std::vector<std::string> requantised_tensors;
    // sqrt(sum (new - old)^2 / sum old^2) over a few rows of every matrix the conversion changes
    // (re-quantised to Q8_0/Q4_0), against the source's exact values: 0 when nothing changes.
    // What re-quantising costs, shown before the user picks it (preflight, wizard).
    double sampled_weight_change = 0;
};

// Validates as convert_to_cflow does (same messages), then lays the file out.
Result<ConversionPlan> plan_conversion(const SourceModel& source, const ConvertOptions& options);

} // namespace cflow
