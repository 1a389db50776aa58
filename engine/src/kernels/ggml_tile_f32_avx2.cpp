// Q2_K / Q3_K / IQ4_XS / Q4_1 / Q5_0 / Q5_1 / IQ4_NL tiles with f32 activations for the AVX2
// path (and the int8 paths built on it). The body is ggml_tile_f32_body.inc.
#include "kernels/ggml_tile_kernels.h"

#if CFLOW_KERNELS_X86
#include <immintrin.h>

#include "cflow/formats/tile_codec.h"

#define CFLOW_GT_F32_NAME ggml_tile_matvec_f32_avx2
#define CFLOW_GT_F32_WIDE 0
#include "kernels/ggml_tile_f32_body.inc"

#endif // CFLOW_KERNELS_X86
