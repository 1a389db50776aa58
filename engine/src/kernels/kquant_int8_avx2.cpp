// K-quant tiles with int8 activations, AVX2 int8 path: vpmaddubsw + vpmaddwd (every AVX2 CPU).
// The body is kquant_int8_body.inc.
#include "kernels/kquant_kernels.h"

#if CFLOW_KERNELS_X86
#include <immintrin.h>

#define CFLOW_KQ_NAMESPACE cflow::kernels::kq_int8_avx2
#include "kernels/kquant_int8_body.inc"

#endif // CFLOW_KERNELS_X86
