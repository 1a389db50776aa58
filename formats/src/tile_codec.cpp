// Tile codec (scalar reference; the hot loops also have AVX2 and AVX-512 paths, codec_x86.h): f16/bf16 conversion, ggml-exact Q4_0/Q8_0 block
// quantization, and tile payload encode/decode in the layout of cflow_layout.h.
#include "cflow/formats/tile_codec.h"

#include "cflow/formats/kquant_quantize.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "cflow/formats/ggml_blocks.h"
#include "cflow/formats/tile_plan.h"
#include "codec_x86.h"

namespace cflow {

float f16_to_f32(uint16_t h) {
    const uint32_t sign = uint32_t{h & 0x8000u} << 16;
    const uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    uint32_t bits = 0;
    if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13);  // inf / nan (payload kept)
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;  // +-0
    } else {
        // Subnormal: normalise the mantissa into an f32 normal.
        int e = -1;
        do {
            ++e;
            mantissa <<= 1;
        } while ((mantissa & 0x400u) == 0);
        bits = sign | ((112u - static_cast<uint32_t>(e)) << 23) | ((mantissa & 0x3ffu) << 13);
    }
    return std::bit_cast<float>(bits);
}

uint16_t f32_to_f16(float f) {
    const uint32_t bits = std::bit_cast<uint32_t>(f);
    const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
    const uint32_t x = bits & 0x7fffffffu;
    if (x >= 0x7f800000u) {  // inf or nan; nan keeps its top payload bits and stays quiet
        if (x == 0x7f800000u) return sign | 0x7c00u;
        return static_cast<uint16_t>(sign | 0x7e00u | ((x >> 13) & 0x3ffu));
    }
    if (x >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to infinity
    if (x >= 0x38800000u) {                       // normal f16 range (>= 2^-14)
        uint32_t h = (x - 0x38000000u) >> 13;     // rebias exponent 127 -> 15
        const uint32_t rest = x & 0x1fffu;
        if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // nearest, ties to even (carry may bump exponent)
        return static_cast<uint16_t>(sign | h);
    }
    if (x < 0x33000000u) return sign;  // < 2^-25 (and exactly 2^-25 ties to even 0): signed zero
    // Subnormal f16: value = m * 2^-24 with m = mantissa24 >> shift.
    const uint32_t e = x >> 23;
    const uint32_t mantissa = (x & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e;  // 14..24
    uint32_t h = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (h & 1u))) ++h;  // may round up into the smallest normal: still correct bits
    return static_cast<uint16_t>(sign | h);
}

float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(uint32_t{h} << 16); }

namespace {

// ggml: MIN(15, (int8_t)(x * id + 8.5f)). For finite input x*id + 8.5 lies in [0.5, 16.5],
// where clamping to [0, 15] before truncation gives the same value; the clamp only keeps
// non-finite weights (which ggml leaves undefined) from an undefined float->int cast.
uint8_t q4_index(float scaled) {
    float v = scaled + 8.5f;
    if (!(v >= 0.0f)) v = std::isnan(v) ? 8.0f : 0.0f;
    if (v > 15.0f) v = 15.0f;
    return static_cast<uint8_t>(v);
}

// ggml: roundf(x * id). Finite input stays within [-127, 127]; the clamp only guards non-finite weights.
int8_t q8_value(float scaled) {
    if (std::isnan(scaled)) return 0;
    return static_cast<int8_t>(std::clamp(std::roundf(scaled), -127.0f, 127.0f));
}

} // namespace

void quantize_block_q4_0(const float* x, uint16_t* scale, uint8_t nibbles[16]) {
    static const codec_x86::Q4BlockFn fast = codec_x86::q4_0_block();
    if (fast && fast(x, scale, nibbles)) return;
    quantize_block_q4_0_scalar(x, scale, nibbles);
}

namespace {

codec_x86::Q4HalfPath widest_q4_0_path(DType src) {
    if (src == DType::F16) {
        const codec_x86::Q4HalfPath wide = codec_x86::q4_0_from_f16_avx512();
        return wide.row ? wide : codec_x86::q4_0_from_f16_avx2();
    }
    if (src == DType::BF16) {
        const codec_x86::Q4HalfPath wide = codec_x86::q4_0_from_bf16_avx512();
        return wide.row ? wide : codec_x86::q4_0_from_bf16_avx2();
    }
    return {};
}

const codec_x86::Q4HalfPath& direct_q4_0_path(DType src) {
    static const codec_x86::Q4HalfPath from_f16 = widest_q4_0_path(DType::F16);
    static const codec_x86::Q4HalfPath from_bf16 = widest_q4_0_path(DType::BF16);
    static const codec_x86::Q4HalfPath none;
    return src == DType::F16 ? from_f16 : src == DType::BF16 ? from_bf16 : none;
}

} // namespace

bool has_direct_q4_0_from(DType src) {
    const codec_x86::Q4HalfPath& path = direct_q4_0_path(src);
    return path.row && path.block;
}

void quantize_row_q4_0_from(DType src, const uint8_t* values, uint32_t n, uint8_t* scales, uint8_t* nibbles) {
    codec_x86::quantize_row_q4_0_via(direct_q4_0_path(src), src, values, n, scales, nibbles);
}

void codec_x86::quantize_row_q4_0_via(const Q4HalfPath& path, DType src, const uint8_t* values, uint32_t n,
                                      uint8_t* scales, uint8_t* nibbles) {
    const uint32_t groups = n / kQuantGroup;
    for (uint32_t b = 0; b < groups;) {
        if (path.row) b += path.row(values + uint64_t{b} * kQuantGroup * 2, groups - b, scales + uint64_t{b} * 2,
                                    nibbles + uint64_t{b} * 16);
        if (b == groups) break;
        // One block on its own: fewer than the row path's width left, or a run with a non-finite value.
        const uint8_t* block = values + uint64_t{b} * kQuantGroup * 2;
        uint16_t scale = 0;
        if (!path.block || !path.block(block, &scale, nibbles + uint64_t{b} * 16)) {
            float x[32];
            convert_to_f32(src, block, kQuantGroup, x);
            quantize_block_q4_0(x, &scale, nibbles + uint64_t{b} * 16);
        }
        std::memcpy(scales + uint64_t{b} * 2, &scale, 2);
        ++b;
    }
}

namespace {

codec_x86::Q8RowFn widest_q8_0_path(DType src) {
    if (codec_x86::Q8RowFn wide = codec_x86::q8_0_row_avx512(src)) return wide;
    return codec_x86::q8_0_row_avx2(src);
}

codec_x86::Q8RowFn direct_q8_0_path(DType src) {
    static const codec_x86::Q8RowFn from_f32 = widest_q8_0_path(DType::F32);
    static const codec_x86::Q8RowFn from_f16 = widest_q8_0_path(DType::F16);
    static const codec_x86::Q8RowFn from_bf16 = widest_q8_0_path(DType::BF16);
    switch (src) {
        case DType::F32: return from_f32;
        case DType::F16: return from_f16;
        case DType::BF16: return from_bf16;
        default: return nullptr;
    }
}

} // namespace

bool has_direct_q8_0_from(DType src) { return direct_q8_0_path(src) != nullptr; }

void quantize_row_q8_0_from(DType src, const uint8_t* values, uint32_t n, uint8_t* scales, int8_t* quants) {
    codec_x86::quantize_row_q8_0_via(direct_q8_0_path(src), src, values, n, scales, quants);
}

void codec_x86::quantize_row_q8_0_via(Q8RowFn path, DType src, const uint8_t* values, uint32_t n, uint8_t* scales,
                                      int8_t* quants) {
    const uint32_t groups = n / kQuantGroup;
    const uint64_t value_bytes = src == DType::F32 ? 4 : 2;
    for (uint32_t b = 0; b < groups;) {
        if (path) b += path(values + uint64_t{b} * kQuantGroup * value_bytes, groups - b, scales + uint64_t{b} * 2,
                            quants + uint64_t{b} * 32);
        if (b == groups) break;
        // A block with an infinity or a NaN (or no vector path): the scalar codec.
        float x[32];
        convert_to_f32(src, values + uint64_t{b} * kQuantGroup * value_bytes, kQuantGroup, x);
        uint16_t scale = 0;
        quantize_block_q8_0(x, &scale, quants + uint64_t{b} * 32);
        std::memcpy(scales + uint64_t{b} * 2, &scale, 2);
        ++b;
    }
}

void quantize_block_q4_0_scalar(const float* x, uint16_t* scale, uint8_t nibbles[16]) {
    // ggml quantize_row_q4_0_ref: the signed element of largest magnitude maps to -8.
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j) {
        const float v = x[j];
        if (amax < std::fabs(v)) {
            amax = std::fabs(v);
            max = v;
        }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    *scale = f32_to_f16(d);
    for (int j = 0; j < 16; ++j) {
        const float x0 = x[j] * id;
        const float x1 = x[16 + j] * id;
        const uint8_t q0 = q4_index(x0), q1 = q4_index(x1);
        nibbles[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
}

void quantize_block_q8_0(const float* x, uint16_t* scale, int8_t quants[32]) {
    // ggml quantize_row_q8_0_ref: d = amax / 127, q = roundf(x / d) (half away from zero).
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    *scale = f32_to_f16(d);
    for (int j = 0; j < 32; ++j) quants[j] = q8_value(x[j] * id);
}

namespace {

void store_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
uint16_t load_u16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

// Copies up to 32 weights of group g of one row, zero-padding past the row's end.
void gather_group(const float* row, uint32_t cols, uint32_t g, float block[32]) {
    const uint32_t start = g * kQuantGroup;
    const uint32_t n = std::min<uint32_t>(kQuantGroup, cols - start);
    std::fill(block, block + 32, 0.0f);
    std::copy(row + start, row + start + n, block);
}

} // namespace

void encode_tile(DType dtype, const float* src, uint64_t src_stride, uint32_t rows, uint32_t cols, uint8_t* payload) {
    switch (dtype) {
        case DType::F32:
            for (uint32_t r = 0; r < rows; ++r)
                std::memcpy(payload + uint64_t{r} * cols * 4, src + r * src_stride, uint64_t{cols} * 4);
            return;
        case DType::F16:
            for (uint32_t r = 0; r < rows; ++r)
                for (uint32_t c = 0; c < cols; ++c)
                    store_u16(payload + (uint64_t{r} * cols + c) * 2, f32_to_f16(src[r * src_stride + c]));
            return;
        case DType::Q8_0:
        case DType::Q4_0: {
            const uint32_t groups = groups_per_row(cols);
            const uint64_t blocks = uint64_t{rows} * groups;
            const uint64_t block_data = dtype == DType::Q4_0 ? 16 : 32;
            uint8_t* scales = payload;            // f16 [rows * G]
            uint8_t* data = payload + blocks * 2;  // [rows * G * block_data]
            float padded[32];
            for (uint32_t r = 0; r < rows; ++r) {
                uint32_t g = 0;
                if (dtype == DType::Q8_0) {  // the whole groups of the row on the vector path
                    g = cols / kQuantGroup;
                    quantize_row_q8_0_from(DType::F32, reinterpret_cast<const uint8_t*>(src + r * src_stride),
                                           g * kQuantGroup, scales + uint64_t{r} * groups * 2,
                                           reinterpret_cast<int8_t*>(data + uint64_t{r} * groups * block_data));
                }
                for (; g < groups; ++g) {
                    // A whole group is read in place; only a short last group is copied and zero-padded.
                    const float* block = src + r * src_stride + uint64_t{g} * kQuantGroup;
                    if (uint64_t{g + 1} * kQuantGroup > cols) {
                        gather_group(src + r * src_stride, cols, g, padded);
                        block = padded;
                    }
                    const uint64_t b = uint64_t{r} * groups + g;
                    uint16_t scale = 0;
                    if (dtype == DType::Q4_0)
                        quantize_block_q4_0(block, &scale, data + b * block_data);
                    else
                        quantize_block_q8_0(block, &scale, reinterpret_cast<int8_t*>(data + b * block_data));
                    store_u16(scales + b * 2, scale);
                }
            }
            return;
        }
        case DType::Q4_K:
        case DType::Q5_K:
        case DType::Q6_K: {
            // One super-block per row; the tile plan guarantees cols == 256 for K-quant tiles.
            const uint32_t block_bytes = kquant_block_bytes(dtype);
            for (uint32_t r = 0; r < rows; ++r) {
                const float* row = src + r * src_stride;  // [256]
                uint8_t* block = payload + uint64_t{r} * block_bytes;
                if (cols != kKQuantBlock) {  // unreachable through the plan; never read past the row
                    std::memset(block, 0, block_bytes);
                    continue;
                }
                if (dtype == DType::Q4_K) quantize_block_q4_k(row, block);
                else if (dtype == DType::Q5_K) quantize_block_q5_k(row, block);
                else quantize_block_q6_k(row, block);
            }
            return;
        }
        case DType::BF16:
        case DType::GgmlBlock: break;  // not tile payload types
        default:
            // Q2_K, Q3_K, IQ4_XS, Q4_1, Q5_0, Q5_1, IQ4_NL: no quantiser (not a conversion target,
            // is_quantisation_target); only a GGUF's own blocks are ever copied into them. Zero
            // weights rather than bytes a reader would misread.
            if (is_ggml_tile(dtype)) std::memset(payload, 0, tile_payload_bytes(dtype, rows, cols));
            break;
    }
}

void decode_tile_row(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, uint32_t row, float* out) {
    switch (dtype) {
        case DType::F32: std::memcpy(out, payload + uint64_t{row} * cols * 4, uint64_t{cols} * 4); return;
        case DType::F16:
            for (uint32_t c = 0; c < cols; ++c) out[c] = f16_to_f32(load_u16(payload + (uint64_t{row} * cols + c) * 2));
            return;
        case DType::Q8_0:
        case DType::Q4_0: {
            const uint32_t groups = groups_per_row(cols);
            const uint64_t blocks = uint64_t{rows} * groups;
            const uint64_t block_data = dtype == DType::Q4_0 ? 16 : 32;
            const uint8_t* data = payload + blocks * 2;
            for (uint32_t g = 0; g < groups; ++g) {
                const uint64_t b = uint64_t{row} * groups + g;
                const float d = f16_to_f32(load_u16(payload + b * 2));
                const uint8_t* q = data + b * block_data;
                const uint32_t start = g * kQuantGroup;
                const uint32_t n = std::min<uint32_t>(kQuantGroup, cols - start);
                for (uint32_t j = 0; j < n; ++j) {
                    if (dtype == DType::Q8_0) {
                        out[start + j] = d * static_cast<float>(static_cast<int8_t>(q[j]));
                    } else {
                        const int nibble = j < 16 ? (q[j] & 0x0f) : (q[j - 16] >> 4);
                        out[start + j] = d * static_cast<float>(nibble - 8);
                    }
                }
            }
            return;
        }
        case DType::BF16:
        case DType::GgmlBlock: break;
        default:  // ggml-block tiles: a tile row is the row's whole ggml blocks (one super-block, or cols / 32 blocks)
            if (is_ggml_tile(dtype))
                dequantize_ggml_row(ggml_tile_ggml_type(dtype), payload + uint64_t{row} * tile_payload_bytes(dtype, 1, cols), cols, out);
            return;
    }
}

void convert_to_f32(DType src, const uint8_t* data, uint64_t n, float* out) {
    switch (src) {
        case DType::F32: std::memcpy(out, data, n * 4); return;
        case DType::F16: {
            static const codec_x86::F16RowFn fast = codec_x86::f16_row();
            if (fast) return fast(data, n, out);
            for (uint64_t i = 0; i < n; ++i) out[i] = f16_to_f32(load_u16(data + i * 2));
            return;
        }
        case DType::BF16:
            for (uint64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(load_u16(data + i * 2));
            return;
        case DType::Q8_0:
        case DType::Q4_0:
        default: break;  // block types (Q8_0, Q4_0, ggml-block tiles, GgmlBlock): dequantize_ggml_row (ggml_blocks.h)
    }
}

} // namespace cflow
