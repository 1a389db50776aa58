#pragma once
// Element types of tensors in source checkpoints and of tile payloads in .cflow.
#include <cstdint>
#include <optional>
#include <string_view>

namespace cflow {

// Values 0..3 are the on-disk tile payload types of .cflow (SegmentEntry::dtype).
// BF16 and GgmlBlock exist only in source checkpoints and are converted by the converter.
enum class DType : uint8_t {
    F32 = 0,
    F16 = 1,
    Q8_0 = 2,  // ggml block: f16 scale + 32 x int8, value = s * q
    Q4_0 = 3,  // ggml block: f16 scale + 16 bytes; low nibbles = weights 0..15, high = 16..31; value = s * (q - 8)
    BF16 = 4,
    // Any other ggml block type of a GGUF (Q4_1, Q5_0, Q5_1, K-quants, IQ4_NL): one value, so
    // switches over DType stay small; TensorView::ggml_type names the exact type.
    GgmlBlock = 5,
};

constexpr uint32_t kQuantGroup = 32;  // weights per Q8_0 / Q4_0 block

constexpr bool is_tile_dtype(DType t) { return static_cast<uint8_t>(t) <= 3; }
constexpr bool is_block_quant(DType t) { return t == DType::Q8_0 || t == DType::Q4_0; }

std::string_view dtype_name(DType t);                       // "f32", "f16", "q8_0", "q4_0", "bf16", "ggml"
std::optional<DType> parse_dtype(std::string_view name);    // inverse of dtype_name, case-insensitive

} // namespace cflow
