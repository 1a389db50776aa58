// Q4_1 / Q5_0 / Q5_1 / IQ4_NL / MXFP4 / IQ4_XS / Q2_K / Q3_K tiles with int8 activations: vpmaddubsw + vpmaddwd (every AVX2 CPU).
// The body is ggml32_int8_body.inc.
#include "kernels/ggml_tile_kernels.h"

#if CFLOW_KERNELS_X86
#include <immintrin.h>

#include "cflow/formats/cflow_layout.h"

#define CFLOW_G32_DPBUSD(acc, u8, s8) _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1)))
#define CFLOW_G32_EXACT_U8 0
#define CFLOW_G32_WIDE 0
#define CFLOW_G32_NAMESPACE cflow::kernels::g32_int8_avx2
#include "kernels/ggml32_int8_body.inc"

#endif // CFLOW_KERNELS_X86
