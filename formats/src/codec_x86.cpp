#include "codec_x86.h"

#include <cstdlib>
#include <cstring>
#include <string_view>

#include "cflow/formats/tile_codec.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include "cflow/base/x86_intrinsics.h"
#define CFLOW_CODEC_X86 1
#endif

namespace cflow::codec_x86 {

#ifdef CFLOW_CODEC_X86
namespace {

__attribute__((target("avx2,f16c"))) void f16_row_avx2(const uint8_t* src, uint64_t n, float* out) {
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * 2))));
    for (; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + i * 2, 2);
        out[i] = f16_to_f32(h);
    }
}

// The 16 nibble bytes of one block: q4_index(v x id) of its 32 values in v[0..4) (8 each), with
// nibbles[j] = q[j] | q[16 + j] << 4. q4_index: NaN (0 x an infinite id, when the maximum is so
// small that 1/d overflows) -> 8, below 0 -> 0, above 15 -> 15; max/min return their second
// operand for a NaN.
__attribute__((target("avx2,f16c"))) inline void store_q4_nibbles_avx2(const __m256 v[4], __m256 vid, uint8_t* nibbles) {
    const __m256 half_offset = _mm256_set1_ps(8.5f), top = _mm256_set1_ps(15.0f);
    const __m256 zero = _mm256_setzero_ps(), nan_index = _mm256_set1_ps(8.0f);
    __m256i q[4];
    for (int i = 0; i < 4; ++i) {
        const __m256 t = _mm256_add_ps(_mm256_mul_ps(v[i], vid), half_offset);
        const __m256 clamped = _mm256_min_ps(_mm256_max_ps(t, zero), top);
        q[i] = _mm256_cvttps_epi32(_mm256_blendv_ps(clamped, nan_index, _mm256_cmp_ps(t, t, _CMP_UNORD_Q)));
    }
    // Narrowed 32 -> 16 -> 8 bits (packus works per 128-bit lane, the permutes put the lanes back in order).
    const __m256i n0 = _mm256_or_si256(q[0], _mm256_slli_epi32(q[2], 4));  // j = 0..7
    const __m256i n1 = _mm256_or_si256(q[1], _mm256_slli_epi32(q[3], 4));  // j = 8..15
    const __m256i words = _mm256_permute4x64_epi64(_mm256_packus_epi32(n0, n1), 0xD8);
    const __m256i bytes = _mm256_permute4x64_epi64(_mm256_packus_epi16(words, words), 0xD8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(nibbles), _mm256_castsi256_si128(bytes));
}

// The same operations as the scalar quantize_block_q4_0, in the same order (multiply, then
// add 8.5, clamp, truncate: no FMA in this target, so nothing is contracted), on 8 lanes.
__attribute__((target("avx2,f16c"))) bool quantize_q4_0_avx2(const float* x, uint16_t* scale, uint8_t* nibbles) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 infinity = _mm256_castsi256_ps(_mm256_set1_epi32(0x7f800000));
    __m256 v[4], a[4];
    int finite = 0xff;
    for (int i = 0; i < 4; ++i) {
        v[i] = _mm256_loadu_ps(x + 8 * i);
        a[i] = _mm256_and_ps(v[i], abs_mask);
        finite &= _mm256_movemask_ps(_mm256_cmp_ps(a[i], infinity, _CMP_LT_OQ));  // NaN compares false
    }
    if (finite != 0xff) return false;
    __m256 m = _mm256_max_ps(_mm256_max_ps(a[0], a[1]), _mm256_max_ps(a[2], a[3]));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
    const float amax = _mm_cvtss_f32(m4);
    // The scalar loop keeps the first element of largest magnitude, and +0 when all are zero.
    float max = 0.0f;
    if (amax > 0.0f) {
        const __m256 target = _mm256_set1_ps(amax);
        uint32_t hits = 0;
        for (int i = 0; i < 4; ++i)
            hits |= uint32_t(_mm256_movemask_ps(_mm256_cmp_ps(a[i], target, _CMP_EQ_OQ))) << (8 * i);
        max = x[__builtin_ctz(hits)];
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    // d is finite here: vcvtps2ph with round-to-nearest-even gives f32_to_f16's bits.
    *scale = static_cast<uint16_t>(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
    store_q4_nibbles_avx2(v, _mm256_set1_ps(id), nibbles);
    return true;
}

// q4_index of v x id on 16 lanes, narrowed to bytes. The arithmetic uses the explicit-rounding
// intrinsics: avx512f includes FMA, and GCC may contract a plain multiply-then-add into one
// (its _mm512_mul_ps/_mm512_add_ps are ordinary vector expressions), which would round once
// where the scalar path rounds twice.
__attribute__((target("avx512f"))) __m128i q4_indexes_avx512(__m512 v, __m512 vid) {
    constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m512 t = _mm512_add_round_ps(_mm512_mul_round_ps(v, vid, kRound), _mm512_set1_ps(8.5f), kRound);
    const __m512 clamped = _mm512_min_ps(_mm512_max_ps(t, _mm512_setzero_ps()), _mm512_set1_ps(15.0f));
    const __m512 index = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, t, _CMP_UNORD_Q), clamped, _mm512_set1_ps(8.0f));
    return _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(index));
}

// The AVX2 function's steps on two 16-lane registers holding x[0..16) and x[16..32).
__attribute__((target("avx512f,f16c"))) inline bool quantize_q4_0_zmm(__m512 v0, __m512 v1, uint16_t* scale,
                                                                      uint8_t* nibbles) {
    const __m512 infinity = _mm512_castsi512_ps(_mm512_set1_epi32(0x7f800000));
    const __m512 a0 = _mm512_abs_ps(v0), a1 = _mm512_abs_ps(v1);
    // NaN compares false: a block with a NaN or an infinity goes to the scalar path.
    if ((_mm512_cmp_ps_mask(a0, infinity, _CMP_LT_OQ) & _mm512_cmp_ps_mask(a1, infinity, _CMP_LT_OQ)) != 0xffff)
        return false;
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));
    // The scalar loop keeps the first element of largest magnitude, and +0 when all are zero.
    float max = 0.0f;
    if (amax > 0.0f) {
        const __m512 target = _mm512_set1_ps(amax);
        const uint32_t hits = uint32_t(_mm512_cmp_ps_mask(a0, target, _CMP_EQ_OQ)) |
                              uint32_t(_mm512_cmp_ps_mask(a1, target, _CMP_EQ_OQ)) << 16;
        const unsigned first = __builtin_ctz(hits);
        max = _mm512_cvtss_f32(_mm512_permutexvar_ps(_mm512_set1_epi32(int(first & 15)), first < 16 ? v0 : v1));
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    *scale = static_cast<uint16_t>(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
    const __m512 vid = _mm512_set1_ps(id);
    // nibbles[j] = q[j] | q[16 + j] << 4: each q is at most 15, so a 16-bit shift stays in its byte.
    const __m128i low = q4_indexes_avx512(v0, vid), high = q4_indexes_avx512(v1, vid);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(nibbles), _mm_or_si128(low, _mm_slli_epi16(high, 4)));
    return true;
}

__attribute__((target("avx512f,f16c"))) bool quantize_q4_0_avx512(const float* x, uint16_t* scale, uint8_t* nibbles) {
    return quantize_q4_0_zmm(_mm512_loadu_ps(x), _mm512_loadu_ps(x + 16), scale, nibbles);
}

// Loaders of 16 two-byte values as f32: vcvtph2ps is f16_to_f32 exactly for every non-NaN value
// (a block with a NaN falls back), and bf16_to_f32 is a 16-bit shift into the high half.
struct F16Loader {
    static constexpr uint32_t kBytes = 2;
    __attribute__((target("avx512f,f16c"))) static __m512 load16(const uint8_t* p) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
};
struct Bf16Loader {
    static constexpr uint32_t kBytes = 2;
    __attribute__((target("avx512f"))) static __m512 load16(const uint8_t* p) {
        return _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
    }
};

template <class Loader>
__attribute__((target("avx512f,f16c"))) bool quantize_q4_0_from_halves_avx512(const uint8_t* halfs, uint16_t* scale,
                                                                              uint8_t* nibbles) {
    return quantize_q4_0_zmm(Loader::load16(halfs), Loader::load16(halfs + 32), scale, nibbles);
}

// Sixteen blocks at a time, a block per lane where the per-block function has a scalar step
// (its maximum, sign, divisions and f16 scale are one long dependency chain per block, ~60
// cycles even with the data in L1): the maxima of 16 blocks are reduced together, d and 1/d
// are computed for 16 blocks in one division each, and the 16 scales stored at once.

// lane b of the result = the largest lane of m[b] (m[b] >= 0, no NaN).
__attribute__((target("avx512f"))) inline __m512 max_of_each(const __m512 m[16]) {
    __m512 r[8], s[4];
    for (int i = 0; i < 8; ++i)  // 128-bit lanes: m[2i] q0|q2, q1|q3, m[2i+1] q0|q2, q1|q3
        r[i] = _mm512_max_ps(_mm512_shuffle_f32x4(m[2 * i], m[2 * i + 1], 0x44),
                             _mm512_shuffle_f32x4(m[2 * i], m[2 * i + 1], 0xEE));
    for (int j = 0; j < 4; ++j)  // 128-bit lane k: block 4j + k (four values)
        s[j] = _mm512_max_ps(_mm512_shuffle_f32x4(r[2 * j], r[2 * j + 1], 0x88),
                             _mm512_shuffle_f32x4(r[2 * j], r[2 * j + 1], 0xDD));
    const __m512 t0 = _mm512_max_ps(_mm512_unpacklo_ps(s[0], s[1]), _mm512_unpackhi_ps(s[0], s[1]));
    const __m512 t1 = _mm512_max_ps(_mm512_unpacklo_ps(s[2], s[3]), _mm512_unpackhi_ps(s[2], s[3]));
    // 128-bit lane k: blocks k, 8 + k, 4 + k, 12 + k
    const __m512 u = _mm512_max_ps(_mm512_unpacklo_ps(t0, t1), _mm512_unpackhi_ps(t0, t1));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 1, 5, 9, 13, 3, 7, 11, 15);
    return _mm512_permutexvar_ps(order, u);
}

template <class Loader>
__attribute__((target("avx512f,f16c"))) uint32_t quantize_q4_0_row_avx512(const uint8_t* values, uint32_t groups,
                                                                         uint8_t* scales, uint8_t* nibbles) {
    const __m512 infinity = _mm512_castsi512_ps(_mm512_set1_epi32(0x7f800000));
    uint32_t done = 0;
    for (; done + 16 <= groups; done += 16) {
        const uint8_t* base = values + uint64_t{done} * 32 * Loader::kBytes;
        __m512 magnitude[16];
        uint32_t finite = 0xffff;
        for (int b = 0; b < 16; ++b) {
            const __m512 a0 = _mm512_abs_ps(Loader::load16(base + (32 * b) * Loader::kBytes));
            const __m512 a1 = _mm512_abs_ps(Loader::load16(base + (32 * b + 16) * Loader::kBytes));
            finite &= _mm512_cmp_ps_mask(a0, infinity, _CMP_LT_OQ) & _mm512_cmp_ps_mask(a1, infinity, _CMP_LT_OQ);
            magnitude[b] = _mm512_max_ps(a0, a1);
        }
        if (finite != 0xffff) break;  // a NaN or an infinity: the caller takes these blocks one by one
        const __m512 amax = max_of_each(magnitude);
        // The scalar loop keeps the first element of largest magnitude: the block's maximum is
        // negative when the first lane equal to -amax comes before the first equal to +amax.
        uint32_t negative = 0;
        for (int b = 0; b < 16; ++b) {
            const __m512 v0 = Loader::load16(base + (32 * b) * Loader::kBytes);
            const __m512 v1 = Loader::load16(base + (32 * b + 16) * Loader::kBytes);
            const __m512 plus = _mm512_permutexvar_ps(_mm512_set1_epi32(b), amax);
            const __m512 minus = _mm512_sub_ps(_mm512_setzero_ps(), plus);
            const uint32_t at_plus = uint32_t(_mm512_cmp_ps_mask(v0, plus, _CMP_EQ_OQ)) |
                                     uint32_t(_mm512_cmp_ps_mask(v1, plus, _CMP_EQ_OQ)) << 16;
            const uint32_t at_minus = uint32_t(_mm512_cmp_ps_mask(v0, minus, _CMP_EQ_OQ)) |
                                      uint32_t(_mm512_cmp_ps_mask(v1, minus, _CMP_EQ_OQ)) << 16;
            const uint32_t either = at_plus | at_minus;
            // The lowest lane that hits decides. With amax == 0 every zero lane hits, and the
            // "negative" maximum 0 - (+0) is +0, the scalar loop's +0.
            if (either & (0u - either) & at_minus) negative |= 1u << b;
        }
        const __m512 max = _mm512_mask_sub_ps(amax, __mmask16(negative), _mm512_setzero_ps(), amax);
        const __m512 d = _mm512_div_ps(max, _mm512_set1_ps(-8.0f));
        const __mmask16 nonzero = _mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_NEQ_OQ);
        const __m512 id = _mm512_maskz_div_ps(nonzero, _mm512_set1_ps(1.0f), d);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(scales + uint64_t{done} * 2),
                            _mm512_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        for (int b = 0; b < 16; ++b) {
            const __m512 v0 = Loader::load16(base + (32 * b) * Loader::kBytes);
            const __m512 v1 = Loader::load16(base + (32 * b + 16) * Loader::kBytes);
            const __m512 vid = _mm512_permutexvar_ps(_mm512_set1_epi32(b), id);
            const __m128i low = q4_indexes_avx512(v0, vid), high = q4_indexes_avx512(v1, vid);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(nibbles + (uint64_t{done} + b) * 16),
                             _mm_or_si128(low, _mm_slli_epi16(high, 4)));
        }
    }
    return done;
}

// ---- the same on 8 lanes (AVX2 + F16C, no FMA in the target: nothing is contracted) ----

struct F16LoaderAvx2 {
    static constexpr uint32_t kBytes = 2;
    __attribute__((target("avx2,f16c"))) static __m256 load8(const uint8_t* p) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
};
struct Bf16LoaderAvx2 {
    static constexpr uint32_t kBytes = 2;
    __attribute__((target("avx2,f16c"))) static __m256 load8(const uint8_t* p) {
        return _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
    }
};

template <class Loader>
__attribute__((target("avx2,f16c"))) bool quantize_q4_0_from_halves_avx2(const uint8_t* halfs, uint16_t* scale,
                                                                         uint8_t* nibbles) {
    alignas(32) float x[32];
    for (int i = 0; i < 4; ++i) _mm256_store_ps(x + 8 * i, Loader::load8(halfs + 16 * i));
    return quantize_q4_0_avx2(x, scale, nibbles);
}

// lane b of the result = the largest lane of m[b] (m[b] >= 0, no NaN).
__attribute__((target("avx2"))) inline __m256 max_of_each_avx2(const __m256 m[8]) {
    __m256 r[4];
    for (int i = 0; i < 4; ++i)  // 128-bit lane 0: block 2i (four values), lane 1: block 2i + 1
        r[i] = _mm256_max_ps(_mm256_permute2f128_ps(m[2 * i], m[2 * i + 1], 0x20),
                             _mm256_permute2f128_ps(m[2 * i], m[2 * i + 1], 0x31));
    const __m256 s0 = _mm256_max_ps(_mm256_unpacklo_ps(r[0], r[1]), _mm256_unpackhi_ps(r[0], r[1]));
    const __m256 s1 = _mm256_max_ps(_mm256_unpacklo_ps(r[2], r[3]), _mm256_unpackhi_ps(r[2], r[3]));
    // lane 0: blocks 0, 4, 2, 6; lane 1: blocks 1, 5, 3, 7
    const __m256 u = _mm256_max_ps(_mm256_unpacklo_ps(s0, s1), _mm256_unpackhi_ps(s0, s1));
    return _mm256_permutevar8x32_ps(u, _mm256_setr_epi32(0, 4, 2, 6, 1, 5, 3, 7));
}

template <class Loader>
__attribute__((target("avx2,f16c"))) uint32_t quantize_q4_0_row_avx2(const uint8_t* values, uint32_t groups,
                                                                    uint8_t* scales, uint8_t* nibbles) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 infinity = _mm256_castsi256_ps(_mm256_set1_epi32(0x7f800000));
    const __m256 zero = _mm256_setzero_ps();
    uint32_t done = 0;
    for (; done + 8 <= groups; done += 8) {
        const uint8_t* base = values + uint64_t{done} * 64;  // 8 blocks of 32 two-byte values
        __m256 magnitude[8];
        int finite = 0xff;
        for (int b = 0; b < 8; ++b) {
            __m256 m = zero;
            for (int i = 0; i < 4; ++i) {
                const __m256 a = _mm256_and_ps(Loader::load8(base + 64 * b + 16 * i), abs_mask);
                finite &= _mm256_movemask_ps(_mm256_cmp_ps(a, infinity, _CMP_LT_OQ));  // NaN compares false
                m = _mm256_max_ps(m, a);
            }
            magnitude[b] = m;
        }
        if (finite != 0xff) break;  // a NaN or an infinity: the caller takes these blocks one by one
        const __m256 amax = max_of_each_avx2(magnitude);
        // Negative when the first lane equal to -amax comes before the first equal to +amax
        // (amax == 0: 0 - (+0) is +0, the scalar loop's +0).
        int negative = 0;
        for (int b = 0; b < 8; ++b) {
            const __m256 plus = _mm256_permutevar8x32_ps(amax, _mm256_set1_epi32(b));
            const __m256 minus = _mm256_sub_ps(zero, plus);
            uint32_t at_plus = 0, at_minus = 0;
            for (int i = 0; i < 4; ++i) {
                const __m256 v = Loader::load8(base + 64 * b + 16 * i);
                at_plus |= uint32_t(_mm256_movemask_ps(_mm256_cmp_ps(v, plus, _CMP_EQ_OQ))) << (8 * i);
                at_minus |= uint32_t(_mm256_movemask_ps(_mm256_cmp_ps(v, minus, _CMP_EQ_OQ))) << (8 * i);
            }
            const uint32_t either = at_plus | at_minus;
            if (either & (0u - either) & at_minus) negative |= 1 << b;
        }
        const __m256 sign = _mm256_castsi256_ps(_mm256_and_si256(
            _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(negative), _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128)),
                               _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128)),
            _mm256_set1_epi32(int(0x80000000u))));
        const __m256 max = _mm256_blendv_ps(amax, _mm256_sub_ps(zero, amax), sign);
        const __m256 d = _mm256_div_ps(max, _mm256_set1_ps(-8.0f));
        const __m256 nonzero = _mm256_cmp_ps(d, zero, _CMP_NEQ_OQ);
        const __m256 id = _mm256_and_ps(nonzero, _mm256_div_ps(_mm256_set1_ps(1.0f), d));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(scales + uint64_t{done} * 2),
                         _mm256_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        for (int b = 0; b < 8; ++b) {
            __m256 v[4];
            for (int i = 0; i < 4; ++i) v[i] = Loader::load8(base + 64 * b + 16 * i);
            store_q4_nibbles_avx2(v, _mm256_permutevar8x32_ps(id, _mm256_set1_epi32(b)), nibbles + (uint64_t{done} + b) * 16);
        }
    }
    return done;
}

// ---- Q8_0 (ggml quantize_row_q8_0_ref: d = amax / 127, id = 1/d or 0, q = roundf(x * id)) ----
// A block at a time: unlike Q4_0 there is no "first element of largest magnitude" to find, so
// every step is a vector one and consecutive blocks overlap in the out-of-order core.

struct F32Loader {
    static constexpr uint32_t kBytes = 4;
    __attribute__((target("avx512f"))) static __m512 load16(const uint8_t* p) { return _mm512_loadu_ps(p); }
};

// roundf (half away from zero) of y = v x id, clamped to +-127, NaN -> 0, as q8_value. trunc(y)
// and y - trunc(y) are exact for |y| < 2^23; an infinite y (id infinite: the maximum is so small
// that 1/d overflows) truncates to itself and clamps; 0 x an infinite id is NaN. Explicit
// rounding keeps GCC from contracting the multiply into the subtraction (avx512f has FMA).
__attribute__((target("avx512f"))) __m128i q8_values_avx512(__m512 v, __m512 vid) {
    constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m512 y = _mm512_mul_round_ps(v, vid, kRound);
    __m512 t = _mm512_roundscale_ps(y, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512 frac = _mm512_abs_ps(_mm512_sub_round_ps(y, t, kRound));
    const __m512 away = _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_castps_si512(_mm512_set1_ps(1.0f)),
        _mm512_and_si512(_mm512_castps_si512(y), _mm512_set1_epi32(int(0x80000000u)))));  // copysign(1, y)
    t = _mm512_mask_add_ps(t, _mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ), t, away);
    t = _mm512_min_ps(_mm512_max_ps(t, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
    t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q), t, _mm512_setzero_ps());
    return _mm512_cvtsepi32_epi8(_mm512_cvttps_epi32(t));
}

template <class Loader>
__attribute__((target("avx512f,f16c"))) uint32_t quantize_q8_0_row_avx512(const uint8_t* values, uint32_t groups,
                                                                         uint8_t* scales, int8_t* quants) {
    const __m512 infinity = _mm512_castsi512_ps(_mm512_set1_epi32(0x7f800000));
    for (uint32_t b = 0; b < groups; ++b) {
        const uint8_t* block = values + uint64_t{b} * 32 * Loader::kBytes;
        const __m512 v0 = Loader::load16(block), v1 = Loader::load16(block + 16 * Loader::kBytes);
        const __m512 a0 = _mm512_abs_ps(v0), a1 = _mm512_abs_ps(v1);
        // NaN compares false: a block with a NaN or an infinity goes to the scalar path.
        if ((_mm512_cmp_ps_mask(a0, infinity, _CMP_LT_OQ) & _mm512_cmp_ps_mask(a1, infinity, _CMP_LT_OQ)) != 0xffff)
            return b;
        __m512 m = _mm512_max_ps(a0, a1);  // the maximum into every lane
        m = _mm512_max_ps(m, _mm512_shuffle_f32x4(m, m, 0x4E));
        m = _mm512_max_ps(m, _mm512_shuffle_f32x4(m, m, 0xB1));
        m = _mm512_max_ps(m, _mm512_permute_ps(m, 0x4E));
        m = _mm512_max_ps(m, _mm512_permute_ps(m, 0xB1));
        const __m512 d = _mm512_div_ps(m, _mm512_set1_ps(127.0f));
        const __m512 id =
            _mm512_maskz_div_ps(_mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_NEQ_OQ), _mm512_set1_ps(1.0f), d);
        // d is finite: vcvtps2ph with round-to-nearest-even gives f32_to_f16's bits.
        const uint16_t scale = static_cast<uint16_t>(
            _mm_extract_epi16(_mm256_castsi256_si128(_mm512_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)), 0));
        std::memcpy(scales + uint64_t{b} * 2, &scale, 2);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(quants + uint64_t{b} * 32), q8_values_avx512(v0, id));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(quants + uint64_t{b} * 32 + 16), q8_values_avx512(v1, id));
    }
    return groups;
}

struct F32LoaderAvx2 {
    static constexpr uint32_t kBytes = 4;
    __attribute__((target("avx2,f16c"))) static __m256 load8(const uint8_t* p) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
    }
};

// q8_values_avx512's steps on 8 lanes (no FMA in this target: nothing is contracted), as int32.
__attribute__((target("avx2,f16c"))) inline __m256i q8_values_avx2(__m256 v, __m256 vid) {
    const __m256 y = _mm256_mul_ps(v, vid);
    __m256 t = _mm256_round_ps(y, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32(int(0x80000000u)));
    const __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(y, t));
    const __m256 away = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(y, sign));
    t = _mm256_add_ps(t, _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), away));
    t = _mm256_min_ps(_mm256_max_ps(t, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
    t = _mm256_andnot_ps(_mm256_cmp_ps(y, y, _CMP_UNORD_Q), t);
    return _mm256_cvttps_epi32(t);
}

template <class Loader>
__attribute__((target("avx2,f16c"))) uint32_t quantize_q8_0_row_avx2(const uint8_t* values, uint32_t groups,
                                                                    uint8_t* scales, int8_t* quants) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 infinity = _mm256_castsi256_ps(_mm256_set1_epi32(0x7f800000));
    for (uint32_t b = 0; b < groups; ++b) {
        const uint8_t* block = values + uint64_t{b} * 32 * Loader::kBytes;
        __m256 v[4];
        __m256 m = _mm256_setzero_ps();
        int finite = 0xff;
        for (int i = 0; i < 4; ++i) {
            v[i] = Loader::load8(block + 8 * i * Loader::kBytes);
            const __m256 a = _mm256_and_ps(v[i], abs_mask);
            finite &= _mm256_movemask_ps(_mm256_cmp_ps(a, infinity, _CMP_LT_OQ));  // NaN compares false
            m = _mm256_max_ps(m, a);
        }
        if (finite != 0xff) return b;
        m = _mm256_max_ps(m, _mm256_permute2f128_ps(m, m, 0x01));  // the maximum into every lane
        m = _mm256_max_ps(m, _mm256_permute_ps(m, 0x4E));
        m = _mm256_max_ps(m, _mm256_permute_ps(m, 0xB1));
        const __m256 d = _mm256_div_ps(m, _mm256_set1_ps(127.0f));
        const __m256 id = _mm256_and_ps(_mm256_cmp_ps(d, _mm256_setzero_ps(), _CMP_NEQ_OQ),
                                        _mm256_div_ps(_mm256_set1_ps(1.0f), d));
        const uint16_t scale =
            static_cast<uint16_t>(_mm_extract_epi16(_mm256_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), 0));
        std::memcpy(scales + uint64_t{b} * 2, &scale, 2);
        // int32 -> int16 -> int8 with saturation (values are within +-127); packs works per
        // 128-bit lane, the permute puts the 64-bit quarters back in order.
        const __m256i w01 = _mm256_packs_epi32(q8_values_avx2(v[0], id), q8_values_avx2(v[1], id));
        const __m256i w23 = _mm256_packs_epi32(q8_values_avx2(v[2], id), q8_values_avx2(v[3], id));
        const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w01, w23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(quants + uint64_t{b} * 32), bytes);
    }
    return groups;
}

// CPUID and XCR0 directly (clang's __builtin_cpu_supports knows no "f16c"): AVX2 (leaf 7
// EBX bit 5), F16C (leaf 1 ECX bit 29), and the OS saving the YMM state (OSXSAVE, XCR0 bits 1-2).
__attribute__((target("xsave"))) bool has_avx2_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
    const bool f16c = (ecx >> 29) & 1u, osxsave = (ecx >> 27) & 1u;
    if (!f16c || !osxsave || (_xgetbv(0) & 0x6u) != 0x6u) return false;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    return (ebx >> 5) & 1u;
}

// AVX-512 F (leaf 7 EBX bit 16) and the OS saving the opmask and ZMM state (XCR0 bits 5-7).
__attribute__((target("xsave"))) bool has_avx512f() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!has_avx2_f16c() || (_xgetbv(0) & 0xe0u) != 0xe0u) return false;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    return (ebx >> 16) & 1u;
}

// CFLOW_ISA, the engine's kernel choice, also caps the converter's paths, so that the AVX2
// and scalar conversions can be run (and timed) on a CPU with more: scalar -> none,
// avx2 / avx2int8 / avxvnni -> AVX2 at most, anything else -> what the CPU has.
int isa_cap() {
    const char* requested = std::getenv("CFLOW_ISA");
    if (!requested) return 2;
    const std::string_view isa(requested);
    if (isa == "scalar") return 0;
    if (isa == "avx2" || isa == "avx2int8" || isa == "avxvnni") return 1;
    return 2;
}

// CPUID traps to the hypervisor in a VM (tens of microseconds): ask once.
bool cpu_has_avx2_f16c() {
    static const bool has = isa_cap() >= 1 && has_avx2_f16c();
    return has;
}

bool cpu_has_avx512f() {
    static const bool has = isa_cap() >= 2 && has_avx512f();
    return has;
}

} // namespace

F16RowFn f16_row() { return cpu_has_avx2_f16c() ? &f16_row_avx2 : nullptr; }
Q4BlockFn q4_0_block_avx2() { return cpu_has_avx2_f16c() ? &quantize_q4_0_avx2 : nullptr; }
Q4BlockFn q4_0_block_avx512() { return cpu_has_avx512f() ? &quantize_q4_0_avx512 : nullptr; }
Q4HalfPath q4_0_from_f16_avx512() {
    if (!cpu_has_avx512f()) return {};
    return {&quantize_q4_0_row_avx512<F16Loader>, &quantize_q4_0_from_halves_avx512<F16Loader>};
}
Q4HalfPath q4_0_from_bf16_avx512() {
    if (!cpu_has_avx512f()) return {};
    return {&quantize_q4_0_row_avx512<Bf16Loader>, &quantize_q4_0_from_halves_avx512<Bf16Loader>};
}
Q4HalfPath q4_0_from_f16_avx2() {
    if (!cpu_has_avx2_f16c()) return {};
    return {&quantize_q4_0_row_avx2<F16LoaderAvx2>, &quantize_q4_0_from_halves_avx2<F16LoaderAvx2>};
}
Q4HalfPath q4_0_from_bf16_avx2() {
    if (!cpu_has_avx2_f16c()) return {};
    return {&quantize_q4_0_row_avx2<Bf16LoaderAvx2>, &quantize_q4_0_from_halves_avx2<Bf16LoaderAvx2>};
}
Q8RowFn q8_0_row_avx512(DType src) {
    if (!cpu_has_avx512f()) return nullptr;
    switch (src) {
        case DType::F32: return &quantize_q8_0_row_avx512<F32Loader>;
        case DType::F16: return &quantize_q8_0_row_avx512<F16Loader>;
        case DType::BF16: return &quantize_q8_0_row_avx512<Bf16Loader>;
        default: return nullptr;
    }
}
Q8RowFn q8_0_row_avx2(DType src) {
    if (!cpu_has_avx2_f16c()) return nullptr;
    switch (src) {
        case DType::F32: return &quantize_q8_0_row_avx2<F32LoaderAvx2>;
        case DType::F16: return &quantize_q8_0_row_avx2<F16LoaderAvx2>;
        case DType::BF16: return &quantize_q8_0_row_avx2<Bf16LoaderAvx2>;
        default: return nullptr;
    }
}
#else
F16RowFn f16_row() { return nullptr; }
Q8RowFn q8_0_row_avx512(DType) { return nullptr; }
Q8RowFn q8_0_row_avx2(DType) { return nullptr; }
Q4BlockFn q4_0_block_avx2() { return nullptr; }
Q4BlockFn q4_0_block_avx512() { return nullptr; }
Q4HalfPath q4_0_from_f16_avx512() { return {}; }
Q4HalfPath q4_0_from_bf16_avx512() { return {}; }
Q4HalfPath q4_0_from_f16_avx2() { return {}; }
Q4HalfPath q4_0_from_bf16_avx2() { return {}; }
#endif

Q4BlockFn q4_0_block() {
    if (Q4BlockFn fast = q4_0_block_avx512()) return fast;
    return q4_0_block_avx2();
}

} // namespace cflow::codec_x86
