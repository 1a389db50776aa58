// AVX2 int8 path: Q4_0 / Q8_0 weights times int8-quantized activations with vpmaddubsw +
// vpmaddwd (every AVX2 CPU; the K-quants in kquant_int8_avx2.cpp, the other ggml block types in
// ggml32_int8_avx2.cpp); F32/F16 tiles, dot and axpy reuse the AVX2 f32 functions.
#include "kernels/kernels_internal.h"
#include "kernels/ggml_tile_kernels.h"
#include "kernels/kquant_kernels.h"

#if CFLOW_KERNELS_X86
#include <immintrin.h>

#include "cflow/formats/cflow_layout.h"

namespace cflow::kernels::int8_avx2 {
namespace {

// acc + per-lane sums of four adjacent u8 x s8 products (what vpdpbusd does in one instruction).
__m256i dpbusd_avx2(__m256i acc, __m256i u8, __m256i s8) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1)));
}

// Two products through one vpmaddwd: Q4_0 nibbles (<= 15) times |xq| <= 127 keep each int16
// pair sum of both products at most 4 * 15 * 127 = 7620, far from saturating.
__m256i dpbusd2_avx2_nibbles(__m256i acc, __m256i u8a, __m256i s8a, __m256i u8b, __m256i s8b) {
    const __m256i sum16 = _mm256_add_epi16(_mm256_maddubs_epi16(u8a, s8a), _mm256_maddubs_epi16(u8b, s8b));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(sum16, _mm256_set1_epi16(1)));
}

} // namespace
} // namespace cflow::kernels::int8_avx2

#define CFLOW_INT8_DPBUSD(acc, u8, s8) dpbusd_avx2(acc, u8, s8)
#define CFLOW_INT8_DPBUSD2(acc, u8a, s8a, u8b, s8b) dpbusd2_avx2_nibbles(acc, u8a, s8a, u8b, s8b)
#define CFLOW_INT8_NAMESPACE cflow::kernels::int8_avx2
#include "kernels/int8_avx2_body.inc"

namespace cflow::kernels {
namespace {

void tile_matvec_int8_avx2(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y) {
    // The quantized-x buffer holds one tile row; wider inputs take the f32 path.
    if (cols == 0 || cols > kTileCols) return tile_matvec_avx2(dtype, payload, rows, cols, x, y);
    if (g32_int8_tile_fits(dtype, cols)) return g32_int8_avx2::matvec_g32(dtype, payload, rows, cols, x, y);
    switch (dtype) {
    case DType::Q8_0:
    case DType::Q4_0: int8_avx2::tile_matvec_q(dtype, payload, rows, cols, x, y); break;
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:  // int8 or f32 activations: kKQuantInt8Activations (kquant_kernels.h)
        if constexpr (kKQuantInt8Activations) kq_int8_avx2::matvec(dtype, payload, rows, cols, x, y);
        else tile_matvec_avx2(dtype, payload, rows, cols, x, y);
        break;
    default: tile_matvec_avx2(dtype, payload, rows, cols, x, y); break;
    }
}

// K-quant tiles read their own (Q8_K-style) slice: quantize_slice(slice_dtype(Q4_K)) writes it.
void quantize_slice_int8_avx2(DType dtype, const float* x, uint32_t cols, void* slice) {
    if (is_ggml32_int8(dtype)) return g32_int8_avx2::quantize_slice_g32(x, cols, slice);
    if (is_kquant(dtype)) return kq_int8_avx2::quantize_slice(x, cols, slice);
    int8_avx2::quantize_slice(dtype, x, cols, slice);
}

void tile_matvec_quantized_int8_avx2(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const void* slice,
                                 float* y) {
    if (is_ggml32_int8(dtype)) return g32_int8_avx2::matvec_quantized_g32(dtype, payload, rows, cols, slice, y);
    if (is_kquant(dtype)) return kq_int8_avx2::matvec_quantized(dtype, payload, rows, cols, slice, y);
    int8_avx2::tile_matvec_quantized(dtype, payload, rows, cols, slice, y);
}

void tile_matmat_quantized_int8_avx2(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols,
                                 const uint8_t* slices, size_t sliceStride, uint32_t tokens, float* y, size_t yStride) {
    if (is_ggml32_int8(dtype))
        return g32_int8_avx2::matmat_quantized_g32(dtype, payload, rows, cols, slices, sliceStride, tokens, y, yStride);
    if (is_kquant(dtype)) return kq_int8_avx2::matmat_quantized(dtype, payload, rows, cols, slices, sliceStride, tokens, y, yStride);
    int8_avx2::tile_matmat_quantized(dtype, payload, rows, cols, slices, sliceStride, tokens, y, yStride);
}

} // namespace

const Kernels& avx2int8_table() {
    static constexpr Kernels kTable{.isa = Isa::Avx2Int8,
                                    .tile_matvec = &tile_matvec_int8_avx2,
                                    .dot = &dot_avx2,
                                    .axpy = &axpy_avx2,
                                    .dot_f16 = &dot_f16_avx2,
                                    .axpy_f16 = &axpy_f16_avx2,
                                    .weighted_row_sum = &weighted_row_sum_avx2,
                                    .quantize_slice = &quantize_slice_int8_avx2,
                                    .quantized_dtypes = dtype_bit(DType::Q4_0) | dtype_bit(DType::Q8_0) | kKQuantInt8DtypeBits |
                                                        kGgml32Int8DtypeBits,
                                    .tile_matvec_quantized = &tile_matvec_quantized_int8_avx2,
                                    .tile_matmat_quantized = &tile_matmat_quantized_int8_avx2};
    return kTable;
}

} // namespace cflow::kernels

#endif // CFLOW_KERNELS_X86
