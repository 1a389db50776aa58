#pragma once
// Element types of tensors in source checkpoints and of tile payloads in .cflow.
#include <cstdint>
#include <optional>
#include <string_view>

namespace cflow {

// Values 0..3 and 6..16 are the on-disk tile payload types of .cflow (SegmentEntry::dtype and
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
    // More ggml-block tiles (.cflow version 6), so a GGUF of these types converts without
    // re-quantising. Super-blocks of 256 weights, one per tile row as the K-quants above:
    Q2_K = 9,     // block_q2_K, 84 B
    Q3_K = 10,    // block_q3_K, 110 B
    IQ4_XS = 11,  // block_iq4_xs, 136 B
    // 32-weight blocks: a tile row holds the row's cols / 32 consecutive blocks (8 in a full
    // 256-column tile), bytes as GGUF stores them. llama.cpp's K-quant mixes fall back to these
    // for matrices whose width is not a multiple of 256.
    Q4_1 = 12,    // block_q4_1, 20 B
    Q5_0 = 13,    // block_q5_0, 22 B
    Q5_1 = 14,    // block_q5_1, 24 B
    IQ4_NL = 15,  // block_iq4_nl, 18 B
    MXFP4 = 16,   // block_mxfp4, 17 B: E8M0 exponent + 16 bytes of E2M1 nibbles (gpt-oss's experts)
};

constexpr uint32_t kQuantGroup = 32;  // weights per Q8_0 / Q4_0 block

constexpr uint32_t kKQuantBlock = 256;  // weights per K-quant super-block (ggml QK_K)

// Q4_K / Q5_K / Q6_K: the ggml-block tiles with a quantiser (kquant_quantize.h) and the int8
// kernels of the int8 paths (they share one Q8_K-style activation slice).
constexpr bool is_kquant(DType t) { return t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K; }
// Tiles whose rows are a GGUF's own ggml blocks, byte for byte (Q4_K .. MXFP4): dequantised by
// dequantize_ggml_row, only ever copied from a source of the same type except the K-quants.
constexpr bool is_ggml_tile(DType t) { return static_cast<uint8_t>(t) >= 6 && static_cast<uint8_t>(t) <= 16; }
constexpr bool is_tile_dtype(DType t) { return static_cast<uint8_t>(t) <= 3 || is_ggml_tile(t); }
constexpr bool is_block_quant(DType t) { return t == DType::Q8_0 || t == DType::Q4_0; }
// Tile types the converter can quantise to (the other ggml-block tiles have no quantiser: only a
// GGUF's own blocks of that type are ever copied into them).
constexpr bool is_quantisation_target(DType t) { return is_tile_dtype(t) && (!is_ggml_tile(t) || is_kquant(t)); }
// Bytes of one K-quant super-block (ggml block_q4_K / block_q5_K / block_q6_K); 0 for other types.
constexpr uint32_t kquant_block_bytes(DType t) {
    return t == DType::Q4_K ? 144 : t == DType::Q5_K ? 176 : t == DType::Q6_K ? 210 : 0;
}
// The ggml type code of a K-quant tile type (GgmlType in ggml_blocks.h); 0 for other types.
constexpr uint32_t kquant_ggml_type(DType t) { return t == DType::Q4_K ? 12 : t == DType::Q5_K ? 13 : t == DType::Q6_K ? 14 : 0; }

// Weights per ggml block of a ggml-block tile type: 256 (super-blocks), 32 (Q4_1, Q5_0, Q5_1,
// IQ4_NL, MXFP4); 0 for other types. Tiles of these types have cols a multiple of it.
constexpr uint32_t ggml_tile_block_weights(DType t) {
    switch (t) {
        case DType::Q4_K: case DType::Q5_K: case DType::Q6_K:
        case DType::Q2_K: case DType::Q3_K: case DType::IQ4_XS: return kKQuantBlock;
        case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::IQ4_NL: case DType::MXFP4: return kQuantGroup;
        default: return 0;
    }
}
// Bytes of one ggml block of a ggml-block tile type (as ggml-common.h); 0 for other types.
constexpr uint32_t ggml_tile_block_bytes(DType t) {
    switch (t) {
        case DType::Q4_K: return 144;
        case DType::Q5_K: return 176;
        case DType::Q6_K: return 210;
        case DType::Q2_K: return 84;
        case DType::Q3_K: return 110;
        case DType::IQ4_XS: return 136;
        case DType::Q4_1: return 20;
        case DType::Q5_0: return 22;
        case DType::Q5_1: return 24;
        case DType::IQ4_NL: return 18;
        case DType::MXFP4: return 17;
        default: return 0;
    }
}
// Bytes of 256 weights (one full tile row) of a ggml-block tile type; 0 for other types.
constexpr uint32_t ggml_tile_bytes_per_256(DType t) {
    return ggml_tile_block_weights(t) ? kKQuantBlock / ggml_tile_block_weights(t) * ggml_tile_block_bytes(t) : 0;
}
// The ggml type code (GgmlType in ggml_blocks.h) of a ggml-block tile type; 0 for other types.
constexpr uint32_t ggml_tile_ggml_type(DType t) {
    switch (t) {
        case DType::Q4_K: return 12;
        case DType::Q5_K: return 13;
        case DType::Q6_K: return 14;
        case DType::Q2_K: return 10;
        case DType::Q3_K: return 11;
        case DType::IQ4_XS: return 23;
        case DType::Q4_1: return 3;
        case DType::Q5_0: return 6;
        case DType::Q5_1: return 7;
        case DType::IQ4_NL: return 20;
        case DType::MXFP4: return 39;
        default: return 0;
    }
}
// Every ggml-block tile type, in DType order.
inline constexpr DType kGgmlTileTypes[] = {DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q2_K, DType::Q3_K,
                                           DType::IQ4_XS, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::IQ4_NL,
                                           DType::MXFP4};

// "f32", "f16", "q8_0", "q4_0", "bf16", "ggml", "q4_k", "q5_k", "q6_k", "q2_k", "q3_k", "iq4_xs", "q4_1",
// "q5_0", "q5_1", "iq4_nl", "mxfp4"
std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);    // inverse of dtype_name, case-insensitive

} // namespace cflow
