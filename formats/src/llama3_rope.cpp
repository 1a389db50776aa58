// Llama 3.1 rope-scaling divisors (llama3_rope.h).
#include "cflow/formats/llama3_rope.h"

#include <cmath>
#include <numbers>

namespace cflow {

std::vector<float> llama3_rope_divisors(const Llama3RopeScaling& s, float theta, uint32_t rotary_dims) {
    const double original = s.original_context, low = s.low_freq_factor, high = s.high_freq_factor;
    const double low_wavelen = original / low, high_wavelen = original / high;
    std::vector<float> divisors(rotary_dims / 2);
    for (uint32_t i = 0; i < rotary_dims / 2; ++i) {
        const double inv_freq = 1.0 / std::pow(double(theta), double(2 * i) / double(rotary_dims));
        const double wavelen = 2.0 * std::numbers::pi / inv_freq;
        double divisor = 1.0;
        if (wavelen > low_wavelen) {
            divisor = s.factor;
        } else if (wavelen >= high_wavelen) {
            const double smooth = (original / wavelen - low) / (high - low);
            divisor = 1.0 / ((1.0 - smooth) / s.factor + smooth);
        }
        divisors[i] = float(divisor);
    }
    return divisors;
}

} // namespace cflow
