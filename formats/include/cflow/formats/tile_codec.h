#pragma once
// Scalar reference encoding and decoding of tile payloads. The engine's SIMD kernels
// are tested against the decoders here through the engine's own scalar kernel.
//
// Q4_0 rounding follows ggml exactly (quantize_row_q4_0_ref): per 32-block the element
// of largest magnitude m gives d = m / -8, id = 1/d, q = min(15, (int)(x*id + 8.5)),
// so re-quantizing dequantized GGUF data and re-tiling GGUF blocks agree with llama.cpp.
// Q8_0 as ggml: d = amax / 127, q = round(x / d).
#include <cstdint>
#include <span>

#include "cflow/formats/dtype.h"

namespace cflow {

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);   // round-to-nearest-even, as ggml's GGML_FP32_TO_FP16
float bf16_to_f32(uint16_t h);

// Encodes a rows x cols block of f32 weights (row stride src_stride floats) into a
// payload of tile_payload_bytes(dtype, rows, cols) bytes laid out as cflow_layout.h says.
void encode_tile(DType dtype, const float* src, uint64_t src_stride, uint32_t rows, uint32_t cols, uint8_t* payload);

// Decodes one row of a tile payload into out[0..cols).
void decode_tile_row(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, uint32_t row, float* out);

// ggml block helpers (one 32-weight block), used for bit-exact GGUF re-tiling.
// quantize_block_q4_0 takes the AVX-512 or AVX2 path where the CPU has it (codec_x86.h); the _scalar
// one is the specification both are tested against.
void quantize_block_q4_0(const float* x, uint16_t* scale, uint8_t nibbles[16]);
void quantize_block_q4_0_scalar(const float* x, uint16_t* scale, uint8_t nibbles[16]);
void quantize_block_q8_0(const float* x, uint16_t* scale, int8_t quants[32]);

// Q4_0 blocks straight from n F16 or BF16 source values (n % 32 == 0), without an f32 row in
// between: the same bits as converting each value (f16_to_f32 / bf16_to_f32) and calling
// quantize_block_q4_0. Writes n / 32 f16 scales and n / 32 x 16 nibble bytes.
// has_direct_q4_0_from says whether this CPU has the fast path (AVX-512 F); without it the
// function still works, but converting the row with convert_to_f32 first is faster.
bool has_direct_q4_0_from(DType src);
void quantize_row_q4_0_from(DType src, const uint8_t* values /* [n x 2] */, uint32_t n, uint8_t* scales /* [n/32 x 2] */,
                            uint8_t* nibbles /* [n/32 x 16] */);

// Q8_0 blocks from n F32, F16 or BF16 source values (n % 32 == 0): the same bits as converting
// each value to f32 and calling quantize_block_q8_0. Writes n / 32 f16 scales and n / 32 x 32
// quants. has_direct_q8_0_from says whether this CPU has a vector path (AVX-512 F or AVX2).
bool has_direct_q8_0_from(DType src);
void quantize_row_q8_0_from(DType src, const uint8_t* values /* [n x element bytes] */, uint32_t n,
                            uint8_t* scales /* [n/32 x 2] */, int8_t* quants /* [n/32 x 32] */);

// Converts n source elements of type src (F32, F16, BF16) to f32 (block types: ggml_blocks.h).
void convert_to_f32(DType src, const uint8_t* data, uint64_t n, float* out);

} // namespace cflow
