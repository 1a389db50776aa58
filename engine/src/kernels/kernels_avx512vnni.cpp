// AVX-512 VNNI kernels: Q4_0 / Q8_0 weights times int8-quantized activations via vpdpbusd (the
// K-quants: kquant_int8_avx512vnni.cpp; the other ggml block types: ggml32_int8_avx512vnni.cpp),
// the scheme llama.cpp uses (Q8 activations). Inside each call x is quantized per 32-block to
// int8 with an f32 scale d = amax / 127, so the result is NOT bit-comparable to the scalar
// kernel: it carries the activation quantization error, bounded in tests/engine/kernels_test.cpp
// by kVnniActQuantTol. The integer part is exact (each int32 lane sums at most 4 products of
// |w| <= 128 and |xq| <= 127 plus the Q4_0 offset), so that is the only extra error.
// F32/F16 tiles, dot and axpy reuse the AVX-512 functions.
// No std:: templates or header inline functions here (see kernels_avx2.cpp for why).
#include "kernels/kernels_internal.h"
#include "kernels/ggml_tile_kernels.h"
#include "kernels/kquant_kernels.h"

#include <cstddef>

#if CFLOW_KERNELS_X86
#include "cflow/base/x86_intrinsics.h"

#include "cflow/formats/cflow_layout.h"

namespace cflow::kernels {

namespace {

constexpr int kRowBlock = 4;
constexpr size_t kPrefetchBytes = 2048;
constexpr uint32_t kGroup = 32;                     // kQuantGroup
constexpr uint32_t kMaxGroups = kTileCols / kGroup;  // 8: one f16 scale vector per tile row

__mmask16 first_lanes(uint32_t n) {
    return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

// x quantized per 32-block: x[i] ~= scale[g] * q[i]. Groups are consumed in pairs by 512-bit
// vpdpbusd. A Q4_0 pair's 32 packed bytes expand most cheaply to [lo nibbles of both groups |
// hi nibbles of both groups], so for Q4_0 the quantized x of a pair is stored in that order:
// [g0 w0..15 | g1 w0..15 | g0 w16..31 | g1 w16..31]. Q8_0 (and an unpaired last group) keep
// the natural order.
struct QuantizedX {
    alignas(64) int8_t q[kTileCols];      // [G * 32] int8, zero past cols, order as above
    alignas(32) float scale[kMaxGroups];  // [G] f32 block scales d = amax / 127
    int32_t q4Offset[kMaxGroups];         // [G] -8 * sum(q) of the block: folds Q4_0's "-8" into the int dot
    // [G * 32] the same int8 values in column order, for Q4_0 only (Q8_0's q is in column order):
    // the lanes walks consume a block's 4-byte steps in column order and broadcast each straight
    // from here, where gathering them out of q's pair swizzle cost ~3% of decode in every tile.
    alignas(64) int8_t natural[kTileCols];
};

template <bool kQ4>
void quantize_x(const float* x, uint32_t cols, uint32_t groups, QuantizedX& out) {
    const __m512 absMask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
    const uint32_t paired = groups & ~1u;
    for (uint32_t g = 0; g < groups; ++g) {
        const uint32_t first = g * kGroup;
        const uint32_t valid = cols - first;  // may exceed 32; first_lanes clamps
        const __m512 x0 = _mm512_maskz_loadu_ps(first_lanes(valid), x + first);
        const __m512 x1 = valid > 16 ? _mm512_maskz_loadu_ps(first_lanes(valid - 16), x + first + 16) : _mm512_setzero_ps();
        const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_and_ps(x0, absMask), _mm512_and_ps(x1, absMask)));
        const float d = amax / 127.0f;
        const __m512 inv = _mm512_set1_ps(d > 0.0f ? 1.0f / d : 0.0f);
        // Round to nearest (MXCSR default); |x / d| <= 127 so the int8 narrowing never saturates.
        const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(x0, inv));
        const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(x1, inv));
        const bool swizzle = kQ4 && g < paired;
        const uint32_t lowAt = swizzle ? (g & ~1u) * kGroup + (g & 1u) * 16 : first;
        const uint32_t highAt = swizzle ? lowAt + 32 : first + 16;
        _mm512_mask_cvtepi32_storeu_epi8(out.q + lowAt, 0xFFFF, q0);
        _mm512_mask_cvtepi32_storeu_epi8(out.q + highAt, 0xFFFF, q1);
        if constexpr (kQ4) {
            _mm512_mask_cvtepi32_storeu_epi8(out.natural + first, 0xFFFF, q0);
            _mm512_mask_cvtepi32_storeu_epi8(out.natural + first + 16, 0xFFFF, q1);
        }
        out.scale[g] = d;
        out.q4Offset[g] = -8 * _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    }
}

template <int R, bool kQ4>
void block_rows(const uint8_t* payload, uint32_t rows, uint32_t r0, uint32_t groups, const QuantizedX& xq, float* y) {
    constexpr size_t kBlockBytes = kQ4 ? kGroup / 2 : kGroup;
    const uint8_t* scales = payload;                                                        // [rows x G] f16
    const uint8_t* blocks = payload + static_cast<size_t>(rows) * groups * sizeof(uint16_t);  // [rows x G] blocks
    const __m256 xScale = _mm256_load_ps(xq.scale);  // lanes >= G are never used
    const __mmask8 groupLanes = static_cast<__mmask8>((1u << groups) - 1u);
    // The row block's blocks are contiguous; ask for the bytes kPrefetchBytes ahead so the
    // memory system has enough misses in flight (the hardware prefetcher alone stalls here).
    if (::cflow::kernels::g_explicit_prefetch.load(std::memory_order_relaxed)) {
        const uint8_t* next = blocks + static_cast<size_t>(r0) * groups * kBlockBytes + kPrefetchBytes;
        for (size_t off = 0; off < static_cast<size_t>(R) * groups * kBlockBytes; off += 64)
            _mm_prefetch(reinterpret_cast<const char*>(next + off), _MM_HINT_T0);
    }
    alignas(32) float combined[R][kMaxGroups];  // [R x G] weight scale * activation scale
    __m512 combinedVec[R];                      // the same in lanes 0..7
    __m512 acc[R];
    CFLOW_UNROLL_ROWS
    for (int i = 0; i < R; ++i) {
        const uint8_t* rowScales = scales + static_cast<size_t>(r0 + i) * groups * sizeof(uint16_t);
        const __m128i h = _mm_maskz_loadu_epi16(groupLanes, rowScales);
        const __m256 c = _mm256_mul_ps(_mm256_cvtph_ps(h), xScale);
        _mm256_store_ps(combined[i], c);
        combinedVec[i] = _mm512_zextps256_ps512(c);
        acc[i] = _mm512_setzero_ps();
    }
    // int32 lane -> group of the pair: Q4_0 lanes 0-3, 8-11 come from g0 and 4-7, 12-15 from g1
    // (the nibble order above); Q8_0 lanes 0-7 from g0, 8-15 from g1.
    const __m512i laneGroup = kQ4 ? _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1)
                                  : _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i lowNibbles = _mm512_set1_epi8(0x0F);
    const __m512i zero = _mm512_setzero_si512();
    for (uint32_t g = 0; g + 2 <= groups; g += 2) {
        const __m512i xv = _mm512_load_si512(xq.q + g * kGroup);
        const __m512i scaleIndex = _mm512_add_epi32(laneGroup, _mm512_set1_epi32(static_cast<int>(g)));
        // sum (q - 8) * xq = sum q * xq - 8 * sum xq: the second term is the accumulator's start value.
        const __m512i start = kQ4 ? _mm512_setr_epi32(xq.q4Offset[g], 0, 0, 0, xq.q4Offset[g + 1], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
                                  : zero;
        CFLOW_UNROLL_ROWS
        for (int i = 0; i < R; ++i) {
            const uint8_t* b = blocks + (static_cast<size_t>(r0 + i) * groups + g) * kBlockBytes;
            __m512i dotLanes;  // 16 int32 partial sums of w_q * x_q over the two blocks
            if constexpr (kQ4) {
                const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
                const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(packed), _mm256_srli_epi16(packed, 4), 1);
                dotLanes = _mm512_dpbusd_epi32(start, _mm512_and_si512(both, lowNibbles), xv);
            } else {
                // vpdpbusd multiplies unsigned by signed: |w| times xq with w's sign moved onto xq.
                const __m512i w = _mm512_loadu_si512(b);
                const __m512i signedX = _mm512_mask_sub_epi8(xv, _mm512_movepi8_mask(w), zero, xv);
                dotLanes = _mm512_dpbusd_epi32(zero, _mm512_abs_epi8(w), signedX);
            }
            acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dotLanes), _mm512_permutexvar_ps(scaleIndex, combinedVec[i]), acc[i]);
        }
    }
    if (groups & 1u) {  // an unpaired last group, natural order, 256-bit
        const uint32_t g = groups - 1;
        const __m256i xv = _mm256_load_si256(reinterpret_cast<const __m256i*>(xq.q + g * kGroup));
        const __m256i start = kQ4 ? _mm256_zextsi128_si256(_mm_cvtsi32_si128(xq.q4Offset[g])) : _mm256_setzero_si256();
        CFLOW_UNROLL_ROWS
        for (int i = 0; i < R; ++i) {
            const uint8_t* b = blocks + (static_cast<size_t>(r0 + i) * groups + g) * kBlockBytes;
            __m256i dotLanes;
            if constexpr (kQ4) {
                const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
                const __m128i low = _mm_set1_epi8(0x0F);
                dotLanes = _mm256_dpbusd_epi32(
                    start, _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), low), _mm_and_si128(packed, low)), xv);
            } else {
                const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
                dotLanes = _mm256_dpbusd_epi32(start, _mm256_abs_epi8(w), _mm256_sign_epi8(xv, w));
            }
            const __m256 part = _mm256_mul_ps(_mm256_cvtepi32_ps(dotLanes), _mm256_set1_ps(combined[i][g]));
            acc[i] = _mm512_add_ps(acc[i], _mm512_zextps256_ps512(part));
        }
    }
    CFLOW_UNROLL_ROWS
    for (int i = 0; i < R; ++i) y[r0 + i] += _mm512_reduce_add_ps(acc[i]);
}

// block_rows for T tokens at once (batched prefill): each row's weight blocks are loaded and
// unpacked once and multiplied with every token's quantized x. The scale of a (row, token, pair)
// is the permuted weight scale times the permuted activation scale, lane for lane the same
// product block_rows permutes out of `combined`, and each accumulator sees the same fused
// multiply-adds in the same order, so every output is bit-identical to block_rows per token.
template <int R, int T, bool kQ4>
void block_rows_tokens(const uint8_t* payload, uint32_t rows, uint32_t r0, uint32_t groups, const uint8_t* slices,
                       size_t sliceStride, float* y, size_t yStride) {
    constexpr size_t kBlockBytes = kQ4 ? kGroup / 2 : kGroup;
    const uint8_t* scales = payload;                                                        // [rows x G] f16
    const uint8_t* blocks = payload + static_cast<size_t>(rows) * groups * sizeof(uint16_t);  // [rows x G] blocks
    const __mmask8 groupLanes = static_cast<__mmask8>((1u << groups) - 1u);
    const QuantizedX* xq[T];
    __m512 xScale[T];  // [T] activation scales in lanes 0..7
    CFLOW_UNROLL_ROWS
    for (int t = 0; t < T; ++t) {
        xq[t] = reinterpret_cast<const QuantizedX*>(slices + static_cast<size_t>(t) * sliceStride);
        xScale[t] = _mm512_zextps256_ps512(_mm256_load_ps(xq[t]->scale));
    }
    alignas(32) float wScaleRow[R][kMaxGroups];  // [R x G] f32 weight scales
    __m512 wScale[R];                            // the same in lanes 0..7
    __m512 acc[R][T];
    CFLOW_UNROLL_ROWS
    for (int i = 0; i < R; ++i) {
        const uint8_t* rowScales = scales + static_cast<size_t>(r0 + i) * groups * sizeof(uint16_t);
        const __m256 w = _mm256_cvtph_ps(_mm_maskz_loadu_epi16(groupLanes, rowScales));
        _mm256_store_ps(wScaleRow[i], w);
        wScale[i] = _mm512_zextps256_ps512(w);
        CFLOW_UNROLL_ROWS
        for (int t = 0; t < T; ++t) acc[i][t] = _mm512_setzero_ps();
    }
    const __m512i laneGroup = kQ4 ? _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1)
                                  : _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i lowNibbles = _mm512_set1_epi8(0x0F);
    const __m512i zero = _mm512_setzero_si512();
    for (uint32_t g = 0; g + 2 <= groups; g += 2) {
        const __m512i scaleIndex = _mm512_add_epi32(laneGroup, _mm512_set1_epi32(static_cast<int>(g)));
        __m512i weights[R];  // Q4_0: unpacked nibbles; Q8_0: the signed bytes
        __m512 wPair[R];
        CFLOW_UNROLL_ROWS
        for (int i = 0; i < R; ++i) {
            const uint8_t* b = blocks + (static_cast<size_t>(r0 + i) * groups + g) * kBlockBytes;
            if constexpr (kQ4) {
                const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
                const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(packed), _mm256_srli_epi16(packed, 4), 1);
                weights[i] = _mm512_and_si512(both, lowNibbles);
            } else {
                weights[i] = _mm512_loadu_si512(b);
            }
            wPair[i] = _mm512_permutexvar_ps(scaleIndex, wScale[i]);
        }
        CFLOW_UNROLL_ROWS
        for (int t = 0; t < T; ++t) {
            const __m512i xv = _mm512_load_si512(xq[t]->q + g * kGroup);
            const __m512i start = kQ4 ? _mm512_setr_epi32(xq[t]->q4Offset[g], 0, 0, 0, xq[t]->q4Offset[g + 1], 0, 0, 0, 0, 0,
                                                          0, 0, 0, 0, 0, 0)
                                      : zero;
            const __m512 xPair = _mm512_permutexvar_ps(scaleIndex, xScale[t]);
            CFLOW_UNROLL_ROWS
            for (int i = 0; i < R; ++i) {
                __m512i dotLanes;
                if constexpr (kQ4) {
                    dotLanes = _mm512_dpbusd_epi32(start, weights[i], xv);
                } else {
                    const __m512i signedX = _mm512_mask_sub_epi8(xv, _mm512_movepi8_mask(weights[i]), zero, xv);
                    dotLanes = _mm512_dpbusd_epi32(zero, _mm512_abs_epi8(weights[i]), signedX);
                }
                acc[i][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dotLanes), _mm512_mul_ps(wPair[i], xPair), acc[i][t]);
            }
        }
    }
    if (groups & 1u) {  // an unpaired last group, natural order, 256-bit (as block_rows)
        const uint32_t g = groups - 1;
        CFLOW_UNROLL_ROWS
        for (int t = 0; t < T; ++t) {
            const __m256i xv = _mm256_load_si256(reinterpret_cast<const __m256i*>(xq[t]->q + g * kGroup));
            const __m256i start =
                kQ4 ? _mm256_zextsi128_si256(_mm_cvtsi32_si128(xq[t]->q4Offset[g])) : _mm256_setzero_si256();
            CFLOW_UNROLL_ROWS
            for (int i = 0; i < R; ++i) {
                const uint8_t* b = blocks + (static_cast<size_t>(r0 + i) * groups + g) * kBlockBytes;
                __m256i dotLanes;
                if constexpr (kQ4) {
                    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
                    const __m128i low = _mm_set1_epi8(0x0F);
                    dotLanes = _mm256_dpbusd_epi32(
                        start, _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), low), _mm_and_si128(packed, low)), xv);
                } else {
                    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
                    dotLanes = _mm256_dpbusd_epi32(start, _mm256_abs_epi8(w), _mm256_sign_epi8(xv, w));
                }
                const float combined = wScaleRow[i][g] * xq[t]->scale[g];
                const __m256 part = _mm256_mul_ps(_mm256_cvtepi32_ps(dotLanes), _mm256_set1_ps(combined));
                acc[i][t] = _mm512_add_ps(acc[i][t], _mm512_zextps256_ps512(part));
            }
        }
    }
    CFLOW_UNROLL_ROWS
    for (int t = 0; t < T; ++t) {
        CFLOW_UNROLL_ROWS
        for (int i = 0; i < R; ++i) y[static_cast<size_t>(t) * yStride + r0 + i] += _mm512_reduce_add_ps(acc[i][t]);
    }
}

// Tokens in blocks of kTokenBlock (4 x 4 accumulators and the unpacked rows fit the 32 zmm
// registers); the last 1-3 tokens take a narrower instantiation.
constexpr int kTokenBlock = 4;

template <int R, bool kQ4>
void rows_tokens(const uint8_t* payload, uint32_t rows, uint32_t r0, uint32_t groups, const uint8_t* slices,
                 size_t sliceStride, uint32_t tokens, float* y, size_t yStride) {
    uint32_t t = 0;
    for (; t + kTokenBlock <= tokens; t += kTokenBlock)
        block_rows_tokens<R, kTokenBlock, kQ4>(payload, rows, r0, groups, slices + t * sliceStride, sliceStride,
                                               y + t * yStride, yStride);
    const uint8_t* restSlices = slices + t * sliceStride;
    float* restY = y + t * yStride;
    switch (tokens - t) {
    case 3: block_rows_tokens<R, 3, kQ4>(payload, rows, r0, groups, restSlices, sliceStride, restY, yStride); break;
    case 2: block_rows_tokens<R, 2, kQ4>(payload, rows, r0, groups, restSlices, sliceStride, restY, yStride); break;
    case 1: block_rows_tokens<R, 1, kQ4>(payload, rows, r0, groups, restSlices, sliceStride, restY, yStride); break;
    default: break;
    }
}

template <bool kQ4>
void matmat_rows(const uint8_t* payload, uint32_t rows, uint32_t cols, const uint8_t* slices, size_t sliceStride,
                 uint32_t tokens, float* y, size_t yStride) {
    const uint32_t groups = (cols + kGroup - 1) / kGroup;
    uint32_t r = 0;
    for (; r + kRowBlock <= rows; r += kRowBlock)
        rows_tokens<kRowBlock, kQ4>(payload, rows, r, groups, slices, sliceStride, tokens, y, yStride);
    for (; r < rows; ++r) rows_tokens<1, kQ4>(payload, rows, r, groups, slices, sliceStride, tokens, y, yStride);
}

// ---- batched prefill with rows in lanes ----
//
// For a chunk of many tokens the tile is first rearranged (once) so that one zmm holds 16 rows'
// weights at the same 4-byte step of a block: then vpdpbusd against one token's 4 activations
// broadcast to all lanes sums a whole block's products per (row, token) lane in int32, and the
// block is converted, scaled and added once per 16 rows x token (about 1.5 vector ops per 64
// multiply-adds instead of 4-5 in block_rows_tokens, whose lanes are parts of one row's dot).
// The integer block dots are exact either way; only the order of the f32 additions differs from
// the matvec, so results agree with tile_matvec_quantized within the reassociation bound
// (kernels_test.cpp), not bit for bit.
constexpr uint32_t kLaneRows = 16;                           // rows per zmm
constexpr uint32_t kRowGroups = kTileRows / kLaneRows;        // 8 per full tile
constexpr uint32_t kSteps = kGroup / 4;                      // 4-byte steps per block

struct LaneTile {
    alignas(64) int32_t w[kRowGroups][kMaxGroups][kSteps][kLaneRows];  // [row group][G][step][16 rows] 4 u8 weights
    alignas(64) float scale[kRowGroups][kMaxGroups][kLaneRows];         // [row group][G][16 rows] f32 weight scales
};

template <bool kQ4>
void build_lane_tile(const uint8_t* payload, uint32_t rows, uint32_t groups, LaneTile& lt) {
    constexpr size_t kBlockBytes = kQ4 ? kGroup / 2 : kGroup;
    const uint8_t* scales = payload;                                                          // [rows x G] f16
    const uint8_t* blocks = payload + static_cast<size_t>(rows) * groups * sizeof(uint16_t);  // [rows x G] blocks
    const uint32_t usedGroups = (rows + kLaneRows - 1) / kLaneRows;
    if (rows % kLaneRows != 0) {  // padded lanes: zero weights and scales
        const uint32_t rg = usedGroups - 1;
        for (uint32_t g = 0; g < groups; ++g) {
            for (uint32_t st = 0; st < kSteps; ++st) _mm512_storeu_si512(lt.w[rg][g][st], _mm512_setzero_si512());
            _mm512_storeu_ps(lt.scale[rg][g], _mm512_setzero_ps());
        }
    }
    // Step s of a block sits kLaneRows int32 further on: scatter a row's 8 dwords down its lane.
    const __m256i stepIndex = _mm256_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112);
    const __m256i lowNibbles = _mm256_set1_epi8(0x0F);
    const __m256i flipSign = _mm256_set1_epi8(static_cast<char>(0x80));
    for (uint32_t r = 0; r < rows; ++r) {
        const uint32_t rg = r / kLaneRows, lane = r % kLaneRows;
        const uint8_t* rowScales = scales + static_cast<size_t>(r) * groups * sizeof(uint16_t);
        for (uint32_t g = 0; g < groups; ++g) {
            const uint8_t* b = blocks + (static_cast<size_t>(r) * groups + g) * kBlockBytes;
            __m256i bytes;  // the block's 32 weights as u8 in weight order
            if constexpr (kQ4) {
                const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
                bytes = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), lowNibbles);
            } else {
                bytes = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)), flipSign);  // w + 128
            }
            _mm256_i32scatter_epi32(&lt.w[rg][g][0][lane], stepIndex, bytes, 4);
            const uint16_t h = static_cast<uint16_t>(rowScales[2 * g] | (rowScales[2 * g + 1] << 8));
            lt.scale[rg][g][lane] = _cvtsh_ss(h);
        }
    }
}

template <int RG, int T, bool kQ4>
void lane_rows_tokens(const LaneTile& lt, uint32_t rows, uint32_t rg0, uint32_t groups, const uint8_t* slices,
                      size_t sliceStride, float* y, size_t yStride) {
    const QuantizedX* xq[T];
    for (int t = 0; t < T; ++t) xq[t] = reinterpret_cast<const QuantizedX*>(slices + static_cast<size_t>(t) * sliceStride);
    __m512 acc[RG][T];
    CFLOW_UNROLL_ROWS
    for (int i = 0; i < RG; ++i)
        CFLOW_UNROLL_ROWS
        for (int t = 0; t < T; ++t) acc[i][t] = _mm512_setzero_ps();
    for (uint32_t g = 0; g < groups; ++g) {
        __m512i dot[RG][T];
        CFLOW_UNROLL_ROWS
        for (int t = 0; t < T; ++t) {
            // Q4_0: sum (q - 8) x = sum q x - 8 sum x; Q8_0 (weights + 128): minus 128 sum x.
            const int32_t offset = kQ4 ? xq[t]->q4Offset[g] : 16 * xq[t]->q4Offset[g];
            CFLOW_UNROLL_ROWS
            for (int i = 0; i < RG; ++i) dot[i][t] = _mm512_set1_epi32(offset);
        }
        for (uint32_t st = 0; st < kSteps; ++st) {
            __m512i w[RG];
            CFLOW_UNROLL_ROWS
            for (int i = 0; i < RG; ++i) w[i] = _mm512_loadu_si512(lt.w[rg0 + i][g][st]);
            const uint32_t at = g * kGroup + 4 * st;
            CFLOW_UNROLL_ROWS
            for (int t = 0; t < T; ++t) {
                int32_t xd;
                __builtin_memcpy(&xd, (kQ4 ? xq[t]->natural : xq[t]->q) + at, sizeof(xd));
                const __m512i xb = _mm512_set1_epi32(xd);
                CFLOW_UNROLL_ROWS
                for (int i = 0; i < RG; ++i) dot[i][t] = _mm512_dpbusd_epi32(dot[i][t], w[i], xb);
            }
        }
        CFLOW_UNROLL_ROWS
        for (int t = 0; t < T; ++t) {
            const __m512 xs = _mm512_set1_ps(xq[t]->scale[g]);
            CFLOW_UNROLL_ROWS
            for (int i = 0; i < RG; ++i)
                acc[i][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[i][t]), _mm512_mul_ps(_mm512_loadu_ps(lt.scale[rg0 + i][g]), xs),
                                            acc[i][t]);
        }
    }
    CFLOW_UNROLL_ROWS
    for (int i = 0; i < RG; ++i) {
        const uint32_t r0 = (rg0 + i) * kLaneRows;
        const __mmask16 lanes = first_lanes(rows - r0);
        CFLOW_UNROLL_ROWS
        for (int t = 0; t < T; ++t) {
            float* out = y + static_cast<size_t>(t) * yStride + r0;
            _mm512_mask_storeu_ps(out, lanes, _mm512_add_ps(_mm512_maskz_loadu_ps(lanes, out), acc[i][t]));
        }
    }
}

template <int RG, bool kQ4>
void lane_tokens(const LaneTile& lt, uint32_t rows, uint32_t rg0, uint32_t groups, const uint8_t* slices,
                 size_t sliceStride, uint32_t tokens, float* y, size_t yStride) {
    uint32_t t = 0;
    for (; t + 4 <= tokens; t += 4)
        lane_rows_tokens<RG, 4, kQ4>(lt, rows, rg0, groups, slices + t * sliceStride, sliceStride, y + t * yStride, yStride);
    const uint8_t* restSlices = slices + t * sliceStride;
    float* restY = y + t * yStride;
    switch (tokens - t) {
    case 3: lane_rows_tokens<RG, 3, kQ4>(lt, rows, rg0, groups, restSlices, sliceStride, restY, yStride); break;
    case 2: lane_rows_tokens<RG, 2, kQ4>(lt, rows, rg0, groups, restSlices, sliceStride, restY, yStride); break;
    case 1: lane_rows_tokens<RG, 1, kQ4>(lt, rows, rg0, groups, restSlices, sliceStride, restY, yStride); break;
    default: break;
    }
}

// ---- the same walk on AMX tiles (amx_active(): Sapphire Rapids and later) ----
//
// Per 16 rows (a row group of the LaneTile), 16 tokens and one 32-weight block, TDPBSUD multiplies
// A = the tokens' int8 activations [16 tokens][32 bytes] (signed; each token's slice in column
// order, one row per token at sliceStride) by B = the LaneTile's block [8 steps][16 rows x 4 bytes]
// (unsigned: Q4_0 nibbles, Q8_0 weights + 128, exactly what vpdpbusd reads in lane_rows_tokens)
// into C = [16 tokens][16 rows] int32, the block dots lane_rows_tokens sums step by step. C plus
// the same offset, converted, scaled and added with the same three AVX-512 operations as there
// gives bit-identical results; one tile instruction replaces 128 vpdpbusd and their broadcasts.
// GCC's tile intrinsics pass the row stride as `long`, which is 32 bits on Windows (LLP64) and
// which the assembler then rejects as an index register; Windows gets no tile permission here
// anyway (amx_permission_win32.cpp), so the tile walk is compiled for the other hosts only.
#if defined(_WIN32)
#define CFLOW_AMX_TILES 0
#else
#define CFLOW_AMX_TILES 1
#endif

#if CFLOW_AMX_TILES
struct alignas(64) AmxTileConfig {
    uint8_t palette = 1;   // palette 1: 8 tiles of up to 16 rows x 64 bytes
    uint8_t startRow = 0;
    uint8_t reserved[14] = {};
    uint16_t colsBytes[16] = {};
    uint8_t rows[16] = {};
};
static_assert(sizeof(AmxTileConfig) == 64, "LDTILECFG reads a 64-byte block");

constexpr uint32_t kAmxTokens = 16;  // tokens per A tile (its rows) and per C tile

#define CFLOW_AMX_TARGET __attribute__((target("amx-tile,amx-int8")))

template <bool kQ4>
CFLOW_AMX_TARGET void amx_accumulate(const int32_t (&dots)[kAmxTokens][kLaneRows], const LaneTile& lt, uint32_t rg,
                                     uint32_t g, const QuantizedX* const (&xq)[kAmxTokens], __m512 (&acc)[kAmxTokens]) {
    const __m512 weightScale = _mm512_loadu_ps(lt.scale[rg][g]);
    CFLOW_UNROLL_ROWS
    for (uint32_t t = 0; t < kAmxTokens; ++t) {
        const int32_t offset = kQ4 ? xq[t]->q4Offset[g] : 16 * xq[t]->q4Offset[g];
        const __m512i dot = _mm512_add_epi32(_mm512_load_si512(dots[t]), _mm512_set1_epi32(offset));
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(weightScale, _mm512_set1_ps(xq[t]->scale[g])), acc[t]);
    }
}

// Row groups [0, rowGroups) of lt against tokenBlocks x 16 tokens starting at slices / y.
template <bool kQ4>
CFLOW_AMX_TARGET void lane_tokens_amx(const LaneTile& lt, uint32_t rows, uint32_t rowGroups, uint32_t groups,
                                      const uint8_t* slices, size_t sliceStride, uint32_t tokenBlocks, float* y,
                                      size_t yStride) {
    AmxTileConfig config;
    for (int i = 0; i < 2; ++i) {
        config.colsBytes[i] = kLaneRows * 4, config.rows[i] = kAmxTokens;  // tiles 0, 1 (C): [16 tokens][16 rows] int32
        config.colsBytes[2 + i] = kGroup, config.rows[2 + i] = kAmxTokens;  // tiles 2, 3 (A): [16 tokens][32] int8
        config.colsBytes[4 + i] = kLaneRows * 4, config.rows[4 + i] = kSteps;  // tiles 4, 5 (B): [8 steps][16 rows x 4] u8
    }
    _tile_loadconfig(&config);
    const size_t xAt = kQ4 ? offsetof(QuantizedX, natural) : offsetof(QuantizedX, q);  // column-order int8
    alignas(64) int32_t dots[2][kAmxTokens][kLaneRows];  // C of two blocks
    for (uint32_t tb = 0; tb < tokenBlocks; ++tb) {
        const uint8_t* blockSlices = slices + static_cast<size_t>(tb) * kAmxTokens * sliceStride;
        const QuantizedX* xq[kAmxTokens];
        for (uint32_t t = 0; t < kAmxTokens; ++t) xq[t] = reinterpret_cast<const QuantizedX*>(blockSlices + t * sliceStride);
        const uint8_t* x = blockSlices + xAt;  // token t's block g at x + t * sliceStride + 32 g
        for (uint32_t rg = 0; rg < rowGroups; ++rg) {
            __m512 acc[kAmxTokens];
            CFLOW_UNROLL_ROWS
            for (uint32_t t = 0; t < kAmxTokens; ++t) acc[t] = _mm512_setzero_ps();
            uint32_t g = 0;
            for (; g + 2 <= groups; g += 2) {  // two blocks in flight: C tiles 0 and 1
                _tile_zero(0);
                _tile_zero(1);
                _tile_loadd(2, x + g * kGroup, sliceStride);
                _tile_loadd(4, lt.w[rg][g], kLaneRows * 4);
                _tile_loadd(3, x + (g + 1) * kGroup, sliceStride);
                _tile_loadd(5, lt.w[rg][g + 1], kLaneRows * 4);
                _tile_dpbsud(0, 2, 4);
                _tile_dpbsud(1, 3, 5);
                _tile_stored(0, dots[0], kLaneRows * 4);
                _tile_stored(1, dots[1], kLaneRows * 4);
                amx_accumulate<kQ4>(dots[0], lt, rg, g, xq, acc);
                amx_accumulate<kQ4>(dots[1], lt, rg, g + 1, xq, acc);
            }
            if (g < groups) {
                _tile_zero(0);
                _tile_loadd(2, x + g * kGroup, sliceStride);
                _tile_loadd(4, lt.w[rg][g], kLaneRows * 4);
                _tile_dpbsud(0, 2, 4);
                _tile_stored(0, dots[0], kLaneRows * 4);
                amx_accumulate<kQ4>(dots[0], lt, rg, g, xq, acc);
            }
            const uint32_t r0 = rg * kLaneRows;
            const __mmask16 lanes = first_lanes(rows - r0);
            CFLOW_UNROLL_ROWS
            for (uint32_t t = 0; t < kAmxTokens; ++t) {
                float* out = y + (static_cast<size_t>(tb) * kAmxTokens + t) * yStride + r0;
                _mm512_mask_storeu_ps(out, lanes, _mm512_add_ps(_mm512_maskz_loadu_ps(lanes, out), acc[t]));
            }
        }
    }
    _tile_release();
}
#endif  // CFLOW_AMX_TILES

// Every token of a LaneTile's matmat: whole blocks of 16 on AMX where it is active, the rest (and
// everything elsewhere) on the vpdpbusd walk, two row groups at a time.
template <bool kQ4>
void lane_tile_tokens(const LaneTile& lt, uint32_t rows, uint32_t groups, const uint8_t* slices, size_t sliceStride,
                      uint32_t tokens, float* y, size_t yStride) {
    const uint32_t rowGroups = (rows + kLaneRows - 1) / kLaneRows;
    uint32_t done = 0;
#if CFLOW_AMX_TILES
    if (tokens >= kAmxTokens && amx_active()) {
        const uint32_t tokenBlocks = tokens / kAmxTokens;
        lane_tokens_amx<kQ4>(lt, rows, rowGroups, groups, slices, sliceStride, tokenBlocks, y, yStride);
        done = tokenBlocks * kAmxTokens;
    }
#endif
    if (done == tokens) return;
    slices += static_cast<size_t>(done) * sliceStride;
    y += static_cast<size_t>(done) * yStride;
    uint32_t rg = 0;
    for (; rg + 2 <= rowGroups; rg += 2) lane_tokens<2, kQ4>(lt, rows, rg, groups, slices, sliceStride, tokens - done, y, yStride);
    if (rg < rowGroups) lane_tokens<1, kQ4>(lt, rows, rg, groups, slices, sliceStride, tokens - done, y, yStride);
}

template <bool kQ4>
void matmat_lanes(const uint8_t* payload, uint32_t rows, uint32_t cols, const uint8_t* slices, size_t sliceStride,
                  uint32_t tokens, float* y, size_t yStride) {
    const uint32_t groups = (cols + kGroup - 1) / kGroup;
    LaneTile lt;  // 36 KiB on the stack (unaligned loads and stores: no stack realignment relied on)
    build_lane_tile<kQ4>(payload, rows, groups, lt);
    lane_tile_tokens<kQ4>(lt, rows, groups, slices, sliceStride, tokens, y, yStride);
}

void tile_matmat_quantized_avx512vnni(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols,
                                      const uint8_t* slices, size_t sliceStride, uint32_t tokens, float* y,
                                      size_t yStride) {
    if (is_kquant(dtype))
        return kq_int8_avx512vnni::matmat_quantized(dtype, payload, rows, cols, slices, sliceStride, tokens, y, yStride);
    if (is_ggml32_int8(dtype))
        return g32_int8_avx512vnni::matmat_quantized_g32(dtype, payload, rows, cols, slices, sliceStride, tokens, y, yStride);
    // Rearranging the tile costs about as much as 4-5 tokens of block_rows_tokens; fewer tokens
    // than kMatmatLaneTokens (a MoE expert's share of a chunk) take that path instead.
    if (tokens >= kMatmatLaneTokens && rows <= kTileRows && cols <= kTileCols) {
        if (dtype == DType::Q4_0) matmat_lanes<true>(payload, rows, cols, slices, sliceStride, tokens, y, yStride);
        else matmat_lanes<false>(payload, rows, cols, slices, sliceStride, tokens, y, yStride);
        return;
    }
    if (dtype == DType::Q4_0) matmat_rows<true>(payload, rows, cols, slices, sliceStride, tokens, y, yStride);
    else matmat_rows<false>(payload, rows, cols, slices, sliceStride, tokens, y, yStride);
}

// ---- decode on tiles stored with rows in lanes (lanes_layout.h) ----
//
// The same walk as lane_rows_tokens for one token, on tiles rearranged once at load and kept
// 4-bit: per 16 rows and block, Q4_0 takes 4 loads, 8 masks/shifts and 8 vpdpbusd (Q8_0 8 loads
// and 8 vpdpbusd), then one convert, scale and add; no horizontal sums.
template <bool kQ4>
void lanes_matvec(const uint8_t* lanes, uint32_t rows, uint32_t cols, const QuantizedX& xq, float* y) {
    constexpr uint32_t kChunks = kQ4 ? 4 : 8;  // 64-byte loads per 16 rows and block
    // 2 KiB ahead: on machine C (Xeon, AMX) A/B in one process against 4 KiB, decode of dense-1b
    // +11 % at 1 thread and +6 % at 2 (median of 8 alternating rounds; 1 KiB +5 / +7 %); an
    // earlier session had measured 4 KiB ahead of 2 KiB on another Xeon (BENCHMARKS.md). Every
    // 64-byte line rather than every other: +3 to +8 % at 1 thread (three runs of 8-12 rounds),
    // +5 / +7 % at 2; 3 KiB, prefetchnta, or an extra T2 prefetch 8 KiB ahead were slower.
    constexpr size_t kLanesPrefetchBytes = 2048;
    const uint32_t groups = cols / kGroup;
    const size_t rgBytes = static_cast<size_t>(groups) * (kLaneRows * sizeof(uint16_t) + kChunks * 64);
    const bool prefetch = ::cflow::kernels::g_explicit_prefetch.load(std::memory_order_relaxed);
    const int8_t* xs = kQ4 ? xq.natural : xq.q;  // [G * 32] column order: step s of block g at 32g + 4s
    auto step = [xs](uint32_t g, uint32_t st) {
        int32_t v;
        __builtin_memcpy(&v, xs + g * kGroup + 4 * st, sizeof(v));
        return _mm512_set1_epi32(v);
    };
    const __m512i lowNibbles = _mm512_set1_epi8(0x0F);
    for (uint32_t rg = 0; rg < rows / kLaneRows; ++rg) {
        const uint8_t* scales = lanes + rg * rgBytes;                                                   // [G][16] f16
        const uint8_t* weights = scales + static_cast<size_t>(groups) * kLaneRows * sizeof(uint16_t);  // [G][chunks][64]
        __m512 acc = _mm512_setzero_ps();
        for (uint32_t g = 0; g < groups; ++g) {
            // Q4_0: sum (q - 8) x = sum q x - 8 sum x; Q8_0 (w + 128): minus 128 sum x.
            __m512i dot = _mm512_set1_epi32(kQ4 ? xq.q4Offset[g] : 16 * xq.q4Offset[g]);
            const uint8_t* w = weights + static_cast<size_t>(g) * kChunks * 64;
            CFLOW_UNROLL_ROWS
            for (uint32_t c = 0; c < kChunks; ++c) {
                if (prefetch) _mm_prefetch(reinterpret_cast<const char*>(w + c * 64 + kLanesPrefetchBytes), _MM_HINT_T0);
                const __m512i v = _mm512_loadu_si512(w + c * 64);
                if constexpr (kQ4) {
                    dot = _mm512_dpbusd_epi32(dot, _mm512_and_si512(v, lowNibbles), step(g, 2 * c));
                    dot = _mm512_dpbusd_epi32(dot, _mm512_and_si512(_mm512_srli_epi16(v, 4), lowNibbles),
                                              step(g, 2 * c + 1));
                } else {
                    dot = _mm512_dpbusd_epi32(dot, v, step(g, c));
                }
            }
            const __m512 scale = _mm512_mul_ps(
                _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + g * kLaneRows * sizeof(uint16_t)))),
                _mm512_set1_ps(xq.scale[g]));
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc);
        }
        float* out = y + rg * kLaneRows;
        _mm512_storeu_ps(out, _mm512_add_ps(_mm512_loadu_ps(out), acc));
    }
}

void tile_matvec_quantized_lanes_avx512vnni(DType dtype, const uint8_t* lanes, uint32_t rows, uint32_t cols,
                                            const void* slice, float* y) {
    const auto& xq = *static_cast<const QuantizedX*>(slice);
    if (dtype == DType::Q4_0) lanes_matvec<true>(lanes, rows, cols, xq, y);
    else lanes_matvec<false>(lanes, rows, cols, xq, y);
}

// Batched prefill on lanes tiles: the tile is already in lanes order, so widening it to the
// LaneTile matmat_lanes multiplies is one mask (and shift) per 64 bytes, not a scatter per row
// and block, and every token count takes the lanes walk.
template <bool kQ4>
void expand_lanes_tile(const uint8_t* lanes, uint32_t rows, uint32_t groups, LaneTile& lt) {
    constexpr uint32_t kChunks = kQ4 ? 4 : 8;
    const size_t rgBytes = static_cast<size_t>(groups) * (kLaneRows * sizeof(uint16_t) + kChunks * 64);
    const __m512i lowNibbles = _mm512_set1_epi8(0x0F);
    for (uint32_t rg = 0; rg < rows / kLaneRows; ++rg) {
        const uint8_t* scales = lanes + rg * rgBytes;
        const uint8_t* weights = scales + static_cast<size_t>(groups) * kLaneRows * sizeof(uint16_t);
        for (uint32_t g = 0; g < groups; ++g) {
            _mm512_storeu_ps(lt.scale[rg][g], _mm512_cvtph_ps(_mm256_loadu_si256(
                                                  reinterpret_cast<const __m256i*>(scales + g * kLaneRows * sizeof(uint16_t)))));
            const uint8_t* w = weights + static_cast<size_t>(g) * kChunks * 64;
            for (uint32_t c = 0; c < kChunks; ++c) {
                const __m512i v = _mm512_loadu_si512(w + c * 64);
                if constexpr (kQ4) {
                    _mm512_storeu_si512(lt.w[rg][g][2 * c], _mm512_and_si512(v, lowNibbles));
                    _mm512_storeu_si512(lt.w[rg][g][2 * c + 1], _mm512_and_si512(_mm512_srli_epi16(v, 4), lowNibbles));
                } else {
                    _mm512_storeu_si512(lt.w[rg][g][c], v);
                }
            }
        }
    }
}

void tile_matmat_quantized_lanes_avx512vnni(DType dtype, const uint8_t* lanes, uint32_t rows, uint32_t cols,
                                            const uint8_t* slices, size_t sliceStride, uint32_t tokens, float* y,
                                            size_t yStride) {
    const uint32_t groups = cols / kGroup;
    LaneTile lt;  // 36 KiB on the stack, as in matmat_lanes
    if (dtype == DType::Q4_0) {
        expand_lanes_tile<true>(lanes, rows, groups, lt);
        lane_tile_tokens<true>(lt, rows, groups, slices, sliceStride, tokens, y, yStride);
    } else {
        expand_lanes_tile<false>(lanes, rows, groups, lt);
        lane_tile_tokens<false>(lt, rows, groups, slices, sliceStride, tokens, y, yStride);
    }
}

static_assert(sizeof(QuantizedX) <= kQuantizedSliceBytes && alignof(QuantizedX) <= kQuantizedSliceAlign,
              "a quantized slice must fit the engine's slice buffer");

void quantize_slice_avx512vnni(DType dtype, const float* x, uint32_t cols, void* slice) {
    // K-quant tiles read their own (Q8_K-style) slice: quantize_slice(slice_dtype(Q4_K)) writes it.
    if (is_kquant(dtype)) return kq_int8_avx512vnni::quantize_slice(x, cols, slice);
    if (is_ggml32_int8(dtype)) return g32_int8_avx512vnni::quantize_slice_g32(x, cols, slice);
    auto& xq = *static_cast<QuantizedX*>(slice);
    const uint32_t groups = (cols + kGroup - 1) / kGroup;
    xq = QuantizedX{};  // zeroed: lanes past G of the scale vector are loaded (never used)
    if (dtype == DType::Q4_0) quantize_x<true>(x, cols, groups, xq);
    else quantize_x<false>(x, cols, groups, xq);
}

template <bool kQ4>
void rows_quantized(const uint8_t* payload, uint32_t rows, uint32_t cols, const QuantizedX& xq, float* y) {
    const uint32_t groups = (cols + kGroup - 1) / kGroup;
    uint32_t r = 0;
    for (; r + kRowBlock <= rows; r += kRowBlock) block_rows<kRowBlock, kQ4>(payload, rows, r, groups, xq, y);
    for (; r < rows; ++r) block_rows<1, kQ4>(payload, rows, r, groups, xq, y);
}

void tile_matvec_quantized_avx512vnni(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols,
                                      const void* slice, float* y) {
    if (is_kquant(dtype)) return kq_int8_avx512vnni::matvec_quantized(dtype, payload, rows, cols, slice, y);
    if (is_ggml32_int8(dtype)) return g32_int8_avx512vnni::matvec_quantized_g32(dtype, payload, rows, cols, slice, y);
    const auto& xq = *static_cast<const QuantizedX*>(slice);
    if (dtype == DType::Q4_0) rows_quantized<true>(payload, rows, cols, xq, y);
    else rows_quantized<false>(payload, rows, cols, xq, y);
}

void tile_matvec_avx512vnni(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x,
                            float* y) {
    // K-quants: int8 or f32 activations as kKQuantInt8Activations (kquant_kernels.h) says.
    if (is_kquant(dtype)) {
        if constexpr (kKQuantInt8Activations) return kq_int8_avx512vnni::matvec(dtype, payload, rows, cols, x, y);
        return tile_matvec_avx512(dtype, payload, rows, cols, x, y);
    }
    if (g32_int8_tile_fits(dtype, cols)) return g32_int8_avx512vnni::matvec_g32(dtype, payload, rows, cols, x, y);
    // The quantized-x buffer is sized for one tile row; wider inputs are outside the tile
    // contract and take the f32 AVX-512 path instead.
    if (cols == 0 || cols > kTileCols || (dtype != DType::Q8_0 && dtype != DType::Q4_0))
        return tile_matvec_avx512(dtype, payload, rows, cols, x, y);
    QuantizedX xq;
    quantize_slice_avx512vnni(dtype, x, cols, &xq);
    tile_matvec_quantized_avx512vnni(dtype, payload, rows, cols, &xq, y);
}

} // namespace

const Kernels& avx512vnni_table() {
    static constexpr Kernels kTable{.isa = Isa::Avx512Vnni,
                                    .tile_matvec = &tile_matvec_avx512vnni,
                                    .dot = &dot_avx512,
                                    .axpy = &axpy_avx512,
                                    .dot_f16 = &dot_f16_avx512,
                                    .axpy_f16 = &axpy_f16_avx512,
                                    .weighted_row_sum = &weighted_row_sum_avx512,
                                    .quantize_slice = &quantize_slice_avx512vnni,
                                    .quantized_dtypes = dtype_bit(DType::Q4_0) | dtype_bit(DType::Q8_0) | kKQuantInt8DtypeBits |
                                                        kGgml32Int8DtypeBits,
                                    .tile_matvec_quantized = &tile_matvec_quantized_avx512vnni,
                                    .tile_matmat_quantized = &tile_matmat_quantized_avx512vnni,
                                    .tile_matvec_quantized_lanes = &tile_matvec_quantized_lanes_avx512vnni,
                                    .tile_matmat_quantized_lanes = &tile_matmat_quantized_lanes_avx512vnni};
    return kTable;
}

} // namespace cflow::kernels

#endif // CFLOW_KERNELS_X86
