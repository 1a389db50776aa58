#pragma once
// The default quantisation of a conversion, for the wizard and `cflow convert` alike (issue 37): a choice whose conversion passes the
// wizard's own validation (conversion_validation.h: top-1 agreement >= 90%, mean KL <= 0.10).
// Rule: keep the source's type where the engine runs it (a GGUF's quantised types, F16);
// else (F32, and BF16, which the engine has no tiles for) the smallest type whose sampled weight
// change (ConversionPlan::sampled_weight_change) stays within kDefaultMaxWeightChange.
// The wizard's preflight calls it on its worker and shows `reason`; `cflow convert` without a
// quant option converts a non-GGUF source with it and prints `reason`.
#include <cstdint>
#include <string>
#include <vector>

#include "cflow/base/result.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/source_model.h"

namespace cflow {

// The most a default may move the weights it re-quantises, RMS over sampled rows. Measured on
// the shared tiny models (tests/ui/default_quantisation_test.cpp, convert_wizard_test.cpp):
// q8_0 moves stories260K's F32 weights by 0.6% and llama-2-tiny-random's F16 ones by 0.4% and
// both pass (96% / 98% top-1); q4_0 moves them by 8.8% / 6.9% and both fall to warn (77% / 75%).
// The budget sits well under the smallest change seen to fail, so small models (the most
// sensitive: short dot products average little of the error away) still pass.
inline constexpr double kDefaultMaxWeightChange = 0.02;

// How many weight matrices (2-D or expert-bank tensors named *.weight, routers excepted) the
// source holds of each kind.
struct SourceMatrixTypes {
    size_t quantised = 0;  // Q8_0, Q4_0 and the other ggml block types
    size_t f16 = 0;
    size_t bf16 = 0;
    size_t f32 = 0;
};
SourceMatrixTypes count_source_matrix_types(const SourceModel& source);

// One type every class would get, as the converter's plan measures it.
struct QuantCandidate {
    DType type = DType::Q8_0;
    uint64_t file_bytes = 0;
    double weight_change = 0;  // ConversionPlan::sampled_weight_change
};

struct DefaultQuantisation {
    DType class_type = DType::Q8_0;  // every tensor class's type in the options
    bool keeps_source_types = false; // a quantised GGUF: its own types, copied bit for bit
    // One line for the options page: why this default, and what a smaller type would cost.
    std::string reason;
};

// The candidates the rule walks, smallest first by nominal bits; F16 last (the fallback that
// any source's values fit within the budget).
const std::vector<DType>& default_quantisation_ladder();

// The rule on measured candidates (any order; the ladder's types, each at most once).
DefaultQuantisation choose_default_quantisation(const SourceMatrixTypes& types, const std::vector<QuantCandidate>& candidates);

// Measures every ladder type with plan_conversion (no byte written; a few rows per matrix are
// quantised to sample the change) on top of `base` (container, threads) and chooses.
Result<DefaultQuantisation> default_quantisation(const SourceModel& source, const ConvertOptions& base);

} // namespace cflow
