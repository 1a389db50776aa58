// Q4_1 / Q5_0 / Q5_1 / IQ4_NL / MXFP4 / IQ4_XS / Q2_K / Q3_K tiles with int8 activations: EVEX vpdpbusd on ymm (AVX-512 VL),
// the batched prefill's lane walk on zmm.
// The body is ggml32_int8_body.inc.
#include "kernels/ggml_tile_kernels.h"

#if CFLOW_KERNELS_X86
#include <immintrin.h>

#include "cflow/formats/cflow_layout.h"

#define CFLOW_G32_DPBUSD(acc, u8, s8) _mm256_dpbusd_epi32(acc, u8, s8)
#define CFLOW_G32_EXACT_U8 1
#define CFLOW_G32_WIDE 1  // the prefill lane walk on zmm, 16 rows per register
#define CFLOW_G32_NAMESPACE cflow::kernels::g32_int8_avx512vnni
#include "kernels/ggml32_int8_body.inc"

#endif // CFLOW_KERNELS_X86
