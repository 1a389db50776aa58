#pragma once
// Engine-internal: the K-quant (Q4_K / Q5_K / Q6_K) tile kernels of the SIMD paths, one set per
// ISA translation unit (kquant_*_<isa>.cpp, compiled with that ISA's flags; call only after
// isa_supported() said yes). A K-quant tile row is one 256-weight ggml super-block; the scalar
// matvec_kquant (kernels_scalar.cpp) is their specification.
#include <cstddef>
#include <cstdint>

#include "kernels/kernels_internal.h"

namespace cflow::kernels {

// Whether the int8 paths (Avx2Int8, AvxVnni, Avx512Vnni) run K-quant tiles with int8 activations
// (the kq_int8_* kernels below, about twice the f32 kernels' speed) or with the f32 kernels of
// their base path (kquant_matvec_f32_*). On, as llama.cpp runs K-quants (Q8_K activations): with x
// rounded to int8 per 256 columns the Q4_K_M fixture's logits move by at most 3.0e-2 relative L2
// from the scalar kernel's (Q4_0 tiles on the per-32-step int8 path: 1.5e-2 on the same model),
// with every top-1 the same (tests/parity/ggml/gguf_kquant_model_test.cpp); the f32 paths stay
// within 1e-4 of the reference. The switch adds the K-quant bits to quantized_dtypes and routes
// tile_matvec, quantize_slice, tile_matvec_quantized and tile_matmat_quantized to the int8 kernels.
inline constexpr bool kKQuantInt8Activations = true;
inline constexpr uint32_t kKQuantInt8DtypeBits =
    kKQuantInt8Activations ? dtype_bit(DType::Q4_K) | dtype_bit(DType::Q5_K) | dtype_bit(DType::Q6_K) : 0u;

#if CFLOW_KERNELS_X86
// f32 activations: each row is dequantized in registers to ggml's exact f32 weights, then an FMA
// dot with x (the scalar kernel's values, additions reassociated). cols != 256 (outside the tile
// contract) takes the scalar kernel.
void kquant_matvec_f32_avx2(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y);
void kquant_matvec_f32_avx512(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y);

// Int8 activations (kquant_int8_body.inc): quantize_slice writes the Q8_K-style slice every
// K-quant dtype reads (Kernels::quantize_slice for slice_dtype(Q4_K)); matvec_quantized /
// matmat_quantized are Kernels::tile_matvec_quantized / tile_matmat_quantized for K-quant tiles
// (matmat bit-identical to matvec per token); matvec = quantize_slice + matvec_quantized.
#define CFLOW_KQ_DECLARE_INT8(ns)                                                                                     \
    namespace ns {                                                                                                    \
    void quantize_slice(const float* x, uint32_t cols, void* slice);                                                  \
    void matvec_quantized(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const void* slice,        \
                          float* y);                                                                                  \
    void matmat_quantized(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const uint8_t* slices,   \
                          size_t sliceStride, uint32_t tokens, float* y, size_t yStride);                             \
    void matvec(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y);         \
    }
CFLOW_KQ_DECLARE_INT8(kq_int8_avx2)        // vpmaddubsw + vpmaddwd on ymm
CFLOW_KQ_DECLARE_INT8(kq_int8_avxvnni)     // vpmaddubsw + VEX vpdpwssd on ymm
CFLOW_KQ_DECLARE_INT8(kq_int8_avx512vnni)  // vpmaddubsw + EVEX vpdpwssd on zmm
#undef CFLOW_KQ_DECLARE_INT8
#endif

} // namespace cflow::kernels
