#pragma once
// Seeded random weights written directly as ggml blocks or f32, the same bytes on every platform:
// std::mt19937_64 (its output sequence is fixed by the C++ standard) with uniform integers taken
// from the high bits of each draw by multiply-shift, never std::*_distribution (whose algorithms
// differ between standard libraries), and float values formed by one exact-rounded multiply.
//
// Every block is a fixed point of the converter's dequantise -> requantise (ggml's rounding, see
// tile_codec.h), so any path that re-encodes these weights to the same type reproduces them:
//   Q4_0: one element per block has nibble 0 (value -8d) and the others nibbles 1..15 (|value| <= 7d),
//         so the block's largest magnitude is exactly -8d and requantising gives d and the same nibbles.
//   Q8_0: one element per block is -127 or 127 and the others lie in -127..127, so amax / 127 == d.
#include <cstdint>
#include <random>
#include <string_view>

#include "cflow/formats/dtype.h"

namespace cflow {

class SynthRng {
public:
    explicit SynthRng(uint64_t seed) : engine_(seed) {}
    uint64_t next() { return engine_(); }

private:
    std::mt19937_64 engine_;
};

// The generator seed of one chunk of a tensor: the run's seed mixed with the tensor's name and the
// chunk's index, so the bytes depend on neither the order nor the thread that generates them.
uint64_t chunk_seed(uint64_t seed, std::string_view tensor_name, uint64_t chunk);

// Standard deviation of a block's values in units of its scale d (the uniform levels drawn).
inline constexpr double kQ4_0LevelStd = 4.320493798938574;   // nibbles 1..15 -> -7..7: sqrt((15^2 - 1) / 12)
inline constexpr double kQ8_0LevelStd = 73.61215932167728;   // -127..127: sqrt((255^2 - 1) / 12)

// n_blocks ggml Q4_0 / Q8_0 blocks (18 / 34 bytes each) of values with standard deviation about
// `std_dev`; each block's scale is std_dev / level std times a factor in [0.75, 1.25).
void fill_q4_0(SynthRng& rng, double std_dev, uint64_t n_blocks, uint8_t* out);
void fill_q8_0(SynthRng& rng, double std_dev, uint64_t n_blocks, uint8_t* out);

// n_blocks ggml blocks of a 32-weight type beside Q4_0 / Q8_0 (Q4_1, Q5_0, Q5_1, IQ4_NL; the types
// llama-quantize falls back to), values with standard deviation about `std_dev`: uniform levels
// (Q4_1 / Q5_1 centred by their min m = -(levels - 1) / 2 d; IQ4_NL uniform over its codebook),
// each block's scale varied by a factor in [0.75, 1.25).
void fill_ggml32(SynthRng& rng, DType dtype, double std_dev, uint64_t n_blocks, uint8_t* out);

// n_blocks K-quant super-blocks (dtype Q4_K, Q5_K or Q6_K) of 256 values with standard deviation
// about `std_dev` (uniform integers times one exact step, the block's spread varied by a factor in
// [0.75, 1.25)), quantised by the converter's ggml-exact quantisers, as llama-quantize would.
void fill_kquant(SynthRng& rng, DType dtype, double std_dev, uint64_t n_blocks, uint8_t* out);

// n f32 values (center + k) * unit with k uniform in [-half_range, half_range): integers
// (|center| + half_range < 2^24, exact in float) times one float, so no fused multiply-add can
// change a value between platforms. Norm weights and the MoE router.
void fill_f32(SynthRng& rng, int32_t center, int32_t half_range, float unit, uint64_t n, float* out);

} // namespace cflow
