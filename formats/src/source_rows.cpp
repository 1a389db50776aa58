// Reading rows of source tensors: F32/F16/BF16 through convert_to_f32, ggml block types
// (Q4_0, Q8_0 and the GgmlBlock ones) through dequantize_ggml_row, or Q4_0/Q8_0 blocks
// handed out raw for bit-exact re-tiling.
#include <algorithm>

#include "cflow/formats/ggml_blocks.h"
#include "cflow/formats/tile_codec.h"
#include "converter_internal.h"

namespace cflow::convert_detail {

const GgmlBlockType* source_block_type(const TensorView& tensor) {
    switch (tensor.dtype) {
        case DType::F32: return find_ggml_block_type(kGgmlF32);
        case DType::F16: return find_ggml_block_type(kGgmlF16);
        case DType::BF16: return find_ggml_block_type(kGgmlBF16);
        case DType::Q8_0: return find_ggml_block_type(kGgmlQ8_0);
        case DType::Q4_0: return find_ggml_block_type(kGgmlQ4_0);
        case DType::GgmlBlock: return find_ggml_block_type(tensor.ggml_type);
        default: return find_ggml_block_type(ggml_tile_ggml_type(tensor.dtype));  // ggml-block tile types
    }
    return nullptr;
}

uint64_t source_bytes(const TensorView& tensor, uint64_t elements) {
    const GgmlBlockType* block = source_block_type(tensor);
    return block ? elements / block->block_elements * block->block_bytes : 0;
}

void MatrixSource::read_rows_f32(uint32_t row0, uint32_t n, float* out) const {
    if (!tensor) {
        std::fill(out, out + uint64_t{n} * cols, 0.0f);
        return;
    }
    const GgmlBlockType* block = source_block_type(*tensor);  // validate_source checked it is there
    const uint64_t row_bytes = source_bytes(*tensor, cols);
    for (uint32_t r = 0; r < n; ++r) {
        const uint8_t* src = tensor->data + (first_row + source_row(row0 + r)) * row_bytes;
        dequantize_ggml_row(block->ggml_type, src, cols, out + uint64_t{r} * cols);
    }
}

const uint8_t* MatrixSource::row_blocks(uint32_t r, uint32_t col0) const {
    const uint64_t row_bytes = source_bytes(*tensor, cols);
    return tensor->data + (first_row + source_row(r)) * row_bytes + source_bytes(*tensor, col0);
}

} // namespace cflow::convert_detail
