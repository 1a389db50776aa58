#pragma once
// Engine-internal: f32-activation kernels of the SIMD paths for the ggml-block tiles that have no
// register-dequantising kernel of their own: Q2_K, Q3_K, IQ4_XS (one 256-weight super-block per
// tile row) and Q4_1, Q5_0, Q5_1, IQ4_NL (cols / 32 blocks per tile row). One function per ISA
// translation unit (ggml_tile_f32_<isa>.cpp, compiled with that ISA's flags; call only after
// isa_supported() said yes). The scalar matvec_ggml_tile (kernels_scalar.cpp) is their
// specification. The int8 paths use them too: these types never get int8 activation slices
// (they are not in any Kernels::quantized_dtypes).
#include <cstdint>

#include "kernels/kernels_internal.h"

namespace cflow::kernels {

// Whether tile_matvec of the SIMD paths routes a tile of this dtype to ggml_tile_matvec_f32_*.
constexpr bool uses_ggml_tile_f32(DType t) { return is_ggml_tile(t) && !is_kquant(t); }

#if CFLOW_KERNELS_X86
// Each row is dequantised by formats' dequantize_ggml_row (decode_tile_row) into a [256] f32
// buffer, the scalar kernel's exact weights, then dotted with x in four 8-lane FMA accumulators:
// within the reassociation bound of the scalar index-order loop. cols that are not whole blocks
// or not a multiple of 8 (outside the tile contract) take the scalar kernel.
void ggml_tile_matvec_f32_avx2(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y);
void ggml_tile_matvec_f32_avx512(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y);
#endif

} // namespace cflow::kernels
