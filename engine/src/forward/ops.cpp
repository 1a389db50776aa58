#include "forward/ops.h"

#include <algorithm>
#include <cmath>

namespace cflow::ops {

void rmsnorm(const float* x, const float* weight, float* out, size_t n, float eps) {
    float ss = 0.0f;
    for (size_t i = 0; i < n; ++i) ss += x[i] * x[i];
    const float inv = 1.0f / std::sqrt(ss / float(n) + eps);
    for (size_t i = 0; i < n; ++i) out[i] = x[i] * inv * (weight ? weight[i] : 1.0f);
}

void add(float* y, const float* x, size_t n) {
    for (size_t i = 0; i < n; ++i) y[i] += x[i];
}

void softmax(float* x, size_t n) {
    if (n == 0) return;
    const float m = *std::max_element(x, x + n);
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) {
        x[i] = std::exp(x[i] - m);
        sum += x[i];
    }
    const float inv = 1.0f / sum;
    for (size_t i = 0; i < n; ++i) x[i] *= inv;
}

void softmax_with_sink(float* x, size_t n, float sink) {
    const float m = n == 0 ? sink : std::max(sink, *std::max_element(x, x + n));
    float sum = std::exp(sink - m);
    for (size_t i = 0; i < n; ++i) {
        x[i] = std::exp(x[i] - m);
        sum += x[i];
    }
    const float inv = 1.0f / sum;
    for (size_t i = 0; i < n; ++i) x[i] *= inv;
}

void glu(const ModelParams& p, float* gate, const float* up, size_t n) {
    const auto activation = static_cast<FfnActivation>(p.ffn_activation);
    if (activation == FfnActivation::ClampedSwiGLU) {
        const float alpha = p.ffn_alpha, limit = p.ffn_limit;
        for (size_t i = 0; i < n; ++i) {
            const float g = std::min(gate[i], limit);
            const float u = std::clamp(up[i], -limit, limit);
            gate[i] = g / (1.0f + std::exp(-alpha * g)) * (u + 1.0f);
        }
        return;
    }
    if (activation == FfnActivation::GeGLUTanh) {
        constexpr float kSqrt2OverPi = 0.7978845608028654f;
        for (size_t i = 0; i < n; ++i) {
            const float g = gate[i];
            gate[i] = 0.5f * g * (1.0f + std::tanh(kSqrt2OverPi * (g + 0.044715f * g * g * g))) * up[i];
        }
        return;
    }
    for (size_t i = 0; i < n; ++i) {
        const float g = gate[i];
        gate[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
}

uint32_t rotary_dims(uint32_t head_dim, float fraction) { return rotary_dim_count(head_dim, fraction); }

void rope_tables(uint32_t pos, uint32_t n_rot, float theta, std::span<const float> divisors, float scale, float* cos_out,
                 float* sin_out) {
    for (uint32_t i = 0; i < n_rot / 2; ++i) {
        float freq = 1.0f / std::pow(theta, float(2 * i) / float(n_rot));
        if (i < divisors.size()) freq /= divisors[i];
        const float angle = float(pos) * freq;
        cos_out[i] = std::cos(angle) * scale;
        sin_out[i] = std::sin(angle) * scale;
    }
}

void rope_apply(float* v, uint32_t n_rot, const float* cos_t, const float* sin_t) {
    const uint32_t half = n_rot / 2;
    for (uint32_t i = 0; i < half; ++i) {
        const float a = v[i], b = v[i + half];
        v[i] = a * cos_t[i] - b * sin_t[i];
        v[i + half] = a * sin_t[i] + b * cos_t[i];
    }
}

} // namespace cflow::ops
