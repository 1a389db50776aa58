// K-quant tiles with int8 activations, AVX-VNNI path: vpmaddubsw + VEX vpdpwssd on ymm.
// The body is kquant_int8_body.inc.
#include "kernels/kquant_kernels.h"

#if CFLOW_KERNELS_X86
#include <immintrin.h>

#define CFLOW_KQ_DPWSSD(acc, a, b) _mm256_dpwssd_avx_epi32(acc, a, b)
#define CFLOW_KQ_NAMESPACE cflow::kernels::kq_int8_avxvnni
#include "kernels/kquant_int8_body.inc"

#endif // CFLOW_KERNELS_X86
