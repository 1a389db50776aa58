#pragma once
// A naive double-precision forward pass of a dense llama-style SourceModel (Sequential, SwiGLU,
// RMSNorm, RoPE in the source's own convention, GQA, optional Q/K/V biases and sliding window),
// written from the semantics spec and evaluated directly on the source tensors, each dequantised
// by tensor_to_f32 (ggml blocks through dequantize_ggml_row): the engine's reference in
// tests/engine/forward (forward_reference_test, ggml_tile_model_test).
#include <cstdint>
#include <span>
#include <vector>

#include "cflow/formats/source_model.h"

namespace cflow::test {

// Logits [vocab] after each token of `tokens`, in order.
std::vector<std::vector<double>> reference_logits(const SourceModel& m, const std::vector<int32_t>& tokens);

// ||got - want|| / ||want|| (||want||^2 floored at 1e-30).
double relative_l2_error(std::span<const float> got, const std::vector<double>& want);

} // namespace cflow::test
