// K-quant tiles with f32 activations for the AVX-512 path: the 256-bit body, compiled with
// AVX-512 flags (its 32 registers let the compiler keep more of a row in flight).
// The body is kquant_f32_body.inc.
#include "kernels/kquant_kernels.h"

#if CFLOW_KERNELS_X86
#include <immintrin.h>

#define CFLOW_KQ_F32_NAME kquant_matvec_f32_avx512
#include "kernels/kquant_f32_body.inc"

#endif // CFLOW_KERNELS_X86
