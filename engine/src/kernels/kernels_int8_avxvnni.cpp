// AVX-VNNI path (VEX vpdpbusd on 256-bit registers: Alder Lake and later, Zen 5): the AVX2
// int8 kernel with one instruction per four products instead of vpmaddubsw + vpmaddwd.
#include "kernels/kernels_internal.h"

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
    switch (dtype) {
    case DType::Q8_0:
    case DType::Q4_0: int8_avxvnni::tile_matvec_q(dtype, payload, rows, cols, x, y); break;
    default: tile_matvec_avx2(dtype, payload, rows, cols, x, y); break;
    }
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
                                    .quantize_slice = &int8_avxvnni::quantize_slice,
                                    .quantized_dtypes = dtype_bit(DType::Q4_0) | dtype_bit(DType::Q8_0),
                                    .tile_matvec_quantized = &int8_avxvnni::tile_matvec_quantized,
                                    .tile_matmat_quantized = &int8_avxvnni::tile_matmat_quantized};
    return kTable;
}

} // namespace cflow::kernels

#endif // CFLOW_KERNELS_X86
