#pragma once
// Element types of tensors in source checkpoints and of tile payloads in .cflow.
#include <cstdint>
#include <optional>
#include <string_view>

namespace cflow {

// Values 0..3 and 6..8 are the on-disk tile payload types of .cflow (SegmentEntry::dtype and
// SegmentEntry::part_dtype). BF16 and GgmlBlock exist only in source checkpoints and are
// converted by the converter.
enum class DType : uint8_t {
    F32 = 0,
    F16 = 1,
    Q8_0 = 2,  // ggml block: f16 scale + 32 x int8, value = s * q
    Q4_0 = 3,  // ggml block: f16 scale + 16 bytes; low nibbles = weights 0..15, high = 16..31; value = s * (q - 8)
    BF16 = 4,
    // Any other ggml block type of a GGUF (Q4_1, Q5_0, Q5_1, K-quants, IQ4_NL): one value, so
    // switches over DType stay small; TensorView::ggml_type names the exact type.
    GgmlBlock = 5,
    // K-quant tiles (.cflow version 6): each tile row is exactly one ggml super-block of 256 weights,
    // its bytes as GGUF stores them (block_q4_K 144 B, block_q5_K 176 B, block_q6_K 210 B), so a
    // GGUF's blocks are re-tiled without re-quantising. Tiles of these types are 256 columns wide.
    Q4_K = 6,
    Q5_K = 7,
    Q6_K = 8,
};

constexpr uint32_t kQuantGroup = 32;  // weights per Q8_0 / Q4_0 block

constexpr uint32_t kKQuantBlock = 256;  // weights per K-quant super-block (ggml QK_K)

constexpr bool is_kquant(DType t) { return t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K; }
constexpr bool is_tile_dtype(DType t) { return static_cast<uint8_t>(t) <= 3 || is_kquant(t); }
constexpr bool is_block_quant(DType t) { return t == DType::Q8_0 || t == DType::Q4_0; }
// Bytes of one K-quant super-block (ggml block_q4_K / block_q5_K / block_q6_K); 0 for other types.
constexpr uint32_t kquant_block_bytes(DType t) {
    return t == DType::Q4_K ? 144 : t == DType::Q5_K ? 176 : t == DType::Q6_K ? 210 : 0;
}
// The ggml type code of a K-quant tile type (GgmlType in ggml_blocks.h); 0 for other types.
constexpr uint32_t kquant_ggml_type(DType t) { return t == DType::Q4_K ? 12 : t == DType::Q5_K ? 13 : t == DType::Q6_K ? 14 : 0; }

std::string_view dtype_name(DType t);                       // "f32", "f16", "q8_0", "q4_0", "bf16", "ggml", "q4_k", "q5_k", "q6_k"
std::optional<DType> parse_dtype(std::string_view name);    // inverse of dtype_name, case-insensitive

} // namespace cflow
