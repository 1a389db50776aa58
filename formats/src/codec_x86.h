#pragma once
// AVX2 + F16C paths of the converter's two hot loops (f16 rows to f32, Q4_0 block
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
Q4BlockFn q4_0_block();

} // namespace cflow::codec_x86
