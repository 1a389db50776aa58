#pragma once
// AVX2 + F16C (and for Q4_0 also AVX-512 F) paths of the converter's two hot loops (f16 rows to f32, Q4_0 block
// quantisation), chosen at run time: the formats library is built for baseline x86-64, so
// these functions carry their own target attributes and are used only where the CPU has the
// instructions. The scalar functions of tile_codec.cpp are the specification; the tests hold
// these to them bit for bit (tests/formats/codec_x86_test.cpp).
#include <cstdint>

namespace cflow::codec_x86 {

// out[i] = f16_to_f32(src[i]) (little-endian f16 in src), except that a signalling NaN comes
// out quiet (vcvtph2ps sets the quiet bit; the scalar path keeps the payload as it is).
using F16RowFn = void (*)(const uint8_t* src /* [n x 2] */, uint64_t n, float* out /* [n] */);
// quantize_block_q4_0 on 32 finite floats; returns false (nothing written) for a block with
// an infinity or NaN, which the scalar path handles.
using Q4BlockFn = bool (*)(const float* x /* [32] */, uint16_t* scale, uint8_t* nibbles /* [16] */);

// nullptr when this build is not for x86 or the CPU lacks AVX2 or F16C.
F16RowFn f16_row();
// The fastest Q4_0 path this CPU has (AVX-512 F, else AVX2), or nullptr.
Q4BlockFn q4_0_block();
// Each path by name, for the tests (nullptr where the CPU lacks it).
Q4BlockFn q4_0_block_avx2();
Q4BlockFn q4_0_block_avx512();

// quantize_block_q4_0 of 32 little-endian f16 (or bf16) values converted to f32, without the f32
// row in between; returns false (nothing written) for a block with an infinity or NaN. AVX-512 F
// only (nullptr elsewhere): the converter then takes the f32 row.
using Q4HalfBlockFn = bool (*)(const uint8_t* halfs /* [32 x 2] */, uint16_t* scale, uint8_t* nibbles /* [16] */);
Q4HalfBlockFn q4_0_block_from_f16();
Q4HalfBlockFn q4_0_block_from_bf16();
// The same on whole rows, sixteen blocks at a time: quantises groups [0, k) of the row, k the
// number returned, a multiple of 16; it stops before a run of 16 that holds a non-finite value,
// or fewer than 16 remaining, which the caller takes block by block.
using Q4HalfRowFn = uint32_t (*)(const uint8_t* values /* [groups x 32 x 2] */, uint32_t groups,
                                 uint8_t* scales /* [groups x 2] */, uint8_t* nibbles /* [groups x 16] */);
Q4HalfRowFn q4_0_row_from_f16();
Q4HalfRowFn q4_0_row_from_bf16();

} // namespace cflow::codec_x86
