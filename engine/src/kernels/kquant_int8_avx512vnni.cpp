// K-quant tiles with int8 activations, AVX-512 VNNI path. quantize_slice is the shared body,
// kquant_int8_body.inc; matvec (decode, where the weights stream once per token and the per-row
// overhead decides the speed) and matmat (prefill, where the multiply-adds do) have their own
// 512-bit kernels below.
#include "kernels/kquant_kernels.h"

#if CFLOW_KERNELS_X86
#include <immintrin.h>

#define CFLOW_KQ_NAMESPACE cflow::kernels::kq_int8_avx512vnni
#define CFLOW_KQ_OWN_MATVEC 1
#define CFLOW_KQ_OWN_MATMAT 1
#include "kernels/kquant_int8_body.inc"

// The 512-bit kernels. Per row they compute the same exact integers S and M as the body's
// kq_row_token and end in the same kq_finish_* functions, so their results equal the body's bit
// for bit (and matmat equals matvec per token). What makes them faster than the body's:
//  * 4 rows per pass: their S and M are reduced to one [4] int32 vector each with a hadd tree and
//    finished with one 4-lane f32 step, instead of two horizontal sums and scalar f32 per row;
//  * a zmm holds two 32-weight chunks, unpacked straight from 64 bytes of packed quants; the
//    activations are rearranged once per call (matmat: once per token) into the chunk pairs that
//    unpacking produces;
//  * per chunk pair one vpmaddubsw (int16 pair sums, <= 2 * 63 * 127 = 16002, never saturating)
//    and one vpdpwssd with the chunk scales in int16 lanes, in place of vpdpbusd + vpmulld + add;
//  * scale vectors come from one broadcast and an in-lane shuffle (Q4_K / Q5_K) or a word permute
//    (Q6_K), with the shuffle controls built once per call.
// matvec unpacks and dots each row in registers; matmat unpacks a group of 4 rows once into L1
// and dots it with every token of a block, two tokens per pass.
namespace cflow::kernels::kq_int8_avx512vnni {
namespace {  // the body's anonymous namespace, reopened

constexpr uint32_t kZmmRows = 4;  // rows per pass
constexpr int kZmmPairs = 4;      // zmm chunk pairs per super-block

// Per-call shuffle controls that spread each row's scales over the chunk pairs.
// Q4_K / Q5_K pair j holds chunks (a, b) = (4 (j / 2) + j % 2, a + 2): (0,2) (1,3) (4,6) (5,7),
//   as the low / high nibbles of 64 packed bytes give them. Q6_K pair j holds chunks (2j, 2j + 1).
struct KqZmmUnpack {
    __m512i pick[kZmmPairs];   // Q4_K / Q5_K: [64] pshufb control, lanes 0-1 word a, lanes 2-3 word b
                               // Q6_K: [32] vpermw index, word w -> scale 4j + w / 8
    __m512i bitSel[kZmmPairs]; // Q5_K: [64] u8 qh bit of chunk a (low half) / b (high half)
};

// One token's activations in the chunk-pair order of the weight unpacking.
struct KqZmmX {
    __m512i x[kZmmPairs];  // [4 pairs][64] int8 xq
    __m256i sums;          // Q4_K / Q5_K: [8] int16 sum32 in the low half, high half zero; Q6_K: [16] int16 sum16
    float step;            // the slice's dx
};

int kq_pair_first(int j) { return 4 * (j / 2) + j % 2; }

// The all-ones maskz forms of insert / extract / broadcast (no 256 <-> 512 casts): the same
// instructions, but GCC 12's unmasked forms and casts pass an "undefined" source that
// -Wuninitialized flags once inlined here.
constexpr __mmask8 kAllQwords = 0xFF;
constexpr __mmask16 kAllDwords = 0xFFFF;

// Two 256-bit halves as one zmm.
__m512i kq_join(__m256i low, __m256i high) {
    return _mm512_maskz_inserti64x4(kAllQwords, _mm512_maskz_broadcast_i64x4(kAllQwords, low), high, 1);
}

template <DType kType>
KqZmmUnpack kq_zmm_unpack_consts() {
    KqZmmUnpack u;
    CFLOW_UNROLL_ROWS
    for (int j = 0; j < kZmmPairs; ++j) {
        if constexpr (kType == DType::Q6_K) {
            const long long lane = 0x0001000100010001LL;  // word w of lane L picks scale 4j + L
            u.pick[j] = _mm512_add_epi16(_mm512_set_epi64(3 * lane, 3 * lane, 2 * lane, 2 * lane, lane, lane, 0, 0),
                                         _mm512_set1_epi16(static_cast<short>(4 * j)));
            u.bitSel[j] = _mm512_setzero_si512();
        } else {
            const int a = kq_pair_first(j), b = a + 2;
            // pshufb bytes (2w, 2w + 1) copy int16 word w of the broadcast scales.
            u.pick[j] = _mm512_mask_blend_epi64(0xF0, _mm512_set1_epi16(static_cast<short>(0x0100 + 0x0202 * a)),
                                                _mm512_set1_epi16(static_cast<short>(0x0100 + 0x0202 * b)));
            u.bitSel[j] = kq_join(_mm256_set1_epi8(static_cast<char>(1 << a)), _mm256_set1_epi8(static_cast<char>(1 << b)));
        }
    }
    return u;
}

template <DType kType>
KqZmmX kq_zmm_x(const KqSlice& xs) {
    KqZmmX k;
    const auto* xq = reinterpret_cast<const __m256i*>(xs.q);  // [8 chunks][32] int8
    CFLOW_UNROLL_ROWS
    for (int j = 0; j < kZmmPairs; ++j) {
        const int a = kType == DType::Q6_K ? 2 * j : kq_pair_first(j);
        const int b = kType == DType::Q6_K ? a + 1 : a + 2;
        k.x[j] = kq_join(_mm256_load_si256(xq + a), _mm256_load_si256(xq + b));
    }
    if constexpr (kType == DType::Q6_K)
        k.sums = _mm256_load_si256(reinterpret_cast<const __m256i*>(xs.sum16));
    else
        k.sums = _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xs.sum32)));
    k.step = xs.step;
    return k;
}

// One row unpacked: its quants and scales in chunk pairs, and what its M term multiplies.
struct KqZmmRow {
    __m512i q[kZmmPairs];      // [4 pairs][64] u8 quants (Q6_K unsigned)
    __m512i scale[kZmmPairs];  // [4 pairs][32] int16 scale of each weight pair
    __m256i corr;              // Q4_K / Q5_K: [8] int16 mins, high half zero; Q6_K: [16] int16 scales
};

// Q4_K / Q5_K: S = sum_c sc_c (q_c . xq_c), M = sum_c mn_c sum32_c.
template <bool kFifthBit>
CFLOW_KQ_INLINE void kq_zmm_unpack_q45(const uint8_t* block, const KqZmmUnpack& u, KqZmmRow& row) {
    const KqScaleMin sm = kq_scale_min(block + 4);
    const __m512i scales = _mm512_maskz_broadcast_i32x4(kAllDwords, _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm.scale))));
    const uint8_t* qs = block + 4 + 12 + (kFifthBit ? 32 : 0);  // [128] nibble pairs
    const __m512i lowNibbles = _mm512_set1_epi8(0x0F);
    __m512i qh = _mm512_setzero_si512();  // [2][32] u8 fifth-bit planes, both halves the same
    if constexpr (kFifthBit) qh = _mm512_maskz_broadcast_i64x4(kAllQwords, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 16)));
    CFLOW_UNROLL_ROWS
    for (int half = 0; half < 2; ++half) {
        const __m512i packed = _mm512_loadu_si512(qs + 64 * half);
        CFLOW_UNROLL_ROWS
        for (int nib = 0; nib < 2; ++nib) {
            const int j = 2 * half + nib;
            __m512i q = _mm512_and_si512(nib == 0 ? packed : _mm512_srli_epi16(packed, 4), lowNibbles);
            if constexpr (kFifthBit)
                q = _mm512_mask_add_epi8(q, _mm512_test_epi8_mask(qh, u.bitSel[j]), q, _mm512_set1_epi8(16));
            row.q[j] = q;
            row.scale[j] = _mm512_shuffle_epi8(scales, u.pick[j]);
        }
    }
    row.corr = _mm256_zextsi128_si256(_mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm.min))));
}

// Q6_K: S = sum_g sc_g (q_g . xq_g) with q unsigned 0..63, M = sum_g sc_g sum16_g (16-weight groups g).
CFLOW_KQ_INLINE void kq_zmm_unpack_q6(const uint8_t* block, const KqZmmUnpack& u, KqZmmRow& row) {
    const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 192)));
    const __m512i scales = _mm512_maskz_broadcast_i64x4(kAllQwords, scales16);  // vpermw reads words 0-15
    const __m512i lowNibbles = _mm512_set1_epi8(0x0F);
    const __m512i highBits = _mm512_set1_epi8(0x30);
    // Shift counts of the high-bit pairs, per 16-bit word: pair (4n, 4n+1) takes bits 0 / 2 of
    // qh, pair (4n+2, 4n+3) bits 4 / 6 (the 32-byte halves of the zmm).
    const __m512i shiftLowPair = kq_join(_mm256_set1_epi16(0), _mm256_set1_epi16(2));
    const __m512i shiftHighPair = kq_join(_mm256_set1_epi16(4), _mm256_set1_epi16(6));
    CFLOW_UNROLL_ROWS
    for (int n = 0; n < 2; ++n) {
        const __m512i ql = _mm512_loadu_si512(block + 64 * n);  // [64] low 4 bits of chunks 4n..4n+3
        const __m512i qh = _mm512_maskz_broadcast_i64x4(kAllQwords, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 128 + 32 * n)));
        CFLOW_UNROLL_ROWS
        for (int p = 0; p < 2; ++p) {
            const int j = 2 * n + p;
            const __m512i low = _mm512_and_si512(p == 0 ? ql : _mm512_srli_epi16(ql, 4), lowNibbles);
            // (qh >> 2s) & 3 moved to bits 4-5; the 16-bit shifts only move bits that the mask drops.
            const __m512i high = _mm512_and_si512(_mm512_slli_epi16(_mm512_srlv_epi16(qh, p == 0 ? shiftLowPair : shiftHighPair), 4), highBits);
            row.q[j] = _mm512_or_si512(low, high);
            row.scale[j] = _mm512_permutexvar_epi16(u.pick[j], scales);
        }
    }
    row.corr = scales16;
}

template <DType kType>
CFLOW_KQ_INLINE void kq_zmm_unpack(const uint8_t* block, const KqZmmUnpack& u, KqZmmRow& row) {
    if constexpr (kType == DType::Q6_K)
        kq_zmm_unpack_q6(block, u, row);
    else
        kq_zmm_unpack_q45<kType == DType::Q5_K>(block, u, row);
}

// [16] int32 partial S of one row and one token.
CFLOW_KQ_INLINE __m512i kq_zmm_dot(const KqZmmRow& row, const KqZmmX& x) {
    __m512i acc = _mm512_setzero_si512();
    CFLOW_UNROLL_ROWS
    for (int j = 0; j < kZmmPairs; ++j) acc = _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(row.q[j], x.x[j]), row.scale[j]);
    return acc;
}

__m256i kq_fold(__m512i v) { return _mm256_add_epi32(_mm512_maskz_extracti64x4_epi64(kAllQwords, v, 0), _mm512_maskz_extracti64x4_epi64(kAllQwords, v, 1)); }

// [4] f32 of the f16 at offset `at` of each block.
__m128 kq_load_f16x4(const uint8_t* const blocks[kZmmRows], uint32_t at) {
    uint16_t h[kZmmRows];
    CFLOW_UNROLL_ROWS
    for (uint32_t i = 0; i < kZmmRows; ++i) __builtin_memcpy(&h[i], blocks[i] + at, 2);
    return _mm_cvtph_ps(_mm_setr_epi16(static_cast<short>(h[0]), static_cast<short>(h[1]), static_cast<short>(h[2]),
                                       static_cast<short>(h[3]), 0, 0, 0, 0));
}

// The 4 rows' f32 results for one token: y[0..valid) += their dots. s: [4 rows][16] int32
// partial S; corr: the rows' M multipliers.
template <DType kType>
void kq_zmm_finish(const __m512i s[kZmmRows], const __m256i corr[kZmmRows], const KqZmmX& x, __m128 d, __m128 dmin,
                   __mmask8 lanes, float* y) {
    const __m128i sumQ = kq_row_sums(kq_fold(s[0]), kq_fold(s[1]), kq_fold(s[2]), kq_fold(s[3]));
    const __m128i sumM = kq_row_sums(_mm256_madd_epi16(corr[0], x.sums), _mm256_madd_epi16(corr[1], x.sums),
                                     _mm256_madd_epi16(corr[2], x.sums), _mm256_madd_epi16(corr[3], x.sums));
    const __m128 y0 = _mm_maskz_loadu_ps(lanes, y);
    __m128 out;
    if constexpr (kType == DType::Q6_K)
        out = kq_finish_q6(y0, sumQ, sumM, d, x.step);
    else
        out = kq_finish_q45(y0, sumQ, sumM, d, dmin, x.step);
    _mm_mask_storeu_ps(y, lanes, out);
}

// The blocks of a pass of up to 4 rows: a last pass of 1-3 rows repeats its first row in the
// missing slots (masked out of the load and store of y).
void kq_pass_blocks(const uint8_t* first, uint32_t valid, uint32_t blockBytes, const uint8_t* blocks[kZmmRows]) {
    CFLOW_UNROLL_ROWS
    for (uint32_t i = 0; i < kZmmRows; ++i) blocks[i] = first + (i < valid ? i : 0) * blockBytes;
}

template <DType kType>
void kq_rows_zmm(const uint8_t* payload, uint32_t rows, const KqSlice& xs, float* y) {
    constexpr uint32_t kBlockBytes = kType == DType::Q4_K ? kKqQ4Bytes : kType == DType::Q5_K ? kKqQ5Bytes : kKqQ6Bytes;
    const bool prefetch = ::cflow::kernels::g_explicit_prefetch.load(std::memory_order_relaxed);
    const KqZmmUnpack u = kq_zmm_unpack_consts<kType>();
    const KqZmmX x = kq_zmm_x<kType>(xs);
    for (uint32_t r = 0; r < rows; r += kZmmRows) {
        const uint32_t valid = rows - r < kZmmRows ? rows - r : kZmmRows;
        const uint8_t* first = payload + static_cast<size_t>(r) * kBlockBytes;
        if (prefetch)
            for (uint32_t off = 0; off < kZmmRows * kBlockBytes; off += 64)
                _mm_prefetch(reinterpret_cast<const char*>(first + kKqPrefetchBytes + off), _MM_HINT_T0);
        const uint8_t* blocks[kZmmRows];
        kq_pass_blocks(first, valid, kBlockBytes, blocks);
        __m512i s[kZmmRows];
        __m256i corr[kZmmRows];
        CFLOW_UNROLL_ROWS
        for (uint32_t i = 0; i < kZmmRows; ++i) {
            KqZmmRow row;  // lives in registers: unpacked and dotted at once
            kq_zmm_unpack<kType>(blocks[i], u, row);
            s[i] = kq_zmm_dot(row, x);
            corr[i] = row.corr;
        }
        const __m128 dmin = kType == DType::Q6_K ? _mm_setzero_ps() : kq_load_f16x4(blocks, 2);
        kq_zmm_finish<kType>(s, corr, x, kq_load_f16x4(blocks, kType == DType::Q6_K ? 208 : 0), dmin,
                             static_cast<__mmask8>((1u << valid) - 1u), y + r);
    }
}

// Tokens per block of the batched kernel: their rearranged activations (320 bytes each) stay in
// L1 beside one unpacked group of rows (2 KB), and each group is unpacked once per block.
constexpr uint32_t kZmmTokenBlock = 32;

template <DType kType>
void kq_rows_tokens_zmm(const uint8_t* payload, uint32_t rows, const uint8_t* slices, size_t sliceStride, uint32_t tokens,
                        float* y, size_t yStride) {
    constexpr uint32_t kBlockBytes = kType == DType::Q4_K ? kKqQ4Bytes : kType == DType::Q5_K ? kKqQ5Bytes : kKqQ6Bytes;
    const KqZmmUnpack u = kq_zmm_unpack_consts<kType>();
    KqZmmX xs[kZmmTokenBlock];  // [token block] rearranged activations
    for (uint32_t tb = 0; tb < tokens; tb += kZmmTokenBlock) {
        const uint32_t blockTokens = tokens - tb < kZmmTokenBlock ? tokens - tb : kZmmTokenBlock;
        for (uint32_t t = 0; t < blockTokens; ++t)
            xs[t] = kq_zmm_x<kType>(*reinterpret_cast<const KqSlice*>(slices + (tb + t) * sliceStride));
        for (uint32_t r = 0; r < rows; r += kZmmRows) {
            const uint32_t valid = rows - r < kZmmRows ? rows - r : kZmmRows;
            const __mmask8 lanes = static_cast<__mmask8>((1u << valid) - 1u);
            const uint8_t* blocks[kZmmRows];
            kq_pass_blocks(payload + static_cast<size_t>(r) * kBlockBytes, valid, kBlockBytes, blocks);
            KqZmmRow group[kZmmRows];  // [4 rows] unpacked once per token block
            __m256i corr[kZmmRows];
            CFLOW_UNROLL_ROWS
            for (uint32_t i = 0; i < kZmmRows; ++i) {
                kq_zmm_unpack<kType>(blocks[i], u, group[i]);
                corr[i] = group[i].corr;
            }
            const __m128 d = kq_load_f16x4(blocks, kType == DType::Q6_K ? 208 : 0);
            const __m128 dmin = kType == DType::Q6_K ? _mm_setzero_ps() : kq_load_f16x4(blocks, 2);
            uint32_t t = 0;
            for (; t + 2 <= blockTokens; t += 2) {  // two tokens per pass: each unpacked row read once for both
                __m512i s0[kZmmRows], s1[kZmmRows];
                CFLOW_UNROLL_ROWS
                for (uint32_t i = 0; i < kZmmRows; ++i) {
                    __m512i a0 = _mm512_setzero_si512(), a1 = _mm512_setzero_si512();
                    CFLOW_UNROLL_ROWS
                    for (int j = 0; j < kZmmPairs; ++j) {
                        a0 = _mm512_dpwssd_epi32(a0, _mm512_maddubs_epi16(group[i].q[j], xs[t].x[j]), group[i].scale[j]);
                        a1 = _mm512_dpwssd_epi32(a1, _mm512_maddubs_epi16(group[i].q[j], xs[t + 1].x[j]), group[i].scale[j]);
                    }
                    s0[i] = a0;
                    s1[i] = a1;
                }
                kq_zmm_finish<kType>(s0, corr, xs[t], d, dmin, lanes, y + (tb + t) * yStride + r);
                kq_zmm_finish<kType>(s1, corr, xs[t + 1], d, dmin, lanes, y + (tb + t + 1) * yStride + r);
            }
            if (t < blockTokens) {
                __m512i s[kZmmRows];
                CFLOW_UNROLL_ROWS
                for (uint32_t i = 0; i < kZmmRows; ++i) s[i] = kq_zmm_dot(group[i], xs[t]);
                kq_zmm_finish<kType>(s, corr, xs[t], d, dmin, lanes, y + (tb + t) * yStride + r);
            }
        }
    }
}

} // namespace

// Every row is one super-block of 256 columns; cols < 256 is served by the zero padding of the
// slice (the weights past cols meet xq = 0).
void matvec_quantized(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t /*cols*/, const void* slice, float* y) {
    const auto& xs = *static_cast<const KqSlice*>(slice);
    switch (dtype) {
    case DType::Q4_K: kq_rows_zmm<DType::Q4_K>(payload, rows, xs, y); break;
    case DType::Q5_K: kq_rows_zmm<DType::Q5_K>(payload, rows, xs, y); break;
    case DType::Q6_K: kq_rows_zmm<DType::Q6_K>(payload, rows, xs, y); break;
    default: break;  // callers route only K-quants here
    }
}

// Bit-identical to matvec_quantized per token: the same integers through the same kq_zmm_finish.
void matmat_quantized(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t /*cols*/, const uint8_t* slices,
                      size_t sliceStride, uint32_t tokens, float* y, size_t yStride) {
    switch (dtype) {
    case DType::Q4_K: kq_rows_tokens_zmm<DType::Q4_K>(payload, rows, slices, sliceStride, tokens, y, yStride); break;
    case DType::Q5_K: kq_rows_tokens_zmm<DType::Q5_K>(payload, rows, slices, sliceStride, tokens, y, yStride); break;
    case DType::Q6_K: kq_rows_tokens_zmm<DType::Q6_K>(payload, rows, slices, sliceStride, tokens, y, yStride); break;
    default: break;
    }
}

void matvec(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y) {
    KqSlice xs;
    kq_quantize(x, cols, xs);
    matvec_quantized(dtype, payload, rows, cols, &xs, y);
}

} // namespace cflow::kernels::kq_int8_avx512vnni

#endif // CFLOW_KERNELS_X86
