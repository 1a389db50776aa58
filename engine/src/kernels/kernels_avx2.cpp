// AVX2 + FMA + F16C kernels (compiled with those flags; run only after isa_supported(Avx2)).
// Four rows per pass share each x load; one horizontal sum per row per tile. Payload and x
// may be unaligned (loadu everywhere); nothing is read past the payload or past x[cols - 1]:
// column tails use vmaskmovps (masked-out lanes never fault) or zero-padded local copies.
// Deliberately no std:: templates or header inline functions here: their out-of-line copies
// would be compiled with AVX2 and the linker could hand them to scalar code.
#include "kernels/kernels_internal.h"
#include "kernels/ggml_tile_kernels.h"
#include "kernels/kquant_kernels.h"

#if CFLOW_KERNELS_X86
#include <immintrin.h>

#include <cstring>

namespace cflow::kernels {

namespace {

constexpr int kRowBlock = 4;
constexpr uint32_t kGroup = 32;  // kQuantGroup

float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Lane mask with the first n (0..8) lanes set, for vmaskmovps.
__m256i lane_mask(uint32_t n) {
    static const int32_t kSource[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kSource + 8 - n));
}

template <int R>
void f32_rows(const uint8_t* payload, uint32_t r0, uint32_t cols, const float* x, float* y) {
    const size_t rowBytes = static_cast<size_t>(cols) * sizeof(float);
    const float* w[R];  // R x [cols] f32 rows
    __m256 acc[R];
    CFLOW_UNROLL_ROWS
    for (int i = 0; i < R; ++i) {
        w[i] = reinterpret_cast<const float*>(payload + (r0 + i) * rowBytes);
        acc[i] = _mm256_setzero_ps();
    }
    uint32_t c = 0;
    for (; c + 8 <= cols; c += 8) {
        const __m256 xv = _mm256_loadu_ps(x + c);
        CFLOW_UNROLL_ROWS
        for (int i = 0; i < R; ++i) acc[i] = _mm256_fmadd_ps(_mm256_loadu_ps(w[i] + c), xv, acc[i]);
    }
    if (c < cols) {
        const __m256i m = lane_mask(cols - c);
        const __m256 xv = _mm256_maskload_ps(x + c, m);
        CFLOW_UNROLL_ROWS
        for (int i = 0; i < R; ++i) acc[i] = _mm256_fmadd_ps(_mm256_maskload_ps(w[i] + c, m), xv, acc[i]);
    }
    CFLOW_UNROLL_ROWS
    for (int i = 0; i < R; ++i) y[r0 + i] += hsum(acc[i]);
}

template <int R>
void f16_rows(const uint8_t* payload, uint32_t r0, uint32_t cols, const float* x, float* y) {
    const size_t rowBytes = static_cast<size_t>(cols) * sizeof(uint16_t);
    const uint8_t* w[R];  // R x [cols] f16 rows
    __m256 acc[R];
    CFLOW_UNROLL_ROWS
    for (int i = 0; i < R; ++i) {
        w[i] = payload + (r0 + i) * rowBytes;
        acc[i] = _mm256_setzero_ps();
    }
    uint32_t c = 0;
    for (; c + 8 <= cols; c += 8) {
        const __m256 xv = _mm256_loadu_ps(x + c);
        CFLOW_UNROLL_ROWS
        for (int i = 0; i < R; ++i) {
            const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i] + c * sizeof(uint16_t)));
            acc[i] = _mm256_fmadd_ps(_mm256_cvtph_ps(h), xv, acc[i]);
        }
    }
    if (c < cols) {
        const uint32_t n = cols - c;
        const __m256 xv = _mm256_maskload_ps(x + c, lane_mask(n));
        CFLOW_UNROLL_ROWS
        for (int i = 0; i < R; ++i) {
            uint16_t tail[8] = {};  // [8] f16: the row's last n weights, zero-padded
            std::memcpy(tail, w[i] + c * sizeof(uint16_t), n * sizeof(uint16_t));
            const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(tail));
            acc[i] = _mm256_fmadd_ps(_mm256_cvtph_ps(h), xv, acc[i]);
        }
    }
    CFLOW_UNROLL_ROWS
    for (int i = 0; i < R; ++i) y[r0 + i] += hsum(acc[i]);
}

// One 32-weight group of x: four 8-lane vectors, zero past cols for the partial last group.
struct XGroup {
    __m256 v[4];
};

XGroup load_x_group(const float* x, uint32_t g, uint32_t cols) {
    const uint32_t first = g * kGroup;
    XGroup xg;
    for (uint32_t k = 0; k < 4; ++k) {
        const uint32_t start = first + 8 * k;
        const uint32_t valid = start >= cols ? 0 : (cols - start >= 8 ? 8 : cols - start);
        xg.v[k] = valid == 8 ? _mm256_loadu_ps(x + start)
                  : valid == 0 ? _mm256_setzero_ps()
                               : _mm256_maskload_ps(x + start, lane_mask(valid));
    }
    return xg;
}

// sum_i q_i * x_i for one group; q as four 8-lane int32 vectors in weight order.
__m256 group_dot(const __m256i q[4], const XGroup& xg) {
    __m256 s = _mm256_mul_ps(_mm256_cvtepi32_ps(q[0]), xg.v[0]);
    s = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q[1]), xg.v[1], s);
    s = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q[2]), xg.v[2], s);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(q[3]), xg.v[3], s);
}

template <int R, bool kQ4>
void block_rows(const uint8_t* payload, uint32_t rows, uint32_t r0, uint32_t cols, const float* x, float* y) {
    constexpr size_t kBlockBytes = kQ4 ? kGroup / 2 : kGroup;
    constexpr uint32_t kScaleChunk = 8;  // f16 scales converted per row at once (one tile row at 256 cols)
    const uint32_t groups = (cols + kGroup - 1) / kGroup;
    const uint8_t* scales = payload;                                                        // [rows x G] f16
    const uint8_t* blocks = payload + static_cast<size_t>(rows) * groups * sizeof(uint16_t);  // [rows x G] blocks
    const __m128i lowNibbles = _mm_set1_epi8(0x0F);
    const __m128i eight = _mm_set1_epi8(8);
    __m256 acc[R];
    CFLOW_UNROLL_ROWS
    for (int i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps();
    for (uint32_t g0 = 0; g0 < groups; g0 += kScaleChunk) {
        const uint32_t chunk = groups - g0 < kScaleChunk ? groups - g0 : kScaleChunk;
        // Scales as f32 in memory: each group's scale is then a plain broadcast load.
        alignas(32) float rowScales[R][kScaleChunk];  // [R x chunk] f32
        CFLOW_UNROLL_ROWS
        for (int i = 0; i < R; ++i) {
            uint16_t s16[kScaleChunk] = {};  // [chunk] f16, zero-padded: never read past the scale array
            std::memcpy(s16, scales + (static_cast<size_t>(r0 + i) * groups + g0) * sizeof(uint16_t), chunk * sizeof(uint16_t));
            _mm256_store_ps(rowScales[i], _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s16))));
        }
        for (uint32_t k = 0; k < chunk; ++k) {
            const uint32_t g = g0 + k;
            const XGroup xg = load_x_group(x, g, cols);
            CFLOW_UNROLL_ROWS
            for (int i = 0; i < R; ++i) {
                const uint8_t* b = blocks + (static_cast<size_t>(r0 + i) * groups + g) * kBlockBytes;
                __m128i lo, hi;  // weights 0..15 and 16..31 as int8
                if constexpr (kQ4) {
                    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
                    lo = _mm_sub_epi8(_mm_and_si128(packed, lowNibbles), eight);
                    hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(packed, 4), lowNibbles), eight);
                } else {
                    lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
                    hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16));
                }
                const __m256i q[4] = {_mm256_cvtepi8_epi32(lo), _mm256_cvtepi8_epi32(_mm_unpackhi_epi64(lo, lo)),
                                      _mm256_cvtepi8_epi32(hi), _mm256_cvtepi8_epi32(_mm_unpackhi_epi64(hi, hi))};
                acc[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(&rowScales[i][k]), group_dot(q, xg), acc[i]);
            }
        }
    }
    CFLOW_UNROLL_ROWS
    for (int i = 0; i < R; ++i) y[r0 + i] += hsum(acc[i]);
}

template <int R>
void rows_for(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t r0, uint32_t cols, const float* x,
              float* y) {
    switch (dtype) {
    case DType::F32: f32_rows<R>(payload, r0, cols, x, y); break;
    case DType::F16: f16_rows<R>(payload, r0, cols, x, y); break;
    case DType::Q8_0: block_rows<R, false>(payload, rows, r0, cols, x, y); break;
    case DType::Q4_0: block_rows<R, true>(payload, rows, r0, cols, x, y); break;
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:  // handled by tile_matvec_avx2 before the row blocks
    case DType::BF16:
    case DType::GgmlBlock: break;  // not tile dtypes; the reader rejects it (see kernels_scalar.cpp)
    default: break;  // the other ggml-block tiles: handled by tile_matvec_avx2 before the row blocks
    }
}

} // namespace

void tile_matvec_avx2(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y) {
    if (is_kquant(dtype)) return kquant_matvec_f32_avx2(dtype, payload, rows, cols, x, y);
    // Q2_K, Q3_K, IQ4_XS, Q4_1, Q5_0, Q5_1, IQ4_NL: dequantise each row, then FMA (ggml_tile_kernels.h).
    // The int8 paths reach this too: these types have no int8 kernels (not in quantized_dtypes).
    if (uses_ggml_tile_f32(dtype)) return ggml_tile_matvec_f32_avx2(dtype, payload, rows, cols, x, y);
    uint32_t r = 0;
    for (; r + kRowBlock <= rows; r += kRowBlock) rows_for<kRowBlock>(dtype, payload, rows, r, cols, x, y);
    for (; r < rows; ++r) rows_for<1>(dtype, payload, rows, r, cols, x, y);
}

float dot_avx2(const float* a, const float* b, size_t n) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; ++k)
            acc[k] = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8 * k), _mm256_loadu_ps(b + i + 8 * k), acc[k]);
    for (; i + 8 <= n; i += 8) acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc[0]);
    if (i < n) {
        const __m256i m = lane_mask(static_cast<uint32_t>(n - i));
        acc[1] = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m), acc[1]);
    }
    return hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
}

void axpy_avx2(float alpha, const float* x, float* y, size_t n) {
    const __m256 a = _mm256_set1_ps(alpha);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(a, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    if (i < n) {
        const __m256i m = lane_mask(static_cast<uint32_t>(n - i));
        _mm256_maskstore_ps(y + i, m, _mm256_fmadd_ps(a, _mm256_maskload_ps(x + i, m), _mm256_maskload_ps(y + i, m)));
    }
}

namespace {

// Eight halves from b[0..n) (n <= 8), zero past n, as f32.
__m256 load_f16_tail(const uint16_t* b, size_t n) {
    alignas(16) uint16_t h[8] = {};
    std::memcpy(h, b, n * sizeof(uint16_t));
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
}

__m256 load_f16(const uint16_t* b) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b))); }

} // namespace

float dot_f16_avx2(const float* a, const uint16_t* b, size_t n) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; ++k) acc[k] = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8 * k), load_f16(b + i + 8 * k), acc[k]);
    for (; i + 8 <= n; i += 8) acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), load_f16(b + i), acc[0]);
    if (i < n) {
        const __m256i m = lane_mask(static_cast<uint32_t>(n - i));
        acc[1] = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m), load_f16_tail(b + i, n - i), acc[1]);
    }
    return hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
}

void axpy_f16_avx2(float alpha, const uint16_t* x, float* y, size_t n) {
    const __m256 a = _mm256_set1_ps(alpha);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(a, load_f16(x + i), _mm256_loadu_ps(y + i)));
    if (i < n) {
        const __m256i m = lane_mask(static_cast<uint32_t>(n - i));
        _mm256_maskstore_ps(y + i, m, _mm256_fmadd_ps(a, load_f16_tail(x + i, n - i), _mm256_maskload_ps(y + i, m)));
    }
}

// Columns in blocks of 32 (four ymm accumulators held across all rows), then 8, then a masked
// tail: per element the fused multiply-adds of axpy_avx2 in row order.
void weighted_row_sum_avx2(DType dtype, const uint8_t* m, uint32_t rows, uint32_t cols, const float* w, float* y) {
    const bool half = dtype == DType::F16;
    const size_t rowBytes = size_t(cols) * (half ? 2 : 4);
    auto load = [&](uint32_t r, uint32_t c) {
        const uint8_t* p = m + r * rowBytes;
        return half ? load_f16(reinterpret_cast<const uint16_t*>(p) + c) : _mm256_loadu_ps(reinterpret_cast<const float*>(p) + c);
    };
    uint32_t c = 0;
    for (; c + 32 <= cols; c += 32) {
        __m256 acc[4];
        for (int k = 0; k < 4; ++k) acc[k] = _mm256_loadu_ps(y + c + 8 * k);
        for (uint32_t r = 0; r < rows; ++r) {
            const __m256 a = _mm256_set1_ps(w[r]);
            for (int k = 0; k < 4; ++k) acc[k] = _mm256_fmadd_ps(a, load(r, c + 8 * k), acc[k]);
        }
        for (int k = 0; k < 4; ++k) _mm256_storeu_ps(y + c + 8 * k, acc[k]);
    }
    for (; c + 8 <= cols; c += 8) {
        __m256 acc = _mm256_loadu_ps(y + c);
        for (uint32_t r = 0; r < rows; ++r) acc = _mm256_fmadd_ps(_mm256_set1_ps(w[r]), load(r, c), acc);
        _mm256_storeu_ps(y + c, acc);
    }
    if (c < cols) {
        const __m256i mask = lane_mask(cols - c);
        __m256 acc = _mm256_maskload_ps(y + c, mask);
        for (uint32_t r = 0; r < rows; ++r) {
            const uint8_t* p = m + r * rowBytes;
            const __m256 v = half ? load_f16_tail(reinterpret_cast<const uint16_t*>(p) + c, cols - c)
                                  : _mm256_maskload_ps(reinterpret_cast<const float*>(p) + c, mask);
            acc = _mm256_fmadd_ps(_mm256_set1_ps(w[r]), v, acc);
        }
        _mm256_maskstore_ps(y + c, mask, acc);
    }
}

const Kernels& avx2_table() {
    static constexpr Kernels kTable{.isa = Isa::Avx2, .tile_matvec = &tile_matvec_avx2, .dot = &dot_avx2, .axpy = &axpy_avx2,
                                    .dot_f16 = &dot_f16_avx2, .axpy_f16 = &axpy_f16_avx2,
                                    .weighted_row_sum = &weighted_row_sum_avx2};
    return kTable;
}

} // namespace cflow::kernels

#endif // CFLOW_KERNELS_X86
