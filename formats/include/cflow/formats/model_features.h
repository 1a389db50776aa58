#pragma once
// What a converted model's architecture does beyond the plain pre-norm transformer, in words a
// user reads on the model card and in `cflow inspect`: each feature the file declares (header
// flags, extended features, soft-caps, scaling) with what the engine does with it.
#include <string>
#include <vector>

#include "cflow/formats/cflow_reader.h"

namespace cflow {

struct ModelFeature {
    std::string name;    // "sliding window"
    std::string detail;  // "512 positions on 5 of 6 layers; the others attend over the whole context"
};

// In a fixed order (embedding, attention, rope, FFN, output); empty for a plain Llama-style model.
std::vector<ModelFeature> describe_features(const CflowFile& file);

} // namespace cflow
