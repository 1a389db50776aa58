// K-quant tiles with int8 activations, AVX-512 VNNI path: EVEX vpdpbusd on ymm (AVX512VL): a K-quant row is 8 chunks of 32 weights, one ymm each.
// The body is kquant_int8_body.inc.
#include "kernels/kquant_kernels.h"

#if CFLOW_KERNELS_X86
#include <immintrin.h>

#define CFLOW_KQ_VNNI 1
#define CFLOW_KQ_DPBUSD(acc, u8, s8) _mm256_dpbusd_epi32(acc, u8, s8)
#define CFLOW_KQ_NAMESPACE cflow::kernels::kq_int8_avx512vnni
#include "kernels/kquant_int8_body.inc"

#endif // CFLOW_KERNELS_X86
