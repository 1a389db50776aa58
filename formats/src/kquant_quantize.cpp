// K-quant quantisers with ggml's scale search (see kquant_quantize.h). Every f32 expression
// below keeps the operand order of ggml's reference quantisers: the search compares errors,
// so a different rounding anywhere could pick another scale and change the bytes. This file
// is built without FMA contraction (ISO C++ mode, no -mfma), as ggml's reference is.
#include "cflow/formats/kquant_quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cflow/formats/tile_codec.h"

namespace cflow {
namespace {

constexpr float kAllZeroEps = 1e-15f;  // a group whose largest |x| is below this is all zeros

// Round to nearest (ties to even) for |v| < 2^22, by adding 1.5 * 2^23 and reading the mantissa.
int nearest_int(float v) {
    const float shifted = v + 12582912.f;
    int32_t bits;
    std::memcpy(&bits, &shifted, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

void put_f16(uint8_t* at, float v) {
    const uint16_t h = f32_to_f16(v);
    std::memcpy(at, &h, sizeof h);
}

float get_f16(const uint8_t* at) {
    uint16_t h;
    std::memcpy(&h, at, sizeof h);
    return f16_to_f32(h);
}

// An affine grid for one group: x ~ scale * L - min with L in [0, nmax], min >= 0. Starts
// from the group's range, then tries nstep + 1 stretched grids and keeps the one with the
// least weighted squared error, refitting scale and min by weighted least squares each time.
// Returns scale; *minOut = min. L: [n] levels; scratch: [n].
float fit_affine_grid(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* minOut, uint8_t* scratch,
                      float rmin, float rdelta, int nstep) {
    float lo = x[0], hi = x[0];
    float sumW = weights[0];
    float sumX = sumW * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
        const float w = weights[i];
        sumW += w;
        sumX += w * x[i];
    }
    if (lo > 0) lo = 0;
    if (hi == lo) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        *minOut = -lo;
        return 0.f;
    }
    float iscale = nmax / (hi - lo);
    float scale = 1 / iscale;
    float bestError = 0;
    for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * (x[i] - lo));
        L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
        float diff = scale * L[i] + lo - x[i];
        diff = diff * diff;
        bestError += weights[i] * diff;
    }
    for (int step = 0; step <= nstep; ++step) {
        iscale = (rmin + rdelta * step + nmax) / (hi - lo);
        float sumL = 0, sumL2 = 0, sumXL = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * (x[i] - lo));
            l = std::max(0, std::min(nmax, l));
            scratch[i] = static_cast<uint8_t>(l);
            const float w = weights[i];
            sumL += w * l;
            sumL2 += w * l * l;
            sumXL += w * l * x[i];
        }
        const float det = sumW * sumL2 - sumL * sumL;
        if (det > 0) {
            float thisScale = (sumW * sumXL - sumX * sumL) / det;
            float thisMin = (sumL2 * sumX - sumL * sumXL) / det;
            if (thisMin > 0) {
                thisMin = 0;
                thisScale = sumXL / sumL2;
            }
            float error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = thisScale * scratch[i] + thisMin - x[i];
                diff = diff * diff;
                error += weights[i] * diff;
            }
            if (error < bestError) {
                std::copy_n(scratch, n, L);
                bestError = error;
                scale = thisScale;
                lo = thisMin;
            }
        }
    }
    *minOut = -lo;
    return scale;
}

// A symmetric grid for one group: x ~ scale * (L - nmax), L in [0, 2 nmax), errors weighted by
// x^2; 19 grid stretches around the one that maps the largest |x| to -nmax. Returns scale.
// L: [n].
float fit_symmetric_grid(int n, int nmax, const float* x, int8_t* L) {
    float signedMax = 0, absMax = 0;
    for (int i = 0; i < n; ++i) {
        const float a = std::fabs(x[i]);
        if (a > absMax) {
            absMax = a;
            signedMax = x[i];
        }
    }
    if (absMax < kAllZeroEps) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    float iscale = -nmax / signedMax;
    float sumLX = 0, sumL2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = std::max(-nmax, std::min(nmax - 1, l));
        L[i] = static_cast<int8_t>(l + nmax);
        const float w = x[i] * x[i];
        sumLX += w * x[i] * l;
        sumL2 += w * l * l;
    }
    float scale = sumL2 ? sumLX / sumL2 : 0.0f;
    float best = scale * sumLX;
    for (int stretch = -9; stretch <= 9; ++stretch) {
        if (stretch == 0) continue;
        iscale = -(nmax + 0.1f * stretch) / signedMax;
        sumLX = sumL2 = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * x[i]);
            l = std::max(-nmax, std::min(nmax - 1, l));
            const float w = x[i] * x[i];
            sumLX += w * x[i] * l;
            sumL2 += w * l * l;
        }
        if (sumL2 > 0 && sumLX * sumLX > best * sumL2) {
            for (int i = 0; i < n; ++i) {
                const int l = nearest_int(iscale * x[i]);
                L[i] = static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, l)));
            }
            scale = sumLX / sumL2;
            best = scale * sumLX;
        }
    }
    return scale;
}

// The 6-bit scale and min of sub-block j from the 12 packed bytes (ggml's get_scale_min_k4).
void scale_min_k4(int j, const uint8_t* packed, uint8_t* sc, uint8_t* mn) {
    if (j < 4) {
        *sc = packed[j] & 63;
        *mn = packed[j + 4] & 63;
    } else {
        *sc = static_cast<uint8_t>((packed[j + 4] & 0xF) | ((packed[j - 4] >> 6) << 4));
        *mn = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
    }
}

// Q4_K / Q5_K share everything but the level count and the search's stretch range: 8 groups
// of 32 on affine grids, their scales and mins quantised to 6 bits against f16 super-scales.
// block: d f16 @0, dmin f16 @2, scales[12] @4. L: [256] levels out.
void affine_super_block(const float* x, int nmax, float rmin, int nstep, uint8_t* block, uint8_t* L) {
    constexpr int kGroups = kKQuantBlockWeights / 32;
    float scales[kGroups], mins[kGroups];
    float weights[32];
    uint8_t scratch[32];
    float maxScale = 0, maxMin = 0;  // scales are positive: the min is subtracted
    for (int j = 0; j < kGroups; ++j) {
        float sumX2 = 0;
        for (int l = 0; l < 32; ++l) sumX2 += x[32 * j + l] * x[32 * j + l];
        const float rms = std::sqrt(sumX2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = rms + std::fabs(x[32 * j + l]);
        scales[j] = fit_affine_grid(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], scratch, rmin, 0.1f, nstep);
        if (scales[j] > maxScale) maxScale = scales[j];
        if (mins[j] > maxMin) maxMin = mins[j];
    }
    const float invScale = maxScale > 0 ? 63.f / maxScale : 0.f;
    const float invMin = maxMin > 0 ? 63.f / maxMin : 0.f;
    uint8_t* packed = block + 4;  // [12]
    for (int j = 0; j < kGroups; ++j) {
        // As ggml: the rounded value is narrowed to 8 bits before the clamp to 63.
        const uint8_t ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(invScale * scales[j])));
        const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(invMin * mins[j])));
        if (j < 4) {
            packed[j] = ls;
            packed[j + 4] = lm;
        } else {
            packed[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
            packed[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
            packed[j] |= static_cast<uint8_t>((lm >> 4) << 6);
        }
    }
    put_f16(block, maxScale / 63.f);
    put_f16(block + 2, maxMin / 63.f);
    // Levels again against the rounded scales; a zero scale keeps the search's levels.
    for (int j = 0; j < kGroups; ++j) {
        uint8_t sc, mn;
        scale_min_k4(j, packed, &sc, &mn);
        const float d = get_f16(block) * sc;
        if (!d) continue;
        const float dm = get_f16(block + 2) * mn;
        for (int i = 0; i < 32; ++i) {
            const int l = nearest_int((x[32 * j + i] + dm) / d);
            L[32 * j + i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
        }
    }
}

// Non-finite weights (a damaged source) become 0 rather than poisoning the block's search.
const float* finite_copy(const float* x, float* copy) {
    bool finite = true;
    for (uint32_t i = 0; i < kKQuantBlockWeights; ++i) finite = finite && std::isfinite(x[i]);
    if (finite) return x;
    for (uint32_t i = 0; i < kKQuantBlockWeights; ++i) copy[i] = std::isfinite(x[i]) ? x[i] : 0.0f;
    return copy;
}

} // namespace

void quantize_block_q4_k(const float* x, uint8_t* block) {
    float copy[kKQuantBlockWeights];
    x = finite_copy(x, copy);
    uint8_t L[kKQuantBlockWeights];
    affine_super_block(x, 15, -1.f, 20, block, L);
    uint8_t* qs = block + 16;  // [128]: byte l of each 64-weight run holds weight l (low) and l + 32 (high)
    for (int j = 0; j < 256; j += 64) {
        for (int l = 0; l < 32; ++l) qs[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
        qs += 32;
    }
}

void quantize_block_q5_k(const float* x, uint8_t* block) {
    float copy[kKQuantBlockWeights];
    x = finite_copy(x, copy);
    uint8_t L[kKQuantBlockWeights];
    affine_super_block(x, 31, -0.5f, 15, block, L);
    uint8_t* qh = block + 16;  // [32]: bit 2k / 2k + 1 = the fifth bit of weight l / l + 32 of run k
    uint8_t* qs = block + 48;  // [128]: low nibbles as Q4_K
    std::memset(qh, 0, 32);
    uint8_t lowBit = 1, highBit = 2;
    for (int run = 0; run < 256; run += 64) {
        for (int j = 0; j < 32; ++j) {
            int l1 = L[run + j], l2 = L[run + j + 32];
            if (l1 > 15) {
                l1 -= 16;
                qh[j] |= lowBit;
            }
            if (l2 > 15) {
                l2 -= 16;
                qh[j] |= highBit;
            }
            qs[j] = static_cast<uint8_t>(l1 | (l2 << 4));
        }
        lowBit = static_cast<uint8_t>(lowBit << 2);
        highBit = static_cast<uint8_t>(highBit << 2);
        qs += 32;
    }
}

void quantize_block_q6_k(const float* x, uint8_t* block) {
    float copy[kKQuantBlockWeights];
    x = finite_copy(x, copy);
    constexpr int kGroups = kKQuantBlockWeights / 16;
    int8_t L[kKQuantBlockWeights];  // levels + 32, in [0, 64)
    float scales[kGroups];
    float maxScale = 0, maxAbsScale = 0;
    for (int g = 0; g < kGroups; ++g) {
        scales[g] = fit_symmetric_grid(16, 32, x + 16 * g, L + 16 * g);
        const float a = std::fabs(scales[g]);
        if (a > maxAbsScale) {
            maxAbsScale = a;
            maxScale = scales[g];
        }
    }
    uint8_t* ql = block;                                   // [128] low 4 bits
    uint8_t* qh = block + 128;                             // [64] high 2 bits
    int8_t* groupScales = reinterpret_cast<int8_t*>(block + 192);  // [16]
    if (maxAbsScale < kAllZeroEps) {
        std::memset(block, 0, 210);
        put_f16(block + 208, 0.f);
        return;
    }
    const float iscale = -128.f / maxScale;
    put_f16(block + 208, 1 / iscale);
    for (int g = 0; g < kGroups; ++g) groupScales[g] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[g])));
    for (int g = 0; g < kGroups; ++g) {
        const float d = get_f16(block + 208) * groupScales[g];
        if (!d) continue;  // keeps the search's levels, as ggml
        for (int i = 0; i < 16; ++i) {
            int l = nearest_int(x[16 * g + i] / d);
            l = std::max(-32, std::min(31, l));
            L[16 * g + i] = static_cast<int8_t>(l + 32);
        }
    }
    for (int j = 0; j < 256; j += 128) {
        for (int l = 0; l < 32; ++l) {
            const uint8_t q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF, q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
            ql[l] = static_cast<uint8_t>(q1 | (q3 << 4));
            ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
            qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                         ((L[j + l + 96] >> 4) << 6));
        }
        ql += 64;
        qh += 32;
    }
}

} // namespace cflow
