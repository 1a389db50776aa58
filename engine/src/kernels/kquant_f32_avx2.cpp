// K-quant tiles with f32 activations for the AVX2 path.
// The body is kquant_f32_body.inc.
#include "kernels/kquant_kernels.h"

#if CFLOW_KERNELS_X86
#include <immintrin.h>

#define CFLOW_KQ_F32_NAME kquant_matvec_f32_avx2
#include "kernels/kquant_f32_body.inc"

#endif // CFLOW_KERNELS_X86
