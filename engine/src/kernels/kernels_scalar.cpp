// The scalar kernels: the specification every SIMD path is tested against. Plain loops in
// index order, one f32 accumulator per row, no reassociation, so the result is easy to reason
// about (see the tolerance derivation in tests/engine/kernels_test.cpp).
#include <cstring>

#include "cflow/formats/ggml_blocks.h"
#include "cflow/formats/tile_codec.h"
#include "cflow/formats/tile_plan.h"
#include "kernels/kernels_internal.h"

namespace cflow::kernels {

namespace {

float load_f32(const uint8_t* p) {
    float v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

uint16_t load_u16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

void matvec_f32(const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y) {
    for (uint32_t r = 0; r < rows; ++r) {
        const uint8_t* row = payload + static_cast<size_t>(r) * cols * sizeof(float);  // [cols] f32
        float acc = 0.0f;
        for (uint32_t c = 0; c < cols; ++c) acc += load_f32(row + c * sizeof(float)) * x[c];
        y[r] += acc;
    }
}

void matvec_f16(const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y) {
    for (uint32_t r = 0; r < rows; ++r) {
        const uint8_t* row = payload + static_cast<size_t>(r) * cols * sizeof(uint16_t);  // [cols] f16
        float acc = 0.0f;
        for (uint32_t c = 0; c < cols; ++c) acc += f16_to_f32(load_u16(row + c * sizeof(uint16_t))) * x[c];
        y[r] += acc;
    }
}

// Q8_0 and Q4_0 share the block structure: f16 scales [rows * G], then the blocks [rows * G].
// Weights of the partial last group past cols are padding and are never paired with x.
template <DType kType>
void matvec_block(const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y) {
    constexpr size_t kBlockBytes = kType == DType::Q8_0 ? kQuantGroup : kQuantGroup / 2;
    const uint32_t groups = groups_per_row(cols);
    const uint8_t* scales = payload;                                                   // [rows x G] f16
    const uint8_t* blocks = payload + static_cast<size_t>(rows) * groups * sizeof(uint16_t);  // [rows x G] blocks
    for (uint32_t r = 0; r < rows; ++r) {
        float acc = 0.0f;
        for (uint32_t g = 0; g < groups; ++g) {
            const size_t block = static_cast<size_t>(r) * groups + g;
            const float scale = f16_to_f32(load_u16(scales + block * sizeof(uint16_t)));
            const uint8_t* q = blocks + block * kBlockBytes;
            const uint32_t first = g * kQuantGroup;
            const uint32_t valid = cols - first < kQuantGroup ? cols - first : kQuantGroup;
            for (uint32_t i = 0; i < valid; ++i) {
                float w;  // s * q is exact in f32 (11-bit scale mantissa times an 8-bit integer)
                if constexpr (kType == DType::Q8_0) {
                    w = scale * static_cast<float>(static_cast<int8_t>(q[i]));
                } else {
                    // ggml order: byte j holds weight j in its low nibble and weight j + 16 in its high nibble.
                    const int nibble = i < 16 ? (q[i] & 0x0F) : (q[i - 16] >> 4);
                    w = scale * static_cast<float>(nibble - 8);
                }
                acc += w * x[first + i];
            }
        }
        y[r] += acc;
    }
}

// ggml-block tiles (K-quants, Q2_K, Q3_K, IQ4_XS: one super-block per tile row, cols == 256;
// Q4_1, Q5_0, Q5_1, IQ4_NL: cols / 32 blocks per row). The row's weights are ggml's own
// dequantised values (dequantize_ggml_row: exact in f32), then the f32 dot in index order: the
// specification of every SIMD path for these types.
void matvec_ggml_tile(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y) {
    const uint32_t block = ggml_tile_block_weights(dtype);
    if (cols == 0 || cols > kKQuantBlock) return;  // wider than a tile row: outside the tile contract
    // The row's blocks cover cols rounded up to whole blocks (as tile_payload_bytes sizes them).
    const uint32_t blocks = (cols + block - 1) / block;
    const size_t row_bytes = static_cast<size_t>(blocks) * ggml_tile_block_bytes(dtype);
    float w[kKQuantBlock];  // [256] weights of one row (the first blocks * block used)
    for (uint32_t r = 0; r < rows; ++r) {
        dequantize_ggml_row(ggml_tile_ggml_type(dtype), payload + r * row_bytes, uint64_t{blocks} * block, w);
        float acc = 0.0f;
        for (uint32_t c = 0; c < cols; ++c) acc += w[c] * x[c];
        y[r] += acc;
    }
}

} // namespace

// Non-tile dtypes (BF16, GgmlBlock) never reach a kernel: the reader rejects such segments, so y is left as is.
void tile_matvec_scalar(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y) {
    switch (dtype) {
    case DType::F32: matvec_f32(payload, rows, cols, x, y); break;
    case DType::F16: matvec_f16(payload, rows, cols, x, y); break;
    case DType::Q8_0: matvec_block<DType::Q8_0>(payload, rows, cols, x, y); break;
    case DType::Q4_0: matvec_block<DType::Q4_0>(payload, rows, cols, x, y); break;
    case DType::BF16:
    case DType::GgmlBlock: break;
    default:
        if (is_ggml_tile(dtype)) matvec_ggml_tile(dtype, payload, rows, cols, x, y);
        break;
    }
}

float dot_scalar(const float* a, const float* b, size_t n) {
    float acc = 0.0f;
    for (size_t i = 0; i < n; ++i) acc += a[i] * b[i];
    return acc;
}

void axpy_scalar(float alpha, const float* x, float* y, size_t n) {
    for (size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

float dot_f16_scalar(const float* a, const uint16_t* b, size_t n) {
    float acc = 0.0f;
    for (size_t i = 0; i < n; ++i) acc += a[i] * f16_to_f32(b[i]);
    return acc;
}

void axpy_f16_scalar(float alpha, const uint16_t* x, float* y, size_t n) {
    for (size_t i = 0; i < n; ++i) y[i] += alpha * f16_to_f32(x[i]);
}

void weighted_row_sum_scalar(DType dtype, const uint8_t* m, uint32_t rows, uint32_t cols, const float* w, float* y) {
    for (uint32_t r = 0; r < rows; ++r) {
        if (dtype == DType::F16) axpy_f16_scalar(w[r], reinterpret_cast<const uint16_t*>(m) + size_t(r) * cols, y, cols);
        else axpy_scalar(w[r], reinterpret_cast<const float*>(m) + size_t(r) * cols, y, cols);
    }
}

const Kernels& scalar_table() {
    static constexpr Kernels kTable{.isa = Isa::Scalar, .tile_matvec = &tile_matvec_scalar, .dot = &dot_scalar,
                                    .axpy = &axpy_scalar, .dot_f16 = &dot_f16_scalar, .axpy_f16 = &axpy_f16_scalar,
                                    .weighted_row_sum = &weighted_row_sum_scalar};
    return kTable;
}

} // namespace cflow::kernels
