// YaRN as transformers' _compute_yarn_parameters (modeling_rope_utils.py) and ggml's
// rope_yarn / ggml_rope_yarn_corr_dims compute it, in double so both round the same way.
#include "yarn_rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace cflow::yarn {
namespace {

// The dimension whose wavelength fits `rotations` turns into the original context.
double correction_dim(double rotations, double dims, double base, double original_context) {
    return dims * std::log(original_context / (rotations * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
}

} // namespace

std::vector<float> freq_divisors(const Params& p) {
    const uint32_t half = p.rotary_dims / 2;
    std::vector<float> out(half, 1.0f);
    if (!(p.factor > 1.0f) || p.original_context == 0) return out;
    const double dims = p.rotary_dims;
    double low = correction_dim(p.beta_fast, dims, p.base, p.original_context);
    double high = correction_dim(p.beta_slow, dims, p.base, p.original_context);
    if (p.truncate) {
        low = std::floor(low);
        high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, dims - 1.0);
    if (low == high) high += 0.001;  // transformers' guard against a zero-width ramp
    for (uint32_t i = 0; i < half; ++i) {
        const double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
        const double extrapolation = 1.0 - ramp;  // share of the unscaled frequency
        const double scale = (1.0 - extrapolation) / p.factor + extrapolation;
        out[i] = static_cast<float>(1.0 / scale);
    }
    return out;
}

float attention_factor(float factor) { return factor <= 1.0f ? 1.0f : 0.1f * std::log(factor) + 1.0f; }

} // namespace cflow::yarn
