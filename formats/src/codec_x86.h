#pragma once
// AVX2 + F16C and AVX-512 F paths of the converter's hot loops (f16 rows to f32, Q4_0 and Q8_0
// block quantisation), chosen at run time: the formats library is built for baseline x86-64, so
// these functions carry their own target attributes and are used only where the CPU has the
// instructions. The scalar functions of tile_codec.cpp are the specification; the tests hold
// these to them bit for bit (tests/formats/codec_x86_test.cpp).
#include <cstdint>

#include "cflow/formats/dtype.h"

namespace cflow::codec_x86 {

// out[i] = f16_to_f32(src[i]) (little-endian f16 in src), except that a signalling NaN comes
// out quiet (vcvtph2ps sets the quiet bit; the scalar path keeps the payload as it is).
using F16RowFn = void (*)(const uint8_t* src /* [n x 2] */, uint64_t n, float* out /* [n] */);
// quantize_block_q4_0 on 32 finite floats; returns false (nothing written) for a block with
// an infinity or NaN, which the scalar path handles.
using Q4BlockFn = bool (*)(const float* x /* [32] */, uint16_t* scale, uint8_t* nibbles /* [16] */);

// Every function below returns nullptr (or an empty path) when this build is not for x86 or the
// CPU lacks the ISA. CFLOW_ISA, the engine's kernel override, caps them too: scalar -> none,
// avx2 / avx2int8 / avxvnni -> AVX2 at most (to run and time the narrower paths on a wider CPU).
F16RowFn f16_row();
// The fastest Q4_0 path this CPU has (AVX-512 F, else AVX2), or nullptr.
Q4BlockFn q4_0_block();
// Each path by name, for the tests (nullptr where the CPU lacks it).
Q4BlockFn q4_0_block_avx2();
Q4BlockFn q4_0_block_avx512();

// Q4_0 straight from little-endian F16 (or BF16) values, without an f32 row in between: the
// bits of converting each value (f16_to_f32 / bf16_to_f32) and calling quantize_block_q4_0.
// `block` quantises one block of 32 and returns false (nothing written) for a block with an
// infinity or NaN; `row` quantises groups [0, k) of a row and returns k, a multiple of its width
// (16 blocks on AVX-512, 8 on AVX2, a block per lane), stopping before a run that holds a
// non-finite value or where fewer than its width remain: the caller takes those block by block.
using Q4HalfBlockFn = bool (*)(const uint8_t* halfs /* [32 x 2] */, uint16_t* scale, uint8_t* nibbles /* [16] */);
using Q4HalfRowFn = uint32_t (*)(const uint8_t* values /* [groups x 32 x 2] */, uint32_t groups,
                                 uint8_t* scales /* [groups x 2] */, uint8_t* nibbles /* [groups x 16] */);
struct Q4HalfPath {
    Q4HalfRowFn row = nullptr;
    Q4HalfBlockFn block = nullptr;
};
// By ISA (both members nullptr where the CPU lacks it); tile_codec.cpp takes the widest.
Q4HalfPath q4_0_from_f16_avx512();
Q4HalfPath q4_0_from_bf16_avx512();
Q4HalfPath q4_0_from_f16_avx2();
Q4HalfPath q4_0_from_bf16_avx2();

// Q8_0 blocks from a row of F32, F16 or BF16 values (little-endian): the bits of converting each
// value to f32 and calling quantize_block_q8_0. Quantises blocks [0, k) of `groups` and returns
// k: it stops before the first block holding an infinity or a NaN, which the caller quantises
// with the scalar codec and then calls again past it.
using Q8RowFn = uint32_t (*)(const uint8_t* values /* [groups x 32 x element bytes] */, uint32_t groups,
                             uint8_t* scales /* [groups x 2] */, int8_t* quants /* [groups x 32] */);
Q8RowFn q8_0_row_avx512(DType src);  // nullptr where the CPU lacks AVX-512 F or src is another type
Q8RowFn q8_0_row_avx2(DType src);    // nullptr where the CPU lacks AVX2 + F16C or src is another type
// quantize_row_q8_0_from (tile_codec.h) on a given path (nullptr: the scalar route), for the tests.
// Defined in tile_codec.cpp.
void quantize_row_q8_0_via(Q8RowFn path, DType src, const uint8_t* values, uint32_t n, uint8_t* scales, int8_t* quants);

// quantize_row_q4_0_from (tile_codec.h) on a given path, for the tests of each path; a path with
// nullptr members takes the scalar route. Defined in tile_codec.cpp.
void quantize_row_q4_0_via(const Q4HalfPath& path, DType src, const uint8_t* values, uint32_t n, uint8_t* scales,
                           uint8_t* nibbles);

} // namespace cflow::codec_x86
