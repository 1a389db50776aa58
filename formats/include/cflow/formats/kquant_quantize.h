#pragma once
// K-quant quantisers: 256 f32 weights -> one ggml super-block (block_q4_K 144 B, block_q5_K
// 176 B, block_q6_K 210 B, layouts in ggml_dequant.cpp), choosing scales, mins and quants by
// the same rules and in the same f32 arithmetic as ggml's quantize_row_q{4,5,6}_K_ref, which
// llama-quantize uses when no importance matrix is given: the same input gives the same bytes
// (tests/formats/kquant_quantize_test.cpp). Scalar on purpose: the search is what costs, and its
// f32 operation order is what makes the bytes match.
#include <cstdint>

namespace cflow {

inline constexpr uint32_t kKQuantBlockWeights = 256;

// x: [256] f32 (finite; non-finite weights are refused by the converter before this).
// block: kquant_block_bytes(dtype) bytes.
void quantize_block_q4_k(const float* x, uint8_t* block);
void quantize_block_q5_k(const float* x, uint8_t* block);
void quantize_block_q6_k(const float* x, uint8_t* block);

} // namespace cflow
