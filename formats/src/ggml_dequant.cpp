// Dequantisation of ggml blocks (ggml-common.h block structs, gguf.md). Each block is copied
// into its packed struct before it is read: rows of 210-byte Q6_K or 110-byte Q3_K blocks
// leave the 16-bit fields at odd addresses, and a memcpy keeps those loads defined.
//
// Exactness: ggml computes every value in f32 as (scale * integer) or (scale * integer - min).
// The f16 scales carry 11 significant bits and the integers at most 7 (or, for Q6_K's
// scale * quant, 7 + 5), so every product is exact in f32's 24 bits and only the final
// subtraction (or, for Q8_K's f32 scale, the single product) rounds. Hence the result is the
// correctly rounded value of the exact formula whatever the order of evaluation, and the same
// with or without a fused multiply-add.
#include <array>
#include <cstring>

#include "cflow/formats/ggml_blocks.h"
#include "cflow/formats/tile_codec.h"

namespace cflow {
namespace {

// --- on-disk blocks (little-endian; f16 fields as raw bits) ----------------------------

struct BlockQ4_0 {         // value = d * (nibble - 8); low nibbles are weights 0..15, high 16..31
    uint16_t d;
    uint8_t qs[16];
};
struct BlockQ4_1 {         // value = d * nibble + m
    uint16_t d, m;
    uint8_t qs[16];
};
struct BlockQ5_0 {         // 5-bit q = nibble | bit i of qh << 4 (weight i); value = d * (q - 16)
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[16];
};
struct BlockQ5_1 {         // as Q5_0 without the offset: value = d * q + m
    uint16_t d, m;
    uint8_t qh[4];
    uint8_t qs[16];
};
struct BlockQ8_0 {         // value = d * q
    uint16_t d;
    int8_t qs[32];
};
struct BlockIQ4NL {        // value = d * kIq4nlValues[nibble], nibbles ordered as Q4_0
    uint16_t d;
    uint8_t qs[16];
};
struct BlockMXFP4 {        // value = 2^(e - 128) * kMxfp4Values[nibble] (twice the E2M1 value), nibbles as Q4_0
    uint8_t e;             // E8M0 exponent
    uint8_t qs[16];
};
// K-quants: 256 weights in sub-blocks of 16 (Q2_K, Q3_K, Q6_K) or 32 (Q4_K, Q5_K), each
// with its own small integer scale (and min) times the super-block's f16 d (and dmin).
struct BlockQ2_K {         // scales[i]: low nibble = scale, high nibble = min of sub-block i
    uint8_t scales[16];
    uint8_t qs[64];        // 2-bit quants, 4 per byte
    uint16_t d, dmin;
};
struct BlockQ3_K {
    uint8_t hmask[32];     // third bit of each quant; clear means "subtract 4"
    uint8_t qs[64];        // low 2 bits of the quants
    uint8_t scales[12];    // 16 six-bit scales, offset by 32
    uint16_t d;
};
struct BlockQ4_K {
    uint16_t d, dmin;
    uint8_t scales[12];    // 8 six-bit scales and 8 six-bit mins (get_scale_min below)
    uint8_t qs[128];       // nibbles
};
struct BlockQ5_K {
    uint16_t d, dmin;
    uint8_t scales[12];    // as Q4_K
    uint8_t qh[32];        // fifth bit of each quant
    uint8_t qs[128];       // low nibbles
};
struct BlockQ6_K {
    uint8_t ql[128];       // low 4 bits
    uint8_t qh[64];        // high 2 bits
    int8_t scales[16];     // one per 16 weights
    uint16_t d;
};
struct BlockIQ4XS {        // IQ4_NL's codebook with a six-bit scale per 32 weights (ls - 32) times d
    uint16_t d;
    uint16_t scales_h;     // bits 2i..2i+1: high 2 bits of sub-block i's scale
    uint8_t scales_l[4];   // nibble i % 2 of byte i / 2: low 4 bits of sub-block i's scale
    uint8_t qs[128];       // 16 bytes per 32-weight sub-block, nibbles ordered as IQ4_NL
};
struct BlockQ8_K {         // value = d * q; bsums (sums of 16 quants) serve dot products only
    float d;
    int8_t qs[256];
    int16_t bsums[16];
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockIQ4NL) == 18);
static_assert(sizeof(BlockMXFP4) == 17);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockIQ4XS) == 136);
static_assert(sizeof(BlockQ8_K) == 292);

// IQ4_NL's fixed non-linear 4-bit codebook (ggml kvalues_iq4nl).
constexpr std::array<int8_t, 16> kIq4nlValues = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                 1,    13,   25,  38,  53,  69,  89,  113};

// MXFP4's E2M1 values doubled (ggml kvalues_mxfp4), so the scale is half the E8M0 power.
constexpr std::array<int8_t, 16> kMxfp4Values = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

constexpr std::array<GgmlBlockType, 17> kTypes = {{
    {kGgmlF32, "F32", 1, 4},
    {kGgmlF16, "F16", 1, 2},
    {kGgmlQ4_0, "Q4_0", 32, sizeof(BlockQ4_0)},
    {kGgmlQ4_1, "Q4_1", 32, sizeof(BlockQ4_1)},
    {kGgmlQ5_0, "Q5_0", 32, sizeof(BlockQ5_0)},
    {kGgmlQ5_1, "Q5_1", 32, sizeof(BlockQ5_1)},
    {kGgmlQ8_0, "Q8_0", 32, sizeof(BlockQ8_0)},
    {kGgmlQ2_K, "Q2_K", kGgmlSuperBlock, sizeof(BlockQ2_K)},
    {kGgmlQ3_K, "Q3_K", kGgmlSuperBlock, sizeof(BlockQ3_K)},
    {kGgmlQ4_K, "Q4_K", kGgmlSuperBlock, sizeof(BlockQ4_K)},
    {kGgmlQ5_K, "Q5_K", kGgmlSuperBlock, sizeof(BlockQ5_K)},
    {kGgmlQ6_K, "Q6_K", kGgmlSuperBlock, sizeof(BlockQ6_K)},
    {kGgmlQ8_K, "Q8_K", kGgmlSuperBlock, sizeof(BlockQ8_K)},
    {kGgmlIQ4_NL, "IQ4_NL", 32, sizeof(BlockIQ4NL)},
    {kGgmlIQ4_XS, "IQ4_XS", kGgmlSuperBlock, sizeof(BlockIQ4XS)},
    {kGgmlBF16, "BF16", 1, 2},
    {kGgmlMXFP4, "MXFP4", 32, sizeof(BlockMXFP4)},
}};

template <class Block>
Block load_block(const uint8_t* src) {
    Block b;
    std::memcpy(&b, src, sizeof(Block));
    return b;
}

float f(int v) { return static_cast<float>(v); }

// --- 32-weight types: out[0..32) of one block -------------------------------------------

void q4_0(const uint8_t* src, float* y) {
    const auto b = load_block<BlockQ4_0>(src);
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < 16; ++j) {
        y[j] = d * f((b.qs[j] & 0x0f) - 8);
        y[j + 16] = d * f((b.qs[j] >> 4) - 8);
    }
}

void q4_1(const uint8_t* src, float* y) {
    const auto b = load_block<BlockQ4_1>(src);
    const float d = f16_to_f32(b.d), m = f16_to_f32(b.m);
    for (int j = 0; j < 16; ++j) {
        y[j] = d * f(b.qs[j] & 0x0f) + m;
        y[j + 16] = d * f(b.qs[j] >> 4) + m;
    }
}

// The 5-bit quants of a Q5_0 / Q5_1 block: bit j of the little-endian u32 qh is bit 4 of weight j.
std::array<int, 32> five_bit_quants(const uint8_t qh_bytes[4], const uint8_t qs[16]) {
    uint32_t qh;
    std::memcpy(&qh, qh_bytes, 4);
    std::array<int, 32> q{};
    for (int j = 0; j < 16; ++j) {
        q[j] = (qs[j] & 0x0f) | static_cast<int>(((qh >> j) & 1u) << 4);
        q[j + 16] = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
    }
    return q;
}

void q5_0(const uint8_t* src, float* y) {
    const auto b = load_block<BlockQ5_0>(src);
    const float d = f16_to_f32(b.d);
    const auto q = five_bit_quants(b.qh, b.qs);
    for (int j = 0; j < 32; ++j) y[j] = d * f(q[j] - 16);
}

void q5_1(const uint8_t* src, float* y) {
    const auto b = load_block<BlockQ5_1>(src);
    const float d = f16_to_f32(b.d), m = f16_to_f32(b.m);
    const auto q = five_bit_quants(b.qh, b.qs);
    for (int j = 0; j < 32; ++j) y[j] = d * f(q[j]) + m;
}

void q8_0(const uint8_t* src, float* y) {
    const auto b = load_block<BlockQ8_0>(src);
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < 32; ++j) y[j] = d * f(b.qs[j]);
}

void iq4_nl(const uint8_t* src, float* y) {
    const auto b = load_block<BlockIQ4NL>(src);
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < 16; ++j) {
        y[j] = d * f(kIq4nlValues[b.qs[j] & 0x0f]);
        y[j + 16] = d * f(kIq4nlValues[b.qs[j] >> 4]);
    }
}

// 2^(e - 128) as ggml_e8m0_to_fp32_half builds it (denormal for e < 2).
float e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : uint32_t(e - 1) << 23;
    float out;
    std::memcpy(&out, &bits, sizeof out);
    return out;
}

// A power of two times a value of at most 4 significant bits: exact in f32.
void mxfp4(const uint8_t* src, float* y) {
    const auto b = load_block<BlockMXFP4>(src);
    const float d = e8m0_half(b.e);
    for (int j = 0; j < 16; ++j) {
        y[j] = d * f(kMxfp4Values[b.qs[j] & 0x0f]);
        y[j + 16] = d * f(kMxfp4Values[b.qs[j] >> 4]);
    }
}

// --- K-quants: out[0..256) of one super-block -------------------------------------------

// Q2_K: 16 sub-blocks of 16. Each 128-weight half n uses qs[32n..32n+32); its weight
// 128n + 32s + i (s = 0..3, i = 0..31) is bits 2s..2s+1 of qs[32n + i], in sub-block 8n + 2s + i/16.
void q2_k(const uint8_t* src, float* y) {
    const auto b = load_block<BlockQ2_K>(src);
    const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
    for (int n = 0; n < 2; ++n)
        for (int s = 0; s < 4; ++s)
            for (int i = 0; i < 32; ++i) {
                const uint8_t sc = b.scales[8 * n + 2 * s + i / 16];
                const int q = (b.qs[32 * n + i] >> (2 * s)) & 3;
                y[128 * n + 32 * s + i] = (d * f(sc & 0x0f)) * f(q) - dmin * f(sc >> 4);
            }
}

// Q3_K's 16 six-bit scales: low 4 bits from scales[0..8) (low nibbles for 0..7, high
// nibbles for 8..15), high 2 bits from scales[8 + i % 4] at bit 2 * (i / 4).
int q3_k_scale(const uint8_t scales[12], int i) {
    const int low = i < 8 ? scales[i] & 0x0f : scales[i - 8] >> 4;
    const int high = (scales[8 + i % 4] >> (2 * (i / 4))) & 3;
    return (low | (high << 4)) - 32;
}

// Q3_K: weights laid out as Q2_K; the third bit of weight 128n + 32s + i is bit 4n + s of
// hmask[i], and a clear bit lowers the quant by 4 (q in -4..3).
void q3_k(const uint8_t* src, float* y) {
    const auto b = load_block<BlockQ3_K>(src);
    const float d = f16_to_f32(b.d);
    for (int n = 0; n < 2; ++n)
        for (int s = 0; s < 4; ++s)
            for (int i = 0; i < 32; ++i) {
                const int low = (b.qs[32 * n + i] >> (2 * s)) & 3;
                const bool high = (b.hmask[i] >> (4 * n + s)) & 1;
                const int q = low - (high ? 0 : 4);
                y[128 * n + 32 * s + i] = (d * f(q3_k_scale(b.scales, 8 * n + 2 * s + i / 16))) * f(q);
            }
}

// Q4_K / Q5_K: 8 six-bit (scale, min) pairs packed in 12 bytes (ggml get_scale_min_k4):
// pairs 0..3 are the low 6 bits of bytes j and j + 4; pairs 4..7 take their low 4 bits from
// the nibbles of byte j + 4 and their high 2 bits from the top bits of bytes j - 4 and j.
void scale_min(const uint8_t scales[12], int j, int* scale, int* min) {
    if (j < 4) {
        *scale = scales[j] & 63;
        *min = scales[j + 4] & 63;
    } else {
        *scale = (scales[j + 4] & 0x0f) | ((scales[j - 4] >> 6) << 4);
        *min = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
    }
}

// Q4_K: sub-block 2k (weights 64k..64k+32) is the low nibbles of qs[32k..32k+32), sub-block
// 2k + 1 the high nibbles; value = d * scale * q - dmin * min.
void q4_k(const uint8_t* src, float* y) {
    const auto b = load_block<BlockQ4_K>(src);
    const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
    for (int k = 0; k < 4; ++k)
        for (int half = 0; half < 2; ++half) {
            int sc = 0, mn = 0;
            scale_min(b.scales, 2 * k + half, &sc, &mn);
            const float ds = d * f(sc), dm = dmin * f(mn);
            for (int i = 0; i < 32; ++i) {
                const int q = half == 0 ? b.qs[32 * k + i] & 0x0f : b.qs[32 * k + i] >> 4;
                y[64 * k + 32 * half + i] = ds * f(q) - dm;
            }
        }
}

// Q5_K: Q4_K plus a fifth bit: bit 2k + half of qh[i] for weight 64k + 32 half + i.
void q5_k(const uint8_t* src, float* y) {
    const auto b = load_block<BlockQ5_K>(src);
    const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
    for (int k = 0; k < 4; ++k)
        for (int half = 0; half < 2; ++half) {
            int sc = 0, mn = 0;
            scale_min(b.scales, 2 * k + half, &sc, &mn);
            const float ds = d * f(sc), dm = dmin * f(mn);
            for (int i = 0; i < 32; ++i) {
                const int low = half == 0 ? b.qs[32 * k + i] & 0x0f : b.qs[32 * k + i] >> 4;
                const int high = (b.qh[i] >> (2 * k + half)) & 1;
                y[64 * k + 32 * half + i] = ds * f(low | (high << 4)) - dm;
            }
        }
}

// Q6_K: per 128-weight half n, ql[64n..64n+64) and qh[32n..32n+32). Weight 128n + 32s + i
// (s = 0..3) has its low 4 bits in ql[64n + i + 32 (s & 1)] (low nibble for s < 2, high for
// s >= 2), its high 2 bits at bit 2s of qh[32n + i], q in -32..31, scale scales[8n + 2s + i/16].
void q6_k(const uint8_t* src, float* y) {
    const auto b = load_block<BlockQ6_K>(src);
    const float d = f16_to_f32(b.d);
    for (int n = 0; n < 2; ++n)
        for (int s = 0; s < 4; ++s)
            for (int i = 0; i < 32; ++i) {
                const uint8_t l = b.ql[64 * n + i + 32 * (s & 1)];
                const int low = s < 2 ? l & 0x0f : l >> 4;
                const int high = (b.qh[32 * n + i] >> (2 * s)) & 3;
                const int q = (low | (high << 4)) - 32;
                y[128 * n + 32 * s + i] = (d * f(b.scales[8 * n + 2 * s + i / 16])) * f(q);
            }
}

// IQ4_XS (ggml dequantize_row_iq4_xs): sub-block i (weights 32i..32i+32) has the six-bit scale
// ls = low nibble | high 2 bits << 4 and dl = d * (ls - 32) (exact: 11 + 6 bits); its 16 bytes
// qs[16i..16i+16) index the IQ4_NL codebook as IQ4_NL does. dl * value adds at most 7 bits: exact.
void iq4_xs(const uint8_t* src, float* y) {
    const auto b = load_block<BlockIQ4XS>(src);
    const float d = f16_to_f32(b.d);
    for (int i = 0; i < 8; ++i) {
        const int ls = ((b.scales_l[i / 2] >> (4 * (i % 2))) & 0x0f) | (((b.scales_h >> (2 * i)) & 3) << 4);
        const float dl = d * f(ls - 32);
        const uint8_t* qs = b.qs + 16 * i;
        for (int j = 0; j < 16; ++j) {
            y[32 * i + j] = dl * f(kIq4nlValues[qs[j] & 0x0f]);
            y[32 * i + j + 16] = dl * f(kIq4nlValues[qs[j] >> 4]);
        }
    }
}

void q8_k(const uint8_t* src, float* y) {
    const auto b = load_block<BlockQ8_K>(src);
    for (int j = 0; j < 256; ++j) y[j] = b.d * f(b.qs[j]);
}

using BlockDecoder = void (*)(const uint8_t*, float*);

BlockDecoder decoder_of(uint32_t ggml_type) {
    switch (ggml_type) {
        case kGgmlQ4_0: return q4_0;
        case kGgmlQ4_1: return q4_1;
        case kGgmlQ5_0: return q5_0;
        case kGgmlQ5_1: return q5_1;
        case kGgmlQ8_0: return q8_0;
        case kGgmlQ2_K: return q2_k;
        case kGgmlQ3_K: return q3_k;
        case kGgmlQ4_K: return q4_k;
        case kGgmlQ5_K: return q5_k;
        case kGgmlQ6_K: return q6_k;
        case kGgmlQ8_K: return q8_k;
        case kGgmlIQ4_NL: return iq4_nl;
        case kGgmlIQ4_XS: return iq4_xs;
        case kGgmlMXFP4: return mxfp4;
        default: return nullptr;
    }
}

} // namespace

std::span<const GgmlBlockType> ggml_block_types() { return kTypes; }

const GgmlBlockType* find_ggml_block_type(uint32_t ggml_type) {
    for (const GgmlBlockType& t : kTypes)
        if (t.ggml_type == ggml_type) return &t;
    return nullptr;
}

std::string supported_ggml_type_names() {
    std::string out;
    for (const GgmlBlockType& t : kTypes) {
        if (!out.empty()) out += ", ";
        out += t.name;
    }
    return out;
}

void dequantize_ggml_row(uint32_t ggml_type, const uint8_t* src, uint64_t n_elements, float* out) {
    switch (ggml_type) {
        case kGgmlF32: convert_to_f32(DType::F32, src, n_elements, out); return;
        case kGgmlF16: convert_to_f32(DType::F16, src, n_elements, out); return;
        case kGgmlBF16: convert_to_f32(DType::BF16, src, n_elements, out); return;
        default: break;
    }
    const GgmlBlockType* type = find_ggml_block_type(ggml_type);
    const BlockDecoder decode = decoder_of(ggml_type);
    if (!type || !decode) return;  // callers pass only listed types (read_gguf refuses the rest)
    const uint64_t blocks = n_elements / type->block_elements;
    for (uint64_t b = 0; b < blocks; ++b) decode(src + b * type->block_bytes, out + b * type->block_elements);
}

} // namespace cflow
