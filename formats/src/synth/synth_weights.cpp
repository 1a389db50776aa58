// Seeded ggml blocks and f32 vectors (synth_weights.h).
#include "cflow/formats/synth/synth_weights.h"

#include <cmath>
#include <cstring>

#include "cflow/formats/kquant_quantize.h"
#include "cflow/formats/tile_codec.h"

namespace cflow {
namespace {

// Level in [0, n) from a 16-bit field by multiply-shift: the field's high bits pick the level.
inline uint32_t level(uint64_t field16, uint32_t n) { return static_cast<uint32_t>((field16 * n) >> 16); }

// One draw gives a 5-bit position (which element carries the block's extreme), a 9-bit scale
// factor in [0.75, 1.25) and, for Q8_0, the extreme's sign.
struct BlockHead {
    uint32_t extreme_at;
    uint16_t scale;  // f16 bits, never 0 (a zero scale would not survive requantisation)
    bool negative;
};

BlockHead block_head(SynthRng& rng, float base) {
    const uint64_t r = rng.next();
    BlockHead h{};
    h.extreme_at = static_cast<uint32_t>(r >> 59);
    h.negative = ((r >> 58) & 1) != 0;
    const auto factor = static_cast<float>(768 + ((r >> 40) & 511)) * 0.0009765625f;  // exact: / 1024
    h.scale = f32_to_f16(base * factor);
    if ((h.scale & 0x7fff) == 0) h.scale = 1;  // underflow: the smallest positive f16 instead
    return h;
}

// 32 levels in [0, n), four per draw.
void draw_levels(SynthRng& rng, uint32_t n, uint32_t out[32]) {
    for (int i = 0; i < 32; i += 4) {
        const uint64_t r = rng.next();
        for (int k = 0; k < 4; ++k) out[i + k] = level((r >> (48 - 16 * k)) & 0xffff, n);
    }
}

} // namespace

uint64_t chunk_seed(uint64_t seed, std::string_view tensor_name, uint64_t chunk) {
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64 of the name
    for (char c : tensor_name) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
    // splitmix64 finaliser: nearby seeds and chunk indices give unrelated streams.
    uint64_t z = (seed ^ h) + (chunk + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void fill_q4_0(SynthRng& rng, double std_dev, uint64_t n_blocks, uint8_t* out) {
    const auto base = static_cast<float>(std_dev / kQ4_0LevelStd);
    uint32_t q[32];
    for (uint64_t b = 0; b < n_blocks; ++b, out += 18) {
        const BlockHead h = block_head(rng, base);
        draw_levels(rng, 15, q);
        for (uint32_t& v : q) v += 1;  // nibbles 1..15: values -7d..7d
        q[h.extreme_at] = 0;           // value -8d: the block's unique largest magnitude
        std::memcpy(out, &h.scale, 2);
        for (int j = 0; j < 16; ++j) out[2 + j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));  // ggml order
    }
}

void fill_q8_0(SynthRng& rng, double std_dev, uint64_t n_blocks, uint8_t* out) {
    const auto base = static_cast<float>(std_dev / kQ8_0LevelStd);
    uint32_t q[32];
    for (uint64_t b = 0; b < n_blocks; ++b, out += 34) {
        const BlockHead h = block_head(rng, base);
        draw_levels(rng, 255, q);
        std::memcpy(out, &h.scale, 2);
        for (int j = 0; j < 32; ++j) {
            int v = static_cast<int>(q[j]) - 127;  // -127..127
            if (static_cast<uint32_t>(j) == h.extreme_at) v = h.negative ? -127 : 127;
            out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(v));
        }
    }
}

void fill_ggml32(SynthRng& rng, DType dtype, double std_dev, uint64_t n_blocks, uint8_t* out) {
    // The root mean square of ggml's kvalues_iq4nl over uniform nibbles.
    constexpr double kIq4nlStd = 67.43886;
    const bool five = dtype == DType::Q5_0 || dtype == DType::Q5_1;
    const uint32_t levels = five ? 32 : 16;
    const double levelStd = dtype == DType::IQ4_NL ? kIq4nlStd : std::sqrt((double(levels) * levels - 1.0) / 12.0);
    const auto base = static_cast<float>(std_dev / levelStd);
    const uint32_t blockBytes = ggml_tile_block_bytes(dtype);
    const bool hasMin = dtype == DType::Q4_1 || dtype == DType::Q5_1;
    const uint32_t quantsAt = dtype == DType::Q4_1 ? 4 : dtype == DType::Q5_0 ? 6 : dtype == DType::Q5_1 ? 8 : 2;
    uint32_t q[32];
    for (uint64_t b = 0; b < n_blocks; ++b, out += blockBytes) {
        const BlockHead h = block_head(rng, base);
        draw_levels(rng, levels, q);
        std::memcpy(out, &h.scale, 2);
        if (hasMin) {  // m = -(levels - 1) / 2 d: values centred on zero
            const uint16_t m = f32_to_f16(-0.5f * float(levels - 1) * f16_to_f32(h.scale));
            std::memcpy(out + 2, &m, 2);
        }
        if (five) {
            uint32_t qh = 0;
            for (uint32_t j = 0; j < 32; ++j) qh |= ((q[j] >> 4) & 1u) << j;
            std::memcpy(out + quantsAt - 4, &qh, 4);
        }
        for (int j = 0; j < 16; ++j) out[quantsAt + j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
    }
}

void fill_kquant(SynthRng& rng, DType dtype, double std_dev, uint64_t n_blocks, uint8_t* out) {
    constexpr int32_t kHalfRange = 1 << 15;
    const uint32_t block_bytes = kquant_block_bytes(dtype);
    float x[256];  // [256] one super-block's weights
    for (uint64_t b = 0; b < n_blocks; ++b, out += block_bytes) {
        const auto factor = static_cast<float>(768 + ((rng.next() >> 40) & 511)) * 0.0009765625f;  // [0.75, 1.25), exact
        // uniform in [-a, a) with a = sqrt(3) * std: the wanted standard deviation
        const auto unit = static_cast<float>(std::sqrt(3.0) * std_dev / kHalfRange) * factor;
        fill_f32(rng, 0, kHalfRange, unit, 256, x);
        if (dtype == DType::Q4_K) quantize_block_q4_k(x, out);
        else if (dtype == DType::Q5_K) quantize_block_q5_k(x, out);
        else quantize_block_q6_k(x, out);
    }
}

void fill_f32(SynthRng& rng, int32_t center, int32_t half_range, float unit, uint64_t n, float* out) {
    const auto span = static_cast<uint32_t>(2 * half_range);
    for (uint64_t i = 0; i < n; ++i) {
        const auto k = static_cast<int32_t>((((rng.next() >> 32) * span) >> 32)) - half_range;
        out[i] = static_cast<float>(center + k) * unit;
    }
}

} // namespace cflow
