// K-quant (Q4_K / Q5_K / Q6_K) tile kernels of every SIMD path against the scalar kernel
// (matvec_kquant, kernels_scalar.cpp: ggml's dequantised f32 weights, then an index-order f32 dot),
// with bounds derived below, plus the exactness contracts of the int8 paths' slice API. The int8
// K-quant kernels (kquant_int8_body.inc) are tested directly as well as through the Kernels tables,
// which route K-quants to them only when kKQuantInt8Activations (kquant_kernels.h) is on.
//
// Bound derivation. u = 2^-24; gamma_k = k u / (1 - k u) (Higham 3.1); kReassocRelTol(n) =
// gamma_{n+1} + gamma_{n+8} as in kernels_test.cpp: any two evaluations of the same n-term dot in
// which each term passes through at most n + 8 roundings differ by at most kReassocRelTol(n) times
// sum |terms| + |y0|.
// * f32 paths (Avx2, Avx512): they dequantize to the very f32 weights the scalar kernel uses
//   (ggml's products are exact, kquant_f32_body.inc), so only the order of the f32 additions
//   differs:  |simd - scalar| <= kReassocRelTol(256) * (sum_c |w_c x_c| + |y0|).
// * int8 paths (Avx2Int8, AvxVnni, Avx512Vnni): x is replaced by dx * xq_c with dx = amax / 127
//   (amax = max_c |x_c| over the 256 columns) and xq_c = round(x_c / dx), so |x_c - dx xq_c| <=
//   dx / 2; the f32 rounding of dx, 1 / dx and x * (1 / dx) moves x / dx by under 127 * 3u steps,
//   covered by 0.5001 instead of 0.5 (kActQuantTol). The integer sums are exact; the weights enter
//   as the exact a_c - b_c (a_c = d sc q, b_c = dmin mn or 0), which differ from the scalar
//   kernel's rounded w_c by at most u (|a_c| + |b_c|), and the few f32 steps at the end (int to
//   f32, d * dx, dmin * dx, two products, the fused subtract, the add into y: at most 6 roundings
//   per term) act on terms of size (|a_c| + |b_c|) |dx xq_c|. Hence
//     |int8 - scalar| <= kActQuantTol * amax * sum_c |w_c| (1 + u)                 [activations]
//                      + kReassocRelTol(256) * (sum_c m_c (|x_c| + 0.5001 dx) + |y0|)   [rounding]
//   with m_c = |a_c| + |b_c| (>= |w_c|; both roundings of scalar and int8 fit in it, as
//   kReassocRelTol(256) > 2 gamma_257 > u + gamma_6). The test decodes a_c, b_c itself (ggml's
//   get_scale_min_k4 rule, written out below) and w_c through formats' dequantize_ggml_row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "cflow/engine/kernels/kernels.h"
#include "cflow/formats/ggml_blocks.h"
#include "cflow/formats/tile_codec.h"
#include "kernels/kquant_kernels.h"

namespace cflow {
namespace kquant_test {
namespace {

constexpr double kUnitRoundoff = 0x1p-24;
constexpr uint32_t kCols = kKQuantBlock;  // 256: a K-quant tile row is one super-block
constexpr double kActQuantTol = 0.5001 / 127.0;

double gamma_k(double k) { return k * kUnitRoundoff / (1.0 - k * kUnitRoundoff); }
double reassoc_rel_tol(uint32_t n) { return gamma_k(n + 1.0) + gamma_k(n + 8.0); }

constexpr Isa kSimdPaths[] = {Isa::Avx2, Isa::Avx512, Isa::Avx2Int8, Isa::AvxVnni, Isa::Avx512Vnni};
constexpr Isa kInt8Paths[] = {Isa::Avx2Int8, Isa::AvxVnni, Isa::Avx512Vnni};
constexpr DType kKQuants[] = {DType::Q4_K, DType::Q5_K, DType::Q6_K};
constexpr uint32_t kRowCounts[] = {1, 7, 128};

struct alignas(kQuantizedSliceAlign) SliceBuffer {
    uint8_t bytes[kQuantizedSliceBytes];
};

// A finite f16 with a random sign and a biased exponent in [minExp, maxExp] (1 = smallest normal).
uint16_t random_f16(std::mt19937& rng, int minExp, int maxExp) {
    const auto sign = static_cast<uint16_t>(rng() & 1u);
    const auto exponent = static_cast<uint16_t>(std::uniform_int_distribution<int>(minExp, maxExp)(rng));
    const auto mantissa = static_cast<uint16_t>(rng() & 0x3FFu);
    return static_cast<uint16_t>((sign << 15) | (exponent << 10) | mantissa);
}

void put_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// Offsets of the f16 fields in each block (ggml-common.h): Q4_K / Q5_K start with d, dmin; Q6_K ends with d.
void set_block_scales(DType dtype, uint8_t* block, uint16_t d, uint16_t dmin) {
    if (dtype == DType::Q6_K) {
        put_u16(block + 208, d);
    } else {
        put_u16(block, d);
        put_u16(block + 2, dmin);
    }
}

// rows random super-blocks: random bytes for quants, high bits and packed scales, then finite
// f16 d (and dmin) of varied magnitude (2^-12 .. 2^3, random sign).
std::vector<uint8_t> random_tile(DType dtype, uint32_t rows, std::mt19937& rng) {
    const uint32_t blockBytes = kquant_block_bytes(dtype);
    std::vector<uint8_t> tile(size_t{rows} * blockBytes);  // [rows] super-blocks
    for (uint8_t& b : tile) b = static_cast<uint8_t>(rng());
    for (uint32_t r = 0; r < rows; ++r)
        set_block_scales(dtype, tile.data() + size_t{r} * blockBytes, random_f16(rng, 3, 18), random_f16(rng, 3, 18));
    return tile;
}

// x with varied magnitudes: each column a uniform value times 2^e, e in [-8, 4], some exact zeros.
std::vector<float> random_x(std::mt19937& rng) {
    std::vector<float> x(kCols);  // [256] f32
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::uniform_int_distribution<int> exponent(-8, 4);
    for (float& v : x) v = rng() % 16 == 0 ? 0.0f : std::ldexp(unit(rng), exponent(rng));
    return x;
}

// ggml's get_scale_min_k4, written out independently of the kernels: the min of 32-weight chunk j.
int q45_min(const uint8_t* scales12, int j) {
    return j < 4 ? (scales12[j + 4] & 63) : ((scales12[j + 4] >> 4) | ((scales12[j] >> 6) << 4));
}

// Per row: the scalar kernel's weights w_c and m_c = |a_c| + |b_c| (w_c ~= a_c - b_c, b_c the min term).
struct RowTerms {
    std::vector<float> w;   // [256] f32 (dequantize_ggml_row)
    std::vector<double> m;  // [256]
};

RowTerms row_terms(DType dtype, const uint8_t* block) {
    RowTerms t{std::vector<float>(kCols), std::vector<double>(kCols)};
    dequantize_ggml_row(kquant_ggml_type(dtype), block, kCols, t.w.data());
    double dmin = 0.0;
    if (dtype != DType::Q6_K) {
        uint16_t h;
        std::memcpy(&h, block + 2, 2);
        dmin = f16_to_f32(h);
    }
    for (uint32_t c = 0; c < kCols; ++c) {
        const double b = dtype == DType::Q6_K ? 0.0 : std::fabs(dmin * q45_min(block + 4, static_cast<int>(c / 32)));
        t.m[c] = std::fabs(static_cast<double>(t.w[c])) + 2.0 * b;  // |a| <= |w| + |b| (w = a - b, up to one rounding)
    }
    return t;
}

// The derived bound for row r (header comment).
double row_bound(bool int8Path, const RowTerms& t, const std::vector<float>& x, float y0) {
    double amax = 0.0;
    for (float v : x) amax = std::max(amax, std::fabs(static_cast<double>(v)));
    const double dx = amax / 127.0;
    double wx = 0.0, wAbs = 0.0, mx = 0.0;
    for (uint32_t c = 0; c < kCols; ++c) {
        const double ax = std::fabs(static_cast<double>(x[c]));
        wx += std::fabs(static_cast<double>(t.w[c])) * ax;
        wAbs += std::fabs(static_cast<double>(t.w[c]));
        mx += t.m[c] * (ax + 0.5001 * dx);
    }
    const double y0Abs = std::fabs(static_cast<double>(y0));
    if (!int8Path) return reassoc_rel_tol(kCols) * (wx + y0Abs);
    return kActQuantTol * amax * wAbs * (1.0 + kUnitRoundoff) + reassoc_rel_tol(kCols) * (mx + y0Abs);
}

std::vector<float> random_y(uint32_t rows, std::mt19937& rng) {
    std::vector<float> y(rows);  // [rows] f32, the values the kernel adds into
    std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
    for (float& v : y) v = dist(rng);
    return y;
}

// Whether the table of `isa` runs K-quant tiles with int8 activations.
bool table_quantizes_kquants(Isa isa) { return isa_quantizes_activations(isa) && kernels::kKQuantInt8Activations; }

// The int8 K-quant kernels of one path, called directly (engine-internal, kquant_kernels.h).
struct Int8KQuant {
    void (*quantize_slice)(const float*, uint32_t, void*);
    void (*matvec_quantized)(DType, const uint8_t*, uint32_t, uint32_t, const void*, float*);
    void (*matmat_quantized)(DType, const uint8_t*, uint32_t, uint32_t, const uint8_t*, size_t, uint32_t, float*, size_t);
    void (*matvec)(DType, const uint8_t*, uint32_t, uint32_t, const float*, float*);
};

Int8KQuant int8_kquant(Isa isa) {
#if CFLOW_KERNELS_X86
    using namespace kernels;
    switch (isa) {
    case Isa::Avx2Int8:
        return {&kq_int8_avx2::quantize_slice, &kq_int8_avx2::matvec_quantized, &kq_int8_avx2::matmat_quantized, &kq_int8_avx2::matvec};
    case Isa::AvxVnni:
        return {&kq_int8_avxvnni::quantize_slice, &kq_int8_avxvnni::matvec_quantized, &kq_int8_avxvnni::matmat_quantized,
                &kq_int8_avxvnni::matvec};
    case Isa::Avx512Vnni:
        return {&kq_int8_avx512vnni::quantize_slice, &kq_int8_avx512vnni::matvec_quantized,
                &kq_int8_avx512vnni::matmat_quantized, &kq_int8_avx512vnni::matvec};
    default: break;
    }
#endif
    (void)isa;
    return {};
}

using MatvecFn = void (*)(DType, const uint8_t*, uint32_t, uint32_t, const float*, float*);

std::string path_dtype_name(const ::testing::TestParamInfo<std::tuple<Isa, DType>>& info) {
    return std::string(isa_name(std::get<0>(info.param))) + "_" + std::string(dtype_name(std::get<1>(info.param)));
}

// Compares one tile matvec (`matvec`, of path `isa`, int8 activations or not) with the scalar
// kernel; returns the worst error / bound.
double check_tile(Isa isa, MatvecFn matvec, bool int8Activations, DType dtype, const std::vector<uint8_t>& tile,
                  uint32_t rows, const std::vector<float>& x, const std::vector<float>& y0) {
    std::vector<float> expected = y0, got = y0;
    kernels_for(Isa::Scalar).tile_matvec(dtype, tile.data(), rows, kCols, x.data(), expected.data());
    matvec(dtype, tile.data(), rows, kCols, x.data(), got.data());
    double worst = 0.0;
    const uint32_t blockBytes = kquant_block_bytes(dtype);
    for (uint32_t r = 0; r < rows; ++r) {
        const RowTerms t = row_terms(dtype, tile.data() + size_t{r} * blockBytes);
        const double bound = row_bound(int8Activations, t, x, y0[r]);
        const double err = std::fabs(static_cast<double>(got[r]) - static_cast<double>(expected[r]));
        EXPECT_LE(err, bound) << "row " << r << ": " << isa_name(isa) << " " << got[r] << " vs scalar " << expected[r];
        if (bound > 0.0) worst = std::max(worst, err / bound);
    }
    return worst;
}

class KQuantKernelsSimd : public ::testing::TestWithParam<std::tuple<Isa, DType>> {};

TEST_P(KQuantKernelsSimd, MatchesScalarWithinDerivedBound) {
    const auto [isa, dtype] = GetParam();
    if (!isa_supported(isa)) GTEST_SKIP() << "this CPU/OS does not support the " << isa_name(isa) << " path";
    std::mt19937 rng(777u + 16u * static_cast<unsigned>(isa) + static_cast<unsigned>(dtype));
    double worst = 0.0;  // max |simd - scalar| / bound, printed for information
    for (int rep = 0; rep < 4; ++rep) {
        for (uint32_t rows : kRowCounts) {
            SCOPED_TRACE(std::string(dtype_name(dtype)) + " rows " + std::to_string(rows) + " rep " + std::to_string(rep));
            const std::vector<uint8_t> tile = random_tile(dtype, rows, rng);
            worst = std::max(worst, check_tile(isa, kernels_for(isa).tile_matvec, table_quantizes_kquants(isa), dtype, tile,
                                               rows, random_x(rng), random_y(rows, rng)));
        }
    }
    std::printf("[ info ] %s %s: max |simd - scalar| / bound = %.3g\n", std::string(isa_name(isa)).c_str(),
                std::string(dtype_name(dtype)).c_str(), worst);
}

// The integer ranges at their limits: every quant, scale and min at its largest magnitude (Q6_K's
// scales at -128 too) against x at +-amax in every column, where vpmaddubsw's int16 pair sums and
// the int32 totals are largest; a saturating or overflowing step would leave the bound by far.
TEST_P(KQuantKernelsSimd, ExtremeQuantsStayWithinBound) {
    const auto [isa, dtype] = GetParam();
    if (!isa_supported(isa)) GTEST_SKIP() << "this CPU/OS does not support the " << isa_name(isa) << " path";
    const uint32_t rows = 4;
    const uint32_t blockBytes = kquant_block_bytes(dtype);
    std::vector<uint8_t> tile(size_t{rows} * blockBytes, 0xFF);  // all quant bits, scales and mins set
    for (uint32_t r = 0; r < rows; ++r) {
        uint8_t* block = tile.data() + size_t{r} * blockBytes;
        if (dtype == DType::Q6_K && r % 2 == 1) std::memset(block + 192, 0x80, 16);  // scales -128
        if (dtype == DType::Q6_K && r == 2) std::memset(block, 0x00, 192);           // q = 0 -> value -32
        set_block_scales(dtype, block, f32_to_f16(r < 2 ? 0.5f : -0.25f), f32_to_f16(0.125f));
    }
    for (float sign : {1.0f, -1.0f}) {
        std::vector<float> x(kCols);
        for (uint32_t c = 0; c < kCols; ++c) x[c] = (c % 3 == 0 ? -sign : sign) * 3.0f;  // every |x_c| = amax
        std::vector<float> y0(rows, 0.0f);
        double worst = check_tile(isa, kernels_for(isa).tile_matvec, table_quantizes_kquants(isa), dtype, tile, rows, x, y0);
        if (isa_quantizes_activations(isa))  // the int8 kernel itself, whatever the table routes to
            worst = std::max(worst, check_tile(isa, int8_kquant(isa).matvec, true, dtype, tile, rows, x, y0));
        std::printf("[ info ] %s %s extremes: max |simd - scalar| / bound = %.3g\n", std::string(isa_name(isa)).c_str(),
                    std::string(dtype_name(dtype)).c_str(), worst);
    }
}

INSTANTIATE_TEST_SUITE_P(Paths, KQuantKernelsSimd,
                         ::testing::Combine(::testing::ValuesIn(kSimdPaths), ::testing::ValuesIn(kKQuants)),
                         path_dtype_name);

class KQuantKernelsInt8 : public ::testing::TestWithParam<std::tuple<Isa, DType>> {};

// The int8 K-quant kernel itself (the tables may route K-quants to the f32 kernels instead).
TEST_P(KQuantKernelsInt8, KernelMatchesScalarWithinDerivedBound) {
    const auto [isa, dtype] = GetParam();
    if (!isa_supported(isa)) GTEST_SKIP() << "this CPU/OS does not support the " << isa_name(isa) << " path";
    std::mt19937 rng(4242u + 16u * static_cast<unsigned>(isa) + static_cast<unsigned>(dtype));
    double worst = 0.0;
    for (int rep = 0; rep < 4; ++rep) {
        for (uint32_t rows : kRowCounts) {
            SCOPED_TRACE(std::string(dtype_name(dtype)) + " rows " + std::to_string(rows) + " rep " + std::to_string(rep));
            const std::vector<uint8_t> tile = random_tile(dtype, rows, rng);
            worst = std::max(worst, check_tile(isa, int8_kquant(isa).matvec, true, dtype, tile, rows, random_x(rng),
                                               random_y(rows, rng)));
        }
    }
    std::printf("[ info ] %s int8 kernel %s: max |int8 - scalar| / bound = %.3g\n", std::string(isa_name(isa)).c_str(),
                std::string(dtype_name(dtype)).c_str(), worst);
}

// The tables serve K-quants from quantized slices exactly when kKQuantInt8Activations says so.
TEST_P(KQuantKernelsInt8, TableRoutingFollowsTheSwitch) {
    const auto [isa, dtype] = GetParam();
    if (!isa_supported(isa)) GTEST_SKIP() << "this CPU/OS does not support the " << isa_name(isa) << " path";
    EXPECT_EQ((kernels_for(isa).quantized_dtypes & dtype_bit(dtype)) != 0, kernels::kKQuantInt8Activations);
    EXPECT_EQ(slice_dtype(dtype), DType::Q4_K);
}

// The session's decode path: one quantize_slice(slice_dtype(dtype)) then tile_matvec_quantized per
// tile gives bit for bit what tile_matvec gives (the Kernels contract).
TEST_P(KQuantKernelsInt8, QuantizedSliceMatchesTileMatvecBitExact) {
    const auto [isa, dtype] = GetParam();
    if (!isa_supported(isa)) GTEST_SKIP() << "this CPU/OS does not support the " << isa_name(isa) << " path";
    const Int8KQuant kq = int8_kquant(isa);
    const Kernels& k = kernels_for(isa);
    const bool viaTable = (k.quantized_dtypes & dtype_bit(dtype)) != 0;  // the session's route when wired
    std::mt19937 rng(99u + static_cast<unsigned>(isa) * 16u + static_cast<unsigned>(dtype));
    for (uint32_t rows : kRowCounts) {
        const std::vector<uint8_t> tile = random_tile(dtype, rows, rng);
        const std::vector<float> x = random_x(rng);
        const std::vector<float> y0 = random_y(rows, rng);
        SliceBuffer slice;
        kq.quantize_slice(x.data(), kCols, slice.bytes);
        std::vector<float> viaSlice = y0, direct = y0;
        kq.matvec_quantized(dtype, tile.data(), rows, kCols, slice.bytes, viaSlice.data());
        kq.matvec(dtype, tile.data(), rows, kCols, x.data(), direct.data());
        ASSERT_EQ(std::memcmp(viaSlice.data(), direct.data(), rows * sizeof(float)), 0) << "rows " << rows;
        if (!viaTable) continue;
        SliceBuffer tableSlice;
        k.quantize_slice(slice_dtype(dtype), x.data(), kCols, tableSlice.bytes);
        std::vector<float> tableSliced = y0, tableDirect = y0;
        k.tile_matvec_quantized(dtype, tile.data(), rows, kCols, tableSlice.bytes, tableSliced.data());
        k.tile_matvec(dtype, tile.data(), rows, kCols, x.data(), tableDirect.data());
        ASSERT_EQ(std::memcmp(tableSliced.data(), direct.data(), rows * sizeof(float)), 0) << "rows " << rows;
        ASSERT_EQ(std::memcmp(tableDirect.data(), direct.data(), rows * sizeof(float)), 0) << "rows " << rows;
    }
}

// Batched prefill: tile_matmat_quantized gives, for every token, bit for bit what
// tile_matvec_quantized gives for that token alone (one shared per-row routine), and writes
// nothing outside its rows x tokens outputs.
TEST_P(KQuantKernelsInt8, MatmatMatchesMatvecPerTokenBitExact) {
    const auto [isa, dtype] = GetParam();
    if (!isa_supported(isa)) GTEST_SKIP() << "this CPU/OS does not support the " << isa_name(isa) << " path";
    const Int8KQuant kq = int8_kquant(isa);
    const Kernels& k = kernels_for(isa);
    const bool viaTable = (k.quantized_dtypes & dtype_bit(dtype)) != 0;
    std::mt19937 rng(555u + static_cast<unsigned>(isa) * 16u + static_cast<unsigned>(dtype));
    for (uint32_t tokens : {1u, 3u, 5u, kMatmatLaneTokens + 1u}) {
        for (uint32_t rows : kRowCounts) {
            SCOPED_TRACE("tokens " + std::to_string(tokens) + " rows " + std::to_string(rows));
            const std::vector<uint8_t> tile = random_tile(dtype, rows, rng);
            const size_t sliceStride = 2 * kQuantizedSliceBytes;  // bytes; a multiple of the alignment
            std::vector<SliceBuffer> slices(2 * size_t{tokens});   // [tokens] slices, every other buffer
            const size_t yStride = rows + 3;                       // floats; 3 guard values per token
            std::vector<float> batched(yStride * tokens);          // [tokens x yStride] f32
            std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
            for (float& v : batched) v = dist(rng);
            std::vector<float> single = batched;
            for (uint32_t t = 0; t < tokens; ++t) {
                const std::vector<float> x = random_x(rng);
                kq.quantize_slice(x.data(), kCols, slices[2 * t].bytes);
                kq.matvec_quantized(dtype, tile.data(), rows, kCols, slices[2 * t].bytes, single.data() + t * yStride);
            }
            std::vector<float> tableBatched = batched;
            kq.matmat_quantized(dtype, tile.data(), rows, kCols, slices[0].bytes, sliceStride, tokens, batched.data(), yStride);
            ASSERT_EQ(std::memcmp(batched.data(), single.data(), batched.size() * sizeof(float)), 0);
            if (!viaTable) continue;
            k.tile_matmat_quantized(dtype, tile.data(), rows, kCols, slices[0].bytes, sliceStride, tokens,
                                    tableBatched.data(), yStride);
            ASSERT_EQ(std::memcmp(tableBatched.data(), single.data(), tableBatched.size() * sizeof(float)), 0);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Paths, KQuantKernelsInt8,
                         ::testing::Combine(::testing::ValuesIn(kInt8Paths), ::testing::ValuesIn(kKQuants)),
                         path_dtype_name);

} // namespace
} // namespace kquant_test
} // namespace cflow
