#pragma once
// YaRN rope scaling (Peng et al. 2023) as per-frequency divisors and an attention factor, the
// form ModelConfig::rope_freq_factors / rope_attn_factor carry to the engine.
#include <cstdint>
#include <vector>

namespace cflow::yarn {

struct Params {
    uint32_t rotary_dims = 0;       // rotated dims of a head (even)
    float base = 10000.0f;          // rope theta
    float factor = 1.0f;            // context extension factor (> 1 to scale)
    uint32_t original_context = 0;  // the context the model was pre-trained at
    float beta_fast = 32.0f;
    float beta_slow = 1.0f;
    // Correction range rounded outward to whole dims (transformers' truncate = true, and ggml
    // always); false keeps the fractional bounds (transformers with truncate = false).
    bool truncate = true;
};

// [rotary_dims / 2] divisors: frequency i = base^(-2i/dims) / divisor_i, where the divisor blends
// interpolation (factor) and extrapolation (1) with a linear ramp over the correction range.
std::vector<float> freq_divisors(const Params& p);

// The factor cos and sin are multiplied by: 0.1 ln(factor) + 1 (1 when factor <= 1).
float attention_factor(float factor);

} // namespace cflow::yarn
