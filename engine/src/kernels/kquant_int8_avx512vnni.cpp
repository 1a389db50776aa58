// K-quant tiles with int8 activations, AVX-512 VNNI path. quantize_slice and matmat_quantized
// (prefill) are the shared 256-bit body, kquant_int8_body.inc (EVEX vpdpbusd on ymm); matvec
// (decode, where the weights stream once per token and the per-row overhead decides the speed)
// has its own 512-bit kernel below.
#include "kernels/kquant_kernels.h"

#if CFLOW_KERNELS_X86
#include <immintrin.h>

#define CFLOW_KQ_VNNI 1
#define CFLOW_KQ_DPBUSD(acc, u8, s8) _mm256_dpbusd_epi32(acc, u8, s8)
#define CFLOW_KQ_NAMESPACE cflow::kernels::kq_int8_avx512vnni
#define CFLOW_KQ_OWN_MATVEC 1
#include "kernels/kquant_int8_body.inc"

// The 512-bit matvec. Per row it computes the same exact integers S and M as the body's
// kq_row_token and ends in the same kq_finish_* functions, so its results equal the body's (and
// matmat's) bit for bit. What makes it faster than the body's row loop:
//  * 4 rows per pass: their S and M are reduced to one [4] int32 vector each with a hadd tree and
//    finished with one 4-lane f32 step, instead of two horizontal sums and scalar f32 per row;
//  * a zmm holds two 32-weight chunks, unpacked straight from 64 bytes of packed quants; the
//    activations are rearranged once per call into the chunk pairs that unpacking produces;
//  * per chunk pair one vpmaddubsw (int16 pair sums, <= 2 * 63 * 127 = 16002, never saturating)
//    and one vpdpwssd with the chunk scales in int16 lanes, in place of vpdpbusd + vpmulld + add;
//  * scale vectors come from one broadcast and an in-lane shuffle (Q4_K / Q5_K) or a word permute
//    (Q6_K), with the shuffle controls built once per call.
namespace cflow::kernels::kq_int8_avx512vnni {
namespace {  // the body's anonymous namespace, reopened

constexpr uint32_t kZmmRows = 4;  // rows per pass
constexpr int kZmmPairs = 4;      // zmm chunk pairs per super-block

// Per-call constants: the activations in the chunk-pair order of the weight unpacking, and the
// shuffle controls that spread each row's scales over those pairs.
// Q4_K / Q5_K pair j holds chunks (a, b) = (4 (j / 2) + j % 2, a + 2): (0,2) (1,3) (4,6) (5,7),
//   as the low / high nibbles of 64 packed bytes give them. Q6_K pair j holds chunks (2j, 2j + 1).
struct KqZmmConsts {
    __m512i x[kZmmPairs];      // [4 pairs][64] int8 xq
    __m512i pick[kZmmPairs];   // Q4_K / Q5_K: [64] pshufb control, lanes 0-1 word a, lanes 2-3 word b
                               // Q6_K: [32] vpermw index, word w -> scale 4j + w / 8
    __m512i bitSel[kZmmPairs]; // Q5_K: [64] u8 qh bit of chunk a (low half) / b (high half)
    __m256i sums;              // Q4_K / Q5_K: [8] int16 sum32 in the low half; Q6_K: [16] int16 sum16
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
KqZmmConsts kq_zmm_consts(const KqSlice& xs) {
    KqZmmConsts k;
    const auto* xq = reinterpret_cast<const __m256i*>(xs.q);  // [8 chunks][32] int8
    CFLOW_UNROLL_ROWS
    for (int j = 0; j < kZmmPairs; ++j) {
        if constexpr (kType == DType::Q6_K) {
            k.x[j] = kq_join(_mm256_load_si256(xq + 2 * j), _mm256_load_si256(xq + 2 * j + 1));
            const long long lane = 0x0001000100010001LL;  // word w of lane L picks scale 4j + L
            k.pick[j] = _mm512_add_epi16(_mm512_set_epi64(3 * lane, 3 * lane, 2 * lane, 2 * lane, lane, lane, 0, 0),
                                         _mm512_set1_epi16(static_cast<short>(4 * j)));
        } else {
            const int a = kq_pair_first(j), b = a + 2;
            k.x[j] = kq_join(_mm256_load_si256(xq + a), _mm256_load_si256(xq + b));
            // pshufb bytes (2w, 2w + 1) copy int16 word w of the broadcast scales.
            k.pick[j] = _mm512_mask_blend_epi64(0xF0, _mm512_set1_epi16(static_cast<short>(0x0100 + 0x0202 * a)),
                                                _mm512_set1_epi16(static_cast<short>(0x0100 + 0x0202 * b)));
            k.bitSel[j] = kq_join(_mm256_set1_epi8(static_cast<char>(1 << a)), _mm256_set1_epi8(static_cast<char>(1 << b)));
        }
    }
    if constexpr (kType == DType::Q6_K)
        k.sums = _mm256_load_si256(reinterpret_cast<const __m256i*>(xs.sum16));
    else
        k.sums = _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xs.sum32)));
    return k;
}

// One row's integer sums, not yet reduced.
struct KqZmmRowSums {
    __m512i s;  // [16] int32 partial S
    __m256i m;  // [8] int32 partial M (Q4_K / Q5_K: the low 4, the rest zero)
};

// Q4_K / Q5_K: S = sum_c sc_c (q_c . xq_c), M = sum_c mn_c sum32_c.
template <bool kFifthBit>
KqZmmRowSums kq_zmm_row_q45(const uint8_t* block, const KqZmmConsts& k) {
    const KqScaleMin sm = kq_scale_min(block + 4);
    const __m512i scales = _mm512_maskz_broadcast_i32x4(kAllDwords, _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm.scale))));
    const uint8_t* qs = block + 4 + 12 + (kFifthBit ? 32 : 0);  // [128] nibble pairs
    const __m512i lowNibbles = _mm512_set1_epi8(0x0F);
    __m512i qh = _mm512_setzero_si512();  // [2][32] u8 fifth-bit planes, both halves the same
    if constexpr (kFifthBit) qh = _mm512_maskz_broadcast_i64x4(kAllQwords, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 16)));
    __m512i acc = _mm512_setzero_si512();
    CFLOW_UNROLL_ROWS
    for (int half = 0; half < 2; ++half) {
        const __m512i packed = _mm512_loadu_si512(qs + 64 * half);
        CFLOW_UNROLL_ROWS
        for (int nib = 0; nib < 2; ++nib) {
            const int j = 2 * half + nib;
            __m512i q = _mm512_and_si512(nib == 0 ? packed : _mm512_srli_epi16(packed, 4), lowNibbles);
            if constexpr (kFifthBit)
                q = _mm512_mask_add_epi8(q, _mm512_test_epi8_mask(qh, k.bitSel[j]), q, _mm512_set1_epi8(16));
            acc = _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(q, k.x[j]), _mm512_shuffle_epi8(scales, k.pick[j]));
        }
    }
    const __m128i mins = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm.min)));
    return {acc, _mm256_castsi128_si256(_mm_madd_epi16(mins, _mm256_castsi256_si128(k.sums)))};
}

// Q6_K: S = sum_g sc_g (q_g . xq_g) with q unsigned 0..63, M = sum_g sc_g sum16_g (16-weight groups g).
KqZmmRowSums kq_zmm_row_q6(const uint8_t* block, const KqZmmConsts& k) {
    const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 192)));
    const __m512i scales = _mm512_maskz_broadcast_i64x4(kAllQwords, scales16);  // vpermw reads words 0-15
    const __m512i lowNibbles = _mm512_set1_epi8(0x0F);
    const __m512i highBits = _mm512_set1_epi8(0x30);
    // Shift counts of the high-bit pairs, per 16-bit word: pair (4n, 4n+1) takes bits 0 / 2 of
    // qh, pair (4n+2, 4n+3) bits 4 / 6 (the 32-byte halves of the zmm).
    const __m512i shiftLowPair = kq_join(_mm256_set1_epi16(0), _mm256_set1_epi16(2));
    const __m512i shiftHighPair = kq_join(_mm256_set1_epi16(4), _mm256_set1_epi16(6));
    __m512i acc = _mm512_setzero_si512();
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
            const __m512i q = _mm512_or_si512(low, high);
            acc = _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(q, k.x[j]), _mm512_permutexvar_epi16(k.pick[j], scales));
        }
    }
    return {acc, _mm256_madd_epi16(scales16, k.sums)};
}

// [4 rows][8] int32 -> [4] int32: lane r = the sum of row r's 8 lanes.
__m128i kq_row_sums(__m256i r0, __m256i r1, __m256i r2, __m256i r3) {
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(r0, r1), _mm256_hadd_epi32(r2, r3));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
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

// Rows in passes of 4; a last pass of 1-3 rows repeats its first row in the missing slots and
// masks them out of the load and store of y.
template <DType kType>
void kq_rows_zmm(const uint8_t* payload, uint32_t rows, const KqSlice& xs, float* y) {
    constexpr uint32_t kBlockBytes = kType == DType::Q4_K ? kKqQ4Bytes : kType == DType::Q5_K ? kKqQ5Bytes : kKqQ6Bytes;
    const bool prefetch = ::cflow::kernels::g_explicit_prefetch.load(std::memory_order_relaxed);
    const KqZmmConsts k = kq_zmm_consts<kType>(xs);
    for (uint32_t r = 0; r < rows; r += kZmmRows) {
        const uint32_t valid = rows - r < kZmmRows ? rows - r : kZmmRows;
        const uint8_t* first = payload + static_cast<size_t>(r) * kBlockBytes;
        if (prefetch)
            for (uint32_t off = 0; off < kZmmRows * kBlockBytes; off += 64)
                _mm_prefetch(reinterpret_cast<const char*>(first + kKqPrefetchBytes + off), _MM_HINT_T0);
        const uint8_t* blocks[kZmmRows];
        KqZmmRowSums sums[kZmmRows];
        CFLOW_UNROLL_ROWS
        for (uint32_t i = 0; i < kZmmRows; ++i) {
            blocks[i] = first + (i < valid ? i : 0) * kBlockBytes;
            if constexpr (kType == DType::Q6_K)
                sums[i] = kq_zmm_row_q6(blocks[i], k);
            else
                sums[i] = kq_zmm_row_q45<kType == DType::Q5_K>(blocks[i], k);
        }
        const __m128i sumQ = kq_row_sums(kq_fold(sums[0].s), kq_fold(sums[1].s), kq_fold(sums[2].s), kq_fold(sums[3].s));
        const __m128i sumM = kq_row_sums(sums[0].m, sums[1].m, sums[2].m, sums[3].m);
        const __mmask8 lanes = static_cast<__mmask8>((1u << valid) - 1u);
        const __m128 y0 = _mm_maskz_loadu_ps(lanes, y + r);
        __m128 out;
        if constexpr (kType == DType::Q6_K)
            out = kq_finish_q6(y0, sumQ, sumM, kq_load_f16x4(blocks, 208), xs.step);
        else
            out = kq_finish_q45(y0, sumQ, sumM, kq_load_f16x4(blocks, 0), kq_load_f16x4(blocks, 2), xs.step);
        _mm_mask_storeu_ps(y + r, lanes, out);
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

void matvec(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y) {
    KqSlice xs;
    kq_quantize(x, cols, xs);
    matvec_quantized(dtype, payload, rows, cols, &xs, y);
}

} // namespace cflow::kernels::kq_int8_avx512vnni

#endif // CFLOW_KERNELS_X86
