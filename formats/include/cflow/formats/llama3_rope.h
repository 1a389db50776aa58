#pragma once
// Llama 3.1's rope scaling (transformers' _compute_llama3_parameters; llama.cpp stores the result
// as rope_freqs.weight): one divisor per rotary frequency, inv_freq_scaled = inv_freq / divisor.
#include <cstdint>
#include <vector>

namespace cflow {

struct Llama3RopeScaling {
    float factor = 32.0f;           // the divisor of the low frequencies (Llama 3.2: 32, 3.1: 8)
    float low_freq_factor = 1.0f;   // wavelengths above original_context / low are divided by factor
    float high_freq_factor = 4.0f;  // wavelengths below original_context / high are kept
    uint32_t original_context = 8192;
};

// [rotary_dims / 2] divisors for RoPE base `theta`; between the two wavelengths the divisor
// blends 1 and factor smoothly. The caller checks factor >= 1, 0 < low < high, context > 0.
std::vector<float> llama3_rope_divisors(const Llama3RopeScaling& scaling, float theta, uint32_t rotary_dims);

} // namespace cflow
