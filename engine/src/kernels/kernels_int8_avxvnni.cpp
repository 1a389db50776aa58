// AVX-VNNI path (VEX vpdpbusd on 256-bit registers: Alder Lake and later, Zen 5): the AVX2
// int8 kernel with one instruction per four products instead of vpmaddubsw + vpmaddwd.
#include "kernels/kernels_internal.h"
#include "kernels/ggml_tile_kernels.h"
#include "kernels/kquant_kernels.h"

#if CFLOW_KERNELS_X86
#include <immintrin.h>

#include "cflow/formats/cflow_layout.h"

#define CFLOW_INT8_DPBUSD(acc, u8, s8) _mm256_dpbusd_avx_epi32(acc, u8, s8)
#define CFLOW_INT8_DPBUSD2(acc, u8a, s8a, u8b, s8b) _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(acc, u8a, s8a), u8b, s8b)
#define CFLOW_INT8_NAMESPACE cflow::kernels::int8_avxvnni
#include "kernels/int8_avx2_body.inc"

namespace cflow::kernels {
namespace {

void tile_matvec_avxvnni(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y) {
    if (cols == 0 || cols > kTileCols) return tile_matvec_avx2(dtype, payload, rows, cols, x, y);
    if (g32_int8_tile_fits(dtype, cols)) return g32_int8_avxvnni::matvec_g32(dtype, payload, rows, cols, x, y);
    switch (dtype) {
    case DType::Q8_0:
    case DType::Q4_0: int8_avxvnni::tile_matvec_q(dtype, payload, rows, cols, x, y); break;
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:  // int8 or f32 activations: kKQuantInt8Activations (kquant_kernels.h)
        if constexpr (kKQuantInt8Activations) kq_int8_avxvnni::matvec(dtype, payload, rows, cols, x, y);
        else tile_matvec_avx2(dtype, payload, rows, cols, x, y);
        break;
    default: tile_matvec_avx2(dtype, payload, rows, cols, x, y); break;
    }
}

// K-quant tiles read their own (Q8_K-style) slice: quantize_slice(slice_dtype(Q4_K)) writes it.
void quantize_slice_avxvnni(DType dtype, const float* x, uint32_t cols, void* slice) {
    if (is_ggml32_int8(dtype)) return g32_int8_avxvnni::quantize_slice_g32(x, cols, slice);
    if (is_kquant(dtype)) return kq_int8_avxvnni::quantize_slice(x, cols, slice);
    int8_avxvnni::quantize_slice(dtype, x, cols, slice);
}

void tile_matvec_quantized_avxvnni(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const void* slice,
                                 float* y) {
    if (is_ggml32_int8(dtype)) return g32_int8_avxvnni::matvec_quantized_g32(dtype, payload, rows, cols, slice, y);
    if (is_kquant(dtype)) return kq_int8_avxvnni::matvec_quantized(dtype, payload, rows, cols, slice, y);
    int8_avxvnni::tile_matvec_quantized(dtype, payload, rows, cols, slice, y);
}

void tile_matmat_quantized_avxvnni(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols,
                                 const uint8_t* slices, size_t sliceStride, uint32_t tokens, float* y, size_t yStride) {
    if (is_ggml32_int8(dtype))
        return g32_int8_avxvnni::matmat_quantized_g32(dtype, payload, rows, cols, slices, sliceStride, tokens, y, yStride);
    if (is_kquant(dtype)) return kq_int8_avxvnni::matmat_quantized(dtype, payload, rows, cols, slices, sliceStride, tokens, y, yStride);
    int8_avxvnni::tile_matmat_quantized(dtype, payload, rows, cols, slices, sliceStride, tokens, y, yStride);
}

} // namespace

const Kernels& avxvnni_table() {
    static constexpr Kernels kTable{.isa = Isa::AvxVnni,
                                    .tile_matvec = &tile_matvec_avxvnni,
                                    .dot = &dot_avx2,
                                    .axpy = &axpy_avx2,
                                    .dot_f16 = &dot_f16_avx2,
                                    .axpy_f16 = &axpy_f16_avx2,
                                    .weighted_row_sum = &weighted_row_sum_avx2,
                                    .quantize_slice = &quantize_slice_avxvnni,
                                    .quantized_dtypes = dtype_bit(DType::Q4_0) | dtype_bit(DType::Q8_0) | kKQuantInt8DtypeBits |
                                                        kGgml32Int8DtypeBits,
                                    .tile_matvec_quantized = &tile_matvec_quantized_avxvnni,
                                    .tile_matmat_quantized = &tile_matmat_quantized_avxvnni};
    return kTable;
}

} // namespace cflow::kernels

#endif // CFLOW_KERNELS_X86
