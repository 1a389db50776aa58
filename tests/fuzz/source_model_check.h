#pragma once
// What every source-format target asks of a reader's answer: a model that opens can be planned
// for conversion (validation and layout run on it), and a refusal says what and where.
#include <cstdlib>

#include "cflow/formats/conversion_plan.h"
#include "cflow/formats/source_model.h"

namespace cflow::fuzz {

inline void check_source_model(const Result<SourceModel>& model, DType quant) {
    if (model) {
        ConvertOptions options;
        options.weight_quant = quant;
        (void)plan_conversion(*model, options);
    } else if (model.error().empty()) {
        std::abort();
    }
}

} // namespace cflow::fuzz
