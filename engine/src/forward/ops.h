#pragma once
// Small vector operations of the forward pass (not bandwidth-critical: O(d) per token).
#include <cstddef>
#include <cstdint>
#include <span>

#include "cflow/formats/cflow_layout.h"

namespace cflow::ops {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * (weight ? weight[i] : 1); out may alias x. x, out: [n]
void rmsnorm(const float* x, const float* weight, float* out, size_t n, float eps);
void add(float* y, const float* x, size_t n);          // y += x
void softmax(float* x, size_t n);                      // in place, max-subtracted
// softmax over x [n] and one more logit, `sink`, whose probability is dropped: the x sum to
// less than 1 by the sink's share (gpt-oss's attention sinks).
void softmax_with_sink(float* x, size_t n, float sink);
// gate[i] = act(gate[i]) * up[i] with the model's FFN activation (p.ffn_activation, and
// ffn_alpha / ffn_limit for the clamped SwiGLU); gate, up: [n]
void glu(const ModelParams& p, float* gate, const float* up, size_t n);
// Rotated dimensions of a head: dk * fraction rounded down to an even number.
uint32_t rotary_dims(uint32_t head_dim, float fraction);
// cos/sin of pos * theta^(-2i/n_rot) / divisors[i] for i < n_rot/2 (divisors: [n_rot/2], the
// model's rope frequency factors, or empty for plain RoPE).  cos_out, sin_out: [n_rot/2]
// scale multiplies every cos and sin (LongRoPE's attention factor; 1 = plain rotation).
void rope_tables(uint32_t pos, uint32_t n_rot, float theta, std::span<const float> divisors, float scale, float* cos_out,
                 float* sin_out);
// Split-half rotation: pairs (i, i + n_rot/2) for i < n_rot/2. v: [head_dim]
void rope_apply(float* v, uint32_t n_rot, const float* cos_t, const float* sin_t);

} // namespace cflow::ops
