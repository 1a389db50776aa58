#pragma once
// ggml tensor types as GGUF stores them (gguf.md "ggml_type"): which codes this project reads,
// the geometry of their blocks, and the dequantisation of a row of blocks to f32.
//
// A row of n elements of a block type is n / block_elements consecutive blocks of block_bytes
// each; F32 / F16 / BF16 are listed as 1-element "blocks" so one table sizes every tensor.
// The block layouts are described next to their structs in ggml_dequant.cpp.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace cflow {

// ggml tensor type codes that this project reads (gguf.md "ggml_type").
enum GgmlType : uint32_t {
    kGgmlF32 = 0,
    kGgmlF16 = 1,
    kGgmlQ4_0 = 2,
    kGgmlQ4_1 = 3,
    kGgmlQ5_0 = 6,
    kGgmlQ5_1 = 7,
    kGgmlQ8_0 = 8,
    kGgmlQ2_K = 10,
    kGgmlQ3_K = 11,
    kGgmlQ4_K = 12,
    kGgmlQ5_K = 13,
    kGgmlQ6_K = 14,
    kGgmlQ8_K = 15,
    kGgmlIQ4_NL = 20,
    kGgmlIQ4_XS = 23,
    kGgmlBF16 = 30,
    kGgmlMXFP4 = 39,
};

constexpr uint32_t kGgmlSuperBlock = 256;  // QK_K: weights per K-quant super-block

struct GgmlBlockType {
    uint32_t ggml_type = 0;       // GgmlType code
    std::string_view name;        // "Q4_K", as ggml_type_name (gguf.h) spells it
    uint32_t block_elements = 0;  // weights per block: 1 (F32, F16, BF16), 32 (legacy, IQ4_NL, MXFP4), 256 (K-quants, IQ4_XS)
    uint32_t block_bytes = 0;     // bytes per block on disk
};

// Every type this project reads, in code order.
std::span<const GgmlBlockType> ggml_block_types();

// The entry for a ggml type code, or nullptr when this project does not read that type.
const GgmlBlockType* find_ggml_block_type(uint32_t ggml_type);

// "F32, F16, BF16, Q4_0, ..." for messages that list what is supported.
std::string supported_ggml_type_names();

// Writes the n_elements values stored at src (n_elements / block_elements whole blocks of
// `ggml_type`, which must be in ggml_block_types()) to out. The values are ggml's
// dequantize_row_* results bit for bit: every product there is exact in f32, so evaluation
// order and FMA contraction cannot change them (ggml_dequant.cpp says why per type).
void dequantize_ggml_row(uint32_t ggml_type, const uint8_t* src, uint64_t n_elements, float* out);

} // namespace cflow
