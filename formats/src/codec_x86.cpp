#include "codec_x86.h"

#include <cstring>

#include "cflow/formats/tile_codec.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
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

// The same operations as the scalar quantize_block_q4_0, in the same order (multiply, then
// add 8.5, clamp, truncate: no FMA in this target, so nothing is contracted), on 8 lanes.
__attribute__((target("avx2,f16c"))) bool q4_0_block_avx2(const float* x, uint16_t* scale, uint8_t* nibbles) {
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
    const __m256 vid = _mm256_set1_ps(id), half_offset = _mm256_set1_ps(8.5f), top = _mm256_set1_ps(15.0f);
    __m256i q[4];
    for (int i = 0; i < 4; ++i)
        q[i] = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_add_ps(_mm256_mul_ps(v[i], vid), half_offset), top));
    // nibbles[j] = q[j] | q[16 + j] << 4, narrowed 32 -> 16 -> 8 bits (packus works per 128-bit lane,
    // the permutes put the lanes back in order).
    const __m256i n0 = _mm256_or_si256(q[0], _mm256_slli_epi32(q[2], 4));  // j = 0..7
    const __m256i n1 = _mm256_or_si256(q[1], _mm256_slli_epi32(q[3], 4));  // j = 8..15
    const __m256i words = _mm256_permute4x64_epi64(_mm256_packus_epi32(n0, n1), 0xD8);
    const __m256i bytes = _mm256_permute4x64_epi64(_mm256_packus_epi16(words, words), 0xD8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(nibbles), _mm256_castsi256_si128(bytes));
    return true;
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

// CPUID traps to the hypervisor in a VM (tens of microseconds): ask once.
bool cpu_has_avx2_f16c() {
    static const bool has = has_avx2_f16c();
    return has;
}

} // namespace

F16RowFn f16_row() { return cpu_has_avx2_f16c() ? &f16_row_avx2 : nullptr; }
Q4BlockFn q4_0_block() { return cpu_has_avx2_f16c() ? &q4_0_block_avx2 : nullptr; }
#else
F16RowFn f16_row() { return nullptr; }
Q4BlockFn q4_0_block() { return nullptr; }
#endif

} // namespace cflow::codec_x86
