#pragma once
// Engine-internal: f32-activation kernels of the SIMD paths for the ggml-block tiles that have no
// register-dequantising kernel of their own: Q2_K, Q3_K, IQ4_XS (one 256-weight super-block per
// tile row) and Q4_1, Q5_0, Q5_1, IQ4_NL (cols / 32 blocks per tile row). One function per ISA
// translation unit (ggml_tile_f32_<isa>.cpp, compiled with that ISA's flags; call only after
// isa_supported() said yes). The scalar matvec_ggml_tile (kernels_scalar.cpp) is their
// specification. On the int8 paths every one of these types takes int8 activations (below).
#include <cstddef>
#include <cstdint>

#include "cflow/formats/cflow_layout.h"
#include "kernels/kernels_internal.h"

namespace cflow::kernels {

// Whether tile_matvec of the SIMD paths routes a tile of this dtype to ggml_tile_matvec_f32_*.
constexpr bool uses_ggml_tile_f32(DType t) { return is_ggml_tile(t) && !is_kquant(t); }

#if CFLOW_KERNELS_X86
// Int8 activations for the 32-weight block types (is_ggml32_int8: Q4_1, Q5_0, Q5_1, IQ4_NL,
// MXFP4, IQ4_XS, Q2_K, Q3_K; ggml32_int8_body.inc), one set per int8 path: quantize_slice_g32 writes the slice they
// share (Kernels::quantize_slice for slice_dtype(Q5_0)); matvec_quantized_g32 / matmat_quantized_g32
// are Kernels::tile_matvec_quantized / tile_matmat_quantized for them (matmat bit-identical to
// matvec per token); matvec_g32 = quantize_slice_g32 + matvec_quantized_g32. Tiles hold whole
// blocks, cols <= 256 (IQ4_XS, Q2_K, Q3_K: cols = 256, one super-block per row).
#define CFLOW_G32_DECLARE_INT8(ns)                                                                                    \
    namespace ns {                                                                                                    \
    void quantize_slice_g32(const float* x, uint32_t cols, void* slice);                                              \
    void matvec_quantized_g32(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const void* slice,    \
                              float* y);                                                                              \
    void matmat_quantized_g32(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols,                      \
                              const uint8_t* slices, size_t sliceStride, uint32_t tokens, float* y, size_t yStride);  \
    void matvec_g32(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y);     \
    }
CFLOW_G32_DECLARE_INT8(g32_int8_avx2)        // vpmaddubsw + vpmaddwd
CFLOW_G32_DECLARE_INT8(g32_int8_avxvnni)     // VEX vpdpbusd
CFLOW_G32_DECLARE_INT8(g32_int8_avx512vnni)  // EVEX vpdpbusd on ymm
#undef CFLOW_G32_DECLARE_INT8
// Whether tile_matvec of an int8 path takes the int8 kernel for this tile: a type above with whole
// blocks of at most one tile row (the tile contract; one super-block for the 256-weight types).
constexpr bool g32_int8_tile_fits(DType dtype, uint32_t cols) {
    return is_ggml32_int8(dtype) && cols > 0 && cols <= kTileCols && cols % 32 == 0 &&
           (ggml_tile_block_weights(dtype) == 32 || cols == kTileCols);
}
inline constexpr uint32_t kGgml32Int8DtypeBits = dtype_bit(DType::Q4_1) | dtype_bit(DType::Q5_0) | dtype_bit(DType::Q5_1) |
                                                 dtype_bit(DType::IQ4_NL) | dtype_bit(DType::MXFP4) | dtype_bit(DType::IQ4_XS) |
                                                 dtype_bit(DType::Q2_K) | dtype_bit(DType::Q3_K);

// Each row is dequantised by formats' dequantize_ggml_row (decode_tile_row) into a [256] f32
// buffer, the scalar kernel's exact weights, then dotted with x in four 8-lane FMA accumulators:
// within the reassociation bound of the scalar index-order loop. cols that are not whole blocks
// or not a multiple of 8 (outside the tile contract) take the scalar kernel.
void ggml_tile_matvec_f32_avx2(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y);
void ggml_tile_matvec_f32_avx512(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y);
#endif

} // namespace cflow::kernels
