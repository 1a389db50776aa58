// AVX-512 F/BW/VL/DQ kernels (compiled with those flags; run only after isa_supported(Avx512)).
// Same structure as the AVX2 path at 512 bits: four rows per pass share each x load, one
// _mm512_reduce_add_ps per row per tile. Column tails and the partial last Q group use masked
// loads, which never fault on masked-out lanes, so nothing past the payload or x[cols - 1] is read.
// No std:: templates or header inline functions here (see kernels_avx2.cpp for why).
#include "kernels/kernels_internal.h"
#include "kernels/ggml_tile_kernels.h"
#include "kernels/kquant_kernels.h"

#if CFLOW_KERNELS_X86
#include "cflow/base/x86_intrinsics.h"

namespace cflow::kernels {

namespace {

constexpr int kRowBlock = 4;
constexpr uint32_t kGroup = 32;  // kQuantGroup

// First n lanes of 16 (n may exceed 16).
__mmask16 first_lanes(uint32_t n) {
    return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

template <int R>
void f32_rows(const uint8_t* payload, uint32_t r0, uint32_t cols, const float* x, float* y) {
    const size_t rowBytes = static_cast<size_t>(cols) * sizeof(float);
    const float* w[R];  // R x [cols] f32 rows
    __m512 acc[R];
    CFLOW_UNROLL_ROWS
    for (int i = 0; i < R; ++i) {
        w[i] = reinterpret_cast<const float*>(payload + (r0 + i) * rowBytes);
        acc[i] = _mm512_setzero_ps();
    }
    uint32_t c = 0;
    for (; c + 16 <= cols; c += 16) {
        const __m512 xv = _mm512_loadu_ps(x + c);
        CFLOW_UNROLL_ROWS
        for (int i = 0; i < R; ++i) acc[i] = _mm512_fmadd_ps(_mm512_loadu_ps(w[i] + c), xv, acc[i]);
    }
    if (c < cols) {
        const __mmask16 m = first_lanes(cols - c);
        const __m512 xv = _mm512_maskz_loadu_ps(m, x + c);
        CFLOW_UNROLL_ROWS
        for (int i = 0; i < R; ++i) acc[i] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w[i] + c), xv, acc[i]);
    }
    CFLOW_UNROLL_ROWS
    for (int i = 0; i < R; ++i) y[r0 + i] += _mm512_reduce_add_ps(acc[i]);
}

template <int R>
void f16_rows(const uint8_t* payload, uint32_t r0, uint32_t cols, const float* x, float* y) {
    const size_t rowBytes = static_cast<size_t>(cols) * sizeof(uint16_t);
    const uint8_t* w[R];  // R x [cols] f16 rows
    __m512 acc[R];
    CFLOW_UNROLL_ROWS
    for (int i = 0; i < R; ++i) {
        w[i] = payload + (r0 + i) * rowBytes;
        acc[i] = _mm512_setzero_ps();
    }
    uint32_t c = 0;
    for (; c + 16 <= cols; c += 16) {
        const __m512 xv = _mm512_loadu_ps(x + c);
        CFLOW_UNROLL_ROWS
        for (int i = 0; i < R; ++i) {
            const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i] + c * sizeof(uint16_t)));
            acc[i] = _mm512_fmadd_ps(_mm512_cvtph_ps(h), xv, acc[i]);
        }
    }
    if (c < cols) {
        const __mmask16 m = first_lanes(cols - c);
        const __m512 xv = _mm512_maskz_loadu_ps(m, x + c);
        CFLOW_UNROLL_ROWS
        for (int i = 0; i < R; ++i) {
            const __m256i h = _mm256_maskz_loadu_epi16(m, w[i] + c * sizeof(uint16_t));
            acc[i] = _mm512_fmadd_ps(_mm512_cvtph_ps(h), xv, acc[i]);
        }
    }
    CFLOW_UNROLL_ROWS
    for (int i = 0; i < R; ++i) y[r0 + i] += _mm512_reduce_add_ps(acc[i]);
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
    __m512 acc[R];
    CFLOW_UNROLL_ROWS
    for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
    for (uint32_t g0 = 0; g0 < groups; g0 += kScaleChunk) {
        const uint32_t chunk = groups - g0 < kScaleChunk ? groups - g0 : kScaleChunk;
        // Scales as f32 in memory so that each group's scale is an embedded-broadcast FMA operand
        // (no per-group convert + broadcast shuffle on port 5).
        alignas(32) float rowScales[R][kScaleChunk];  // [R x chunk] f32
        CFLOW_UNROLL_ROWS
        for (int i = 0; i < R; ++i) {
            const uint8_t* s16 = scales + (static_cast<size_t>(r0 + i) * groups + g0) * sizeof(uint16_t);
            const __m128i h = _mm_maskz_loadu_epi16(static_cast<__mmask8>((1u << chunk) - 1u), s16);
            _mm256_store_ps(rowScales[i], _mm256_cvtph_ps(h));
        }
        for (uint32_t k = 0; k < chunk; ++k) {
            const uint32_t g = g0 + k;
            const uint32_t first = g * kGroup;
            const uint32_t valid = cols - first;  // may exceed 32; first_lanes clamps
            // x for weights 0..15 and 16..31 of the group, zero past cols
            const __m512 x0 = _mm512_maskz_loadu_ps(first_lanes(valid), x + first);
            const __m512 x1 = valid > 16 ? _mm512_maskz_loadu_ps(first_lanes(valid - 16), x + first + 16) : _mm512_setzero_ps();
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
                __m512 s = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo)), x0);
                s = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi)), x1, s);
                acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(rowScales[i][k]), s, acc[i]);
            }
        }
    }
    CFLOW_UNROLL_ROWS
    for (int i = 0; i < R; ++i) y[r0 + i] += _mm512_reduce_add_ps(acc[i]);
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
    case DType::Q6_K:  // handled by tile_matvec_avx512 before the row blocks
    case DType::BF16:
    case DType::GgmlBlock: break;  // not tile dtypes; the reader rejects it (see kernels_scalar.cpp)
    default: break;  // the other ggml-block tiles: handled by tile_matvec_avx512 before the row blocks
    }
}

} // namespace

void tile_matvec_avx512(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y) {
    if (is_kquant(dtype)) return kquant_matvec_f32_avx512(dtype, payload, rows, cols, x, y);
    // Q2_K, Q3_K, IQ4_XS, Q4_1, Q5_0, Q5_1, IQ4_NL: dequantise each row, then FMA (ggml_tile_kernels.h).
    // The int8 paths reach this too: these types have no int8 kernels (not in quantized_dtypes).
    if (uses_ggml_tile_f32(dtype)) return ggml_tile_matvec_f32_avx512(dtype, payload, rows, cols, x, y);
    uint32_t r = 0;
    for (; r + kRowBlock <= rows; r += kRowBlock) rows_for<kRowBlock>(dtype, payload, rows, r, cols, x, y);
    for (; r < rows; ++r) rows_for<1>(dtype, payload, rows, r, cols, x, y);
}

float dot_avx512(const float* a, const float* b, size_t n) {
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    size_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (int k = 0; k < 4; ++k)
            acc[k] = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16 * k), _mm512_loadu_ps(b + i + 16 * k), acc[k]);
    for (; i + 16 <= n; i += 16) acc[0] = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc[0]);
    if (i < n) {
        const __mmask16 m = first_lanes(static_cast<uint32_t>(n - i));
        acc[1] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc[1]);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
}

void axpy_avx512(float alpha, const float* x, float* y, size_t n) {
    const __m512 a = _mm512_set1_ps(alpha);
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(a, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
    if (i < n) {
        const __mmask16 m = first_lanes(static_cast<uint32_t>(n - i));
        _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(a, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
    }
}

namespace {

__m512 load_f16x16(const uint16_t* b) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b))); }
__m512 load_f16x16_masked(__mmask16 m, const uint16_t* b) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, b)); }

} // namespace

float dot_f16_avx512(const float* a, const uint16_t* b, size_t n) {
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    size_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (int k = 0; k < 4; ++k) acc[k] = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16 * k), load_f16x16(b + i + 16 * k), acc[k]);
    for (; i + 16 <= n; i += 16) acc[0] = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), load_f16x16(b + i), acc[0]);
    if (i < n) {
        const __mmask16 m = first_lanes(static_cast<uint32_t>(n - i));
        acc[1] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), load_f16x16_masked(m, b + i), acc[1]);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
}

void axpy_f16_avx512(float alpha, const uint16_t* x, float* y, size_t n) {
    const __m512 a = _mm512_set1_ps(alpha);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_fmadd_ps(a, load_f16x16(x + i), _mm512_loadu_ps(y + i)));
    if (i < n) {
        const __mmask16 m = first_lanes(static_cast<uint32_t>(n - i));
        _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(a, load_f16x16_masked(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
    }
}

// Columns in blocks of 64 (four zmm accumulators held across all rows), then 16, then a masked
// tail: per element the fused multiply-adds of axpy_avx512 in row order.
void weighted_row_sum_avx512(DType dtype, const uint8_t* m, uint32_t rows, uint32_t cols, const float* w, float* y) {
    const bool half = dtype == DType::F16;
    const size_t rowBytes = size_t(cols) * (half ? 2 : 4);
    auto load = [&](uint32_t r, uint32_t c, __mmask16 lanes) {
        const uint8_t* p = m + r * rowBytes;
        return half ? load_f16x16_masked(lanes, reinterpret_cast<const uint16_t*>(p) + c)
                    : _mm512_maskz_loadu_ps(lanes, reinterpret_cast<const float*>(p) + c);
    };
    const __mmask16 all = 0xFFFF;
    uint32_t c = 0;
    for (; c + 64 <= cols; c += 64) {
        __m512 acc[4];
        for (int k = 0; k < 4; ++k) acc[k] = _mm512_loadu_ps(y + c + 16 * k);
        for (uint32_t r = 0; r < rows; ++r) {
            const __m512 a = _mm512_set1_ps(w[r]);
            for (int k = 0; k < 4; ++k) acc[k] = _mm512_fmadd_ps(a, load(r, c + 16 * k, all), acc[k]);
        }
        for (int k = 0; k < 4; ++k) _mm512_storeu_ps(y + c + 16 * k, acc[k]);
    }
    for (; c < cols; c += 16) {
        const __mmask16 lanes = first_lanes(cols - c);
        __m512 acc = _mm512_maskz_loadu_ps(lanes, y + c);
        for (uint32_t r = 0; r < rows; ++r) acc = _mm512_fmadd_ps(_mm512_set1_ps(w[r]), load(r, c, lanes), acc);
        _mm512_mask_storeu_ps(y + c, lanes, acc);
    }
}

const Kernels& avx512_table() {
    static constexpr Kernels kTable{.isa = Isa::Avx512, .tile_matvec = &tile_matvec_avx512, .dot = &dot_avx512,
                                    .axpy = &axpy_avx512, .dot_f16 = &dot_f16_avx512, .axpy_f16 = &axpy_f16_avx512,
                                    .weighted_row_sum = &weighted_row_sum_avx512};
    return kTable;
}

} // namespace cflow::kernels

#endif // CFLOW_KERNELS_X86
