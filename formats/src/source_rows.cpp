// Reading rows of source tensors: F32/F16/BF16 through convert_to_f32, ggml Q8_0/Q4_0
// blocks dequantized (value = d * q, Q4_0: d * (nibble - 8)) or handed out raw for
// bit-exact re-tiling.
#include <algorithm>
#include <cstring>

#include "cflow/formats/tile_codec.h"
#include "converter_internal.h"

namespace cflow::convert_detail {
namespace {

void dequantize_blocks(DType dtype, const uint8_t* blocks, uint64_t n_blocks, float* out /* [n_blocks * 32] */) {
    const uint64_t block_bytes = ggml_block_bytes(dtype);
    for (uint64_t b = 0; b < n_blocks; ++b) {
        const uint8_t* block = blocks + b * block_bytes;
        uint16_t d_bits;
        std::memcpy(&d_bits, block, 2);
        const float d = f16_to_f32(d_bits);
        const uint8_t* q = block + 2;
        float* y = out + b * 32;
        if (dtype == DType::Q8_0) {
            for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(static_cast<int8_t>(q[j]));
        } else {
            for (int j = 0; j < 16; ++j) {
                y[j] = d * static_cast<float>((q[j] & 0x0f) - 8);
                y[j + 16] = d * static_cast<float>((q[j] >> 4) - 8);
            }
        }
    }
}

} // namespace

uint64_t source_bytes(DType dtype, uint64_t elements) {
    switch (dtype) {
        case DType::F32: return elements * 4;
        case DType::F16:
        case DType::BF16: return elements * 2;
        case DType::Q8_0:
        case DType::Q4_0: return elements / kQuantGroup * ggml_block_bytes(dtype);
    }
    return 0;
}

void MatrixSource::read_rows_f32(uint32_t row0, uint32_t n, float* out) const {
    if (!tensor) {
        std::fill(out, out + uint64_t{n} * cols, 0.0f);
        return;
    }
    const uint64_t row_bytes = source_bytes(tensor->dtype, cols);
    for (uint32_t r = 0; r < n; ++r) {
        const uint8_t* src = tensor->data + (first_row + source_row(row0 + r)) * row_bytes;
        float* dst = out + uint64_t{r} * cols;
        if (is_block_quant(tensor->dtype))
            dequantize_blocks(tensor->dtype, src, cols / kQuantGroup, dst);
        else
            convert_to_f32(tensor->dtype, src, cols, dst);
    }
}

const uint8_t* MatrixSource::row_blocks(uint32_t r, uint32_t col0) const {
    const uint64_t row_bytes = source_bytes(tensor->dtype, cols);
    return tensor->data + (first_row + source_row(r)) * row_bytes + source_bytes(tensor->dtype, col0);
}

} // namespace cflow::convert_detail
