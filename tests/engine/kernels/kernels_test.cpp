// Kernel tests: the scalar kernel against a double-precision reference built from the payload
// decode rules written out below (independent of formats/tile_codec), and every SIMD path
// against the scalar kernel with rigorously derived tolerances.
//
// Tolerance derivation (kReassocRelTol). Dequantized weights are exact in f32: an f16 scale
// has an 11-bit significand and q - 8 / q fit in 8 bits, so s * q needs at most 19 bits; f16
// values and F16C conversions are exact too. The paths therefore differ only in the order of
// the additions (and FMA vs separate multiply/add). By the standard inner-product error bound
// (Higham, Accuracy and Stability, 3.1), any evaluation order in which each term passes through
// at most k roundings gives |computed - exact| <= gamma_k * (sum_c |w_c x_c| + |y0|), with
// gamma_k = k u / (1 - k u), u = 2^-24. The scalar loop has k = cols + 1 (product, cols - 1
// additions, the add into y0); the SIMD paths have fewer sequential additions per lane but a
// few extra reduction / group-scale steps, at most cols + 8 in total. Two such errors bound
// their difference, so a row fails only if the paths compute different sums, e.g. a dropped or
// misplaced weight of size |w x| > 3e-5 * sum |w x| for cols = 256.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cflow/engine/kernels/kernels.h"
#include "cflow/formats/tile_plan.h"

#if defined(_WIN32)
#include <windows.h>
#else
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace cflow {
namespace {

constexpr double kUnitRoundoff = 0x1p-24;  // f32 round-to-nearest

double gamma_k(double k) { return k * kUnitRoundoff / (1.0 - k * kUnitRoundoff); }

// Relative (to sum |w x| + |y0|) bound on |simd - scalar| for a row of n terms; see the header comment.
double kReassocRelTol(uint32_t n) { return gamma_k(n + 1.0) + gamma_k(n + 8.0); }

// VNNI path: x is quantized per 32-block to q = round(x / d), d = amax / 127, so each activation
// is off by at most half a step, d / 2. The f32 rounding of d, 1/d and x * (1/d) moves x / d by
// under 127 * 3u = 2.3e-5 steps, covered by the 0.5001 (instead of 0.5). Bound on the extra
// error: kVnniActQuantTol * sum_blocks amax_b * sum_{c in b} |w_c|.
constexpr double kVnniActQuantTol = 0.5001 / 127.0;
// Every path, and the ones that quantize activations to int8. Paths this CPU lacks skip with
// the reason printed (no emulator is available here).
constexpr Isa kAllPaths[] = {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Avx512Vnni, Isa::Avx2Int8, Isa::AvxVnni};
constexpr Isa kInt8Paths[] = {Isa::Avx2Int8, Isa::AvxVnni, Isa::Avx512Vnni};
// detect_best_isa()'s order: lower is preferred.
int preference_rank(Isa isa) {
    constexpr Isa kOrder[] = {Isa::Avx512Vnni, Isa::AvxVnni, Isa::Avx2Int8, Isa::Avx512, Isa::Avx2, Isa::Scalar};
    for (int i = 0; i < 6; ++i)
        if (kOrder[i] == isa) return i;
    return 6;
}

// ---- payload decode rules (cflow_layout.h), written independently of formats/tile_codec ----

double f16_value(uint16_t h) {
    const int sign = (h & 0x8000) ? -1 : 1;
    const int exponent = (h >> 10) & 0x1F;
    const int mantissa = h & 0x3FF;
    if (exponent == 0) return sign * std::ldexp(static_cast<double>(mantissa), -24);  // subnormal
    return sign * std::ldexp(static_cast<double>(1024 + mantissa), exponent - 25);
}

uint16_t read_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

double weight_at(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, uint32_t r, uint32_t c) {
    const uint32_t groups = (cols + 31) / 32;
    const size_t block = static_cast<size_t>(r) * groups + c / 32;
    const uint8_t* data = payload + static_cast<size_t>(rows) * groups * 2;
    switch (dtype) {
    case DType::F32: {
        float v;
        std::memcpy(&v, payload + (static_cast<size_t>(r) * cols + c) * 4, 4);
        return v;
    }
    case DType::F16: return f16_value(read_u16(payload + (static_cast<size_t>(r) * cols + c) * 2));
    case DType::Q8_0:
        return f16_value(read_u16(payload + block * 2)) * static_cast<int8_t>(data[block * 32 + c % 32]);
    case DType::Q4_0: {
        const uint8_t byte = data[block * 16 + (c % 32) % 16];
        const int q = (c % 32) < 16 ? (byte & 0x0F) : (byte >> 4);
        return f16_value(read_u16(payload + block * 2)) * (q - 8);
    }
    default: ADD_FAILURE() << "not a tile dtype"; return 0.0;
    }
}

size_t payload_bytes(DType dtype, uint32_t rows, uint32_t cols) {
    const size_t groups = (cols + 31) / 32;
    switch (dtype) {
    case DType::F32: return size_t{rows} * cols * 4;
    case DType::F16: return size_t{rows} * cols * 2;
    case DType::Q8_0: return size_t{rows} * groups * (2 + 32);
    case DType::Q4_0: return size_t{rows} * groups * (2 + 16);
    default: return 0;
    }
}

// ---- random payloads, generated byte by byte (no encoder involved) ----

// A finite f16 with a biased exponent in [minExp, maxExp] (0 = subnormal) and random sign/mantissa.
uint16_t random_f16(std::mt19937& rng, int minExp, int maxExp) {
    const auto sign = static_cast<uint16_t>(rng() & 1u);
    const auto exponent = static_cast<uint16_t>(std::uniform_int_distribution<int>(minExp, maxExp)(rng));
    const auto mantissa = static_cast<uint16_t>(rng() & 0x3FFu);
    return static_cast<uint16_t>((sign << 15) | (exponent << 10) | mantissa);
}

void put_u16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v & 0xFF);
    p[1] = static_cast<uint8_t>(v >> 8);
}

// Fills a payload of payload_bytes(dtype, rows, cols). Quantized padding weights past cols get
// random (non-zero) values so that pairing them with anything shows up.
void fill_payload(DType dtype, uint8_t* payload, uint32_t rows, uint32_t cols, std::mt19937& rng) {
    const size_t bytes = payload_bytes(dtype, rows, cols);
    switch (dtype) {
    case DType::F32: {
        std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
        for (size_t i = 0; i < bytes / 4; ++i) {
            const float v = dist(rng);
            std::memcpy(payload + i * 4, &v, 4);
        }
        break;
    }
    case DType::F16:  // exponents 0..20: subnormals up to magnitudes ~64
        for (size_t i = 0; i < bytes / 2; ++i) put_u16(payload + i * 2, random_f16(rng, 0, 20));
        break;
    case DType::Q8_0:
    case DType::Q4_0: {
        const size_t scaleCount = size_t{rows} * ((cols + 31) / 32);
        for (size_t i = 0; i < scaleCount; ++i) put_u16(payload + i * 2, random_f16(rng, 5, 16));
        for (size_t i = scaleCount * 2; i < bytes; ++i) payload[i] = static_cast<uint8_t>(rng());
        break;
    }
    default: break;
    }
}

// ---- buffers whose last byte sits right before an inaccessible page (or a plain heap block) ----

// Places `bytes` bytes so that either the byte after the last one is an inaccessible page (guard
// mode: any read past the end faults) or, in heap mode, at a random misaligned offset followed by
// slack. Either way the data pointer is usually not 16/32/64-byte aligned.
class TestBuffer {
public:
    TestBuffer(size_t bytes, bool guard, size_t misalign) : bytes_(bytes) {
        if (guard && allocate_guarded()) return;
        heap_.assign(bytes + misalign + 256, 0);
        data_ = heap_.data() + misalign;
    }
    ~TestBuffer() { release_guarded(); }
    TestBuffer(const TestBuffer&) = delete;
    TestBuffer& operator=(const TestBuffer&) = delete;

    uint8_t* data() { return data_; }
    bool guarded() const { return mapping_ != nullptr; }

private:
#if defined(_WIN32)
    static size_t page_size() {
        SYSTEM_INFO info;
        GetSystemInfo(&info);
        return info.dwPageSize;
    }
    bool allocate_guarded() {
        page_ = page_size();
        mappedBytes_ = (bytes_ + page_ - 1) / page_ * page_ + page_;
        void* p = VirtualAlloc(nullptr, mappedBytes_, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
        if (p == nullptr) return false;
        DWORD old = 0;
        mapping_ = static_cast<uint8_t*>(p);
        if (!VirtualProtect(mapping_ + mappedBytes_ - page_, page_, PAGE_NOACCESS, &old)) return false;
        data_ = mapping_ + mappedBytes_ - page_ - bytes_;
        return true;
    }
    void release_guarded() {
        if (mapping_ != nullptr) VirtualFree(mapping_, 0, MEM_RELEASE);
    }
#else
    bool allocate_guarded() {
        page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        mappedBytes_ = (bytes_ + page_ - 1) / page_ * page_ + page_;
        void* p = mmap(nullptr, mappedBytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return false;
        mapping_ = static_cast<uint8_t*>(p);
        if (mprotect(mapping_ + mappedBytes_ - page_, page_, PROT_NONE) != 0) return false;
        data_ = mapping_ + mappedBytes_ - page_ - bytes_;
        return true;
    }
    void release_guarded() {
        if (mapping_ != nullptr) munmap(mapping_, mappedBytes_);
    }
#endif

    size_t bytes_;
    std::vector<uint8_t> heap_;
    uint8_t* mapping_ = nullptr;
    size_t mappedBytes_ = 0;
    size_t page_ = 0;
    uint8_t* data_ = nullptr;
};

struct TileShape {
    uint32_t rows, cols;
};
constexpr TileShape kShapes[] = {{128, 256}, {1, 1}, {3, 5}, {17, 33}, {128, 37}, {64, 256}, {100, 250}, {7, 31}, {128, 172}};

constexpr DType kTileTypes[] = {DType::F32, DType::F16, DType::Q8_0, DType::Q4_0};

// One random test case: payload, x (NaN beyond cols in heap mode) and y with sentinels around it.
struct MatvecCase {
    DType dtype;
    uint32_t rows, cols;
    TestBuffer payload;
    TestBuffer xBytes;
    std::vector<float> y0;  // [rows] f32 initial y (non-zero: y += W x must keep it)

    MatvecCase(DType t, TileShape s, bool guard, std::mt19937& rng)
        : dtype(t), rows(s.rows), cols(s.cols),
          payload(payload_bytes(t, s.rows, s.cols), guard, 1 + rng() % 63),
          xBytes(s.cols * sizeof(float), guard, sizeof(float) * (1 + rng() % 15)) {
        fill_payload(dtype, payload.data(), rows, cols, rng);
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        for (uint32_t c = 0; c < cols; ++c) x()[c] = dist(rng);
        if (!xBytes.guarded())  // any use of x past cols turns the row into NaN
            for (uint32_t c = cols; c < cols + 16; ++c) x()[c] = std::numeric_limits<float>::quiet_NaN();
        y0.resize(rows);
        for (float& v : y0) v = dist(rng) * 4.0f;
    }
    float* x() { return reinterpret_cast<float*>(xBytes.data()); }

    // Runs a kernel on y0; checks the sentinels around y and returns y.
    std::vector<float> run(const Kernels& k) {
        constexpr float kSentinel = -12345.0f;
        std::vector<float> buffer(rows + 2, kSentinel);  // [1 + rows + 1] f32
        std::copy(y0.begin(), y0.end(), buffer.begin() + 1);
        k.tile_matvec(dtype, payload.data(), rows, cols, x(), buffer.data() + 1);
        EXPECT_EQ(buffer.front(), kSentinel) << "wrote before y[0]";
        EXPECT_EQ(buffer.back(), kSentinel) << "wrote past y[rows-1]";
        return {buffer.begin() + 1, buffer.end() - 1};
    }

    double w(uint32_t r, uint32_t c) { return weight_at(dtype, payload.data(), rows, cols, r, c); }

    // sum_c |w x| + |y0| for row r: the scale of the rounding error bounds.
    double magnitude(uint32_t r) {
        double m = std::fabs(static_cast<double>(y0[r]));
        for (uint32_t c = 0; c < cols; ++c) m += std::fabs(w(r, c) * x()[c]);
        return m;
    }
};

std::string shape_label(DType t, uint32_t rows, uint32_t cols, bool guard) {
    return std::string(dtype_name(t)) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
           (guard ? " (guard pages)" : " (heap, misaligned)");
}

// ---- the scalar kernel is the specification: check it against double precision ----

TEST(KernelsScalar, MatchesDoublePrecisionDequantizeThenDot) {
    std::mt19937 rng(20240601);
    const Kernels& scalar = kernels_for(Isa::Scalar);
    ASSERT_EQ(scalar.isa, Isa::Scalar);
    for (DType t : kTileTypes) {
        EXPECT_EQ(payload_bytes(t, 17, 33), tile_payload_bytes(t, 17, 33)) << dtype_name(t);
        for (const TileShape& s : kShapes) {
            for (bool guard : {false, true}) {
                SCOPED_TRACE(shape_label(t, s.rows, s.cols, guard));
                MatvecCase tc(t, s, guard, rng);
                const std::vector<float> y = tc.run(scalar);
                for (uint32_t r = 0; r < tc.rows; ++r) {
                    double exact = tc.y0[r];
                    for (uint32_t c = 0; c < tc.cols; ++c) exact += tc.w(r, c) * tc.x()[c];
                    const double bound = gamma_k(tc.cols + 1.0) * tc.magnitude(r);
                    ASSERT_LE(std::fabs(y[r] - exact), bound) << "row " << r << ": " << y[r] << " vs " << exact;
                }
            }
        }
    }
}

// ggml's Q4_0 convention on a hand-made block: low nibbles are weights 0..15, high nibbles
// weights 16..31, value s * (q - 8). One-hot x reads out each weight exactly.
TEST(KernelsQ4Convention, LowNibblesFirstThenHighNibblesOffsetEight) {
    uint8_t payload[2 + 16];
    put_u16(payload, 0x3800);  // f16 0.5
    for (int j = 0; j < 16; ++j) payload[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
        if (!isa_supported(isa)) continue;
        SCOPED_TRACE(std::string(isa_name(isa)));
        for (int k = 0; k < 32; ++k) {
            float x[32] = {};
            x[k] = 1.0f;
            float y = 0.0f;
            kernels_for(isa).tile_matvec(DType::Q4_0, payload, 1, 32, x, &y);
            const float expected = k < 16 ? 0.5f * static_cast<float>(k - 8) : 0.5f * static_cast<float>(7 - (k - 16));
            EXPECT_EQ(y, expected) << "weight " << k;
        }
    }
    for (Isa isa : kInt8Paths) {  // int8 activations: one-hot x (amax 1) quantizes to 127 * (1/127)
        if (!isa_supported(isa)) continue;
        for (int k = 0; k < 32; ++k) {
            float x[32] = {};
            x[k] = 1.0f;
            float y = 0.0f;
            kernels_for(isa).tile_matvec(DType::Q4_0, payload, 1, 32, x, &y);
            const double expected = k < 16 ? 0.5 * (k - 8) : 0.5 * (7 - (k - 16));
            EXPECT_NEAR(y, expected, (kVnniActQuantTol + 2 * kReassocRelTol(32)) * std::fabs(expected))
                << isa_name(isa) << " weight " << k;
        }
    }
}

TEST(KernelsQ8Convention, SignedBytesTimesScaleIncludingMinus128) {
    uint8_t payload[2 + 32];
    put_u16(payload, 0xB400);  // f16 -0.25
    for (int j = 0; j < 32; ++j) payload[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j * 8 - 128));
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
        if (!isa_supported(isa)) continue;
        SCOPED_TRACE(std::string(isa_name(isa)));
        for (int k = 0; k < 32; ++k) {
            float x[32] = {};
            x[k] = 1.0f;
            float y = 0.0f;
            kernels_for(isa).tile_matvec(DType::Q8_0, payload, 1, 32, x, &y);
            EXPECT_EQ(y, -0.25f * static_cast<float>(k * 8 - 128)) << "weight " << k;
        }
    }
}

// ---- every SIMD path against the scalar kernel ----

class KernelsSimdMatvec : public ::testing::TestWithParam<std::tuple<Isa, DType>> {};

TEST_P(KernelsSimdMatvec, MatchesScalarWithinNamedTolerance) {
    const auto [isa, dtype] = GetParam();
    if (!isa_supported(isa)) GTEST_SKIP() << "this CPU/OS does not support the " << isa_name(isa) << " path";
    const Kernels& simd = kernels_for(isa);
    ASSERT_EQ(simd.isa, isa);
    const bool actQuantized = isa_quantizes_activations(isa) && is_block_quant(dtype);
    std::mt19937 rng(1234u + static_cast<unsigned>(isa) * 16u + static_cast<unsigned>(dtype));
    double worstRatio = 0.0;  // max |simd - scalar| / bound, reported for information
    for (int rep = 0; rep < 3; ++rep) {
        for (const TileShape& s : kShapes) {
            for (bool guard : {false, true}) {
                SCOPED_TRACE(shape_label(dtype, s.rows, s.cols, guard) + " rep " + std::to_string(rep));
                MatvecCase tc(dtype, s, guard, rng);
                const std::vector<float> expected = tc.run(kernels_for(Isa::Scalar));
                const std::vector<float> got = tc.run(simd);
                for (uint32_t r = 0; r < tc.rows; ++r) {
                    double bound = kReassocRelTol(tc.cols) * tc.magnitude(r);
                    if (actQuantized) {
                        // Activation quantization error plus rounding of the (slightly different) quantized sum.
                        double quantErr = 0.0, quantMagnitude = 0.0;
                        for (uint32_t b = 0; b * 32 < tc.cols; ++b) {
                            const uint32_t end = std::min(tc.cols, b * 32 + 32);
                            double amax = 0.0, wAbs = 0.0, wxAbs = 0.0;
                            for (uint32_t c = b * 32; c < end; ++c) {
                                amax = std::max(amax, std::fabs(static_cast<double>(tc.x()[c])));
                                wAbs += std::fabs(tc.w(r, c));
                                wxAbs += std::fabs(tc.w(r, c) * tc.x()[c]);
                            }
                            quantErr += kVnniActQuantTol * amax * wAbs;
                            quantMagnitude += wxAbs + amax / 127.0 * wAbs;
                        }
                        bound = quantErr + kReassocRelTol(tc.cols) * (tc.magnitude(r) + quantMagnitude);
                    }
                    const double err = std::fabs(static_cast<double>(got[r]) - expected[r]);
                    ASSERT_LE(err, bound) << "row " << r << ": " << isa_name(isa) << " " << got[r] << " vs scalar "
                                          << expected[r];
                    worstRatio = std::max(worstRatio, err / bound);
                }
            }
        }
    }
    std::printf("[ info ] %s %s: max |simd - scalar| / bound = %.3g\n", std::string(isa_name(isa)).c_str(),
                std::string(dtype_name(dtype)).c_str(), worstRatio);
}

std::string simd_case_name(const ::testing::TestParamInfo<std::tuple<Isa, DType>>& info) {
    return std::string(isa_name(std::get<0>(info.param))) + "_" + std::string(dtype_name(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(AllPaths, KernelsSimdMatvec,
                         ::testing::Combine(::testing::Values(Isa::Avx2, Isa::Avx512, Isa::Avx512Vnni, Isa::Avx2Int8, Isa::AvxVnni),
                                            ::testing::ValuesIn(kTileTypes)),
                         simd_case_name);

// ---- dot / axpy ----

class KernelsVector : public ::testing::TestWithParam<Isa> {};

TEST_P(KernelsVector, DotAndAxpyMatchScalar) {
    const Isa isa = GetParam();
    if (!isa_supported(isa)) GTEST_SKIP() << "this CPU/OS does not support the " << isa_name(isa) << " path";
    const Kernels& simd = kernels_for(isa);
    const Kernels& scalar = kernels_for(Isa::Scalar);
    std::mt19937 rng(99u + static_cast<unsigned>(isa));
    std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
    for (size_t n : {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 100, 257, 1000, 4099}) {
        SCOPED_TRACE("n = " + std::to_string(n));
        const size_t offset = 1 + rng() % 15;  // floats: misaligns the vectors
        std::vector<float> a(n + 32), b(n + 32), y(n + 32);
        for (size_t i = 0; i < a.size(); ++i) {
            a[i] = dist(rng);
            b[i] = dist(rng);
            y[i] = dist(rng);
        }
        const float* pa = a.data() + offset;
        const float* pb = b.data() + offset;
        double magnitude = 0.0;
        for (size_t i = 0; i < n; ++i) magnitude += std::fabs(static_cast<double>(pa[i]) * pb[i]);
        const double dotBound = (gamma_k(static_cast<double>(n)) + gamma_k(n + 8.0)) * magnitude;
        EXPECT_LE(std::fabs(static_cast<double>(simd.dot(pa, pb, n)) - scalar.dot(pa, pb, n)), dotBound);

        const float alpha = dist(rng);
        std::vector<float> ySimd = y, yScalar = y;
        simd.axpy(alpha, pa, ySimd.data() + offset, n);
        scalar.axpy(alpha, pa, yScalar.data() + offset, n);
        for (size_t i = 0; i < y.size(); ++i) {
            if (i < offset || i >= offset + n) {
                ASSERT_EQ(ySimd[i], y[i]) << "axpy wrote outside y[0..n) at " << i;
                continue;
            }
            // scalar: two roundings (multiply, add); FMA: one.
            const double bound = 2.0 * gamma_k(2.0) * (std::fabs(y[i]) + std::fabs(static_cast<double>(alpha) * pa[i - offset]));
            ASSERT_LE(std::fabs(static_cast<double>(ySimd[i]) - yScalar[i]), bound) << "element " << i - offset;
        }
    }
}

// The F16 KV cache's dot / axpy: the scalar versions are the f32 ones on the exactly converted
// halves (bit for bit), and every SIMD path stays within the f32 kernels' bounds of them.
TEST_P(KernelsVector, HalfPrecisionDotAndAxpyMatchScalar) {
    const Isa isa = GetParam();
    if (!isa_supported(isa)) GTEST_SKIP() << "this CPU/OS does not support the " << isa_name(isa) << " path";
    const Kernels& simd = kernels_for(isa);
    const Kernels& scalar = kernels_for(Isa::Scalar);
    ASSERT_NE(simd.dot_f16, nullptr);
    ASSERT_NE(simd.axpy_f16, nullptr);
    std::mt19937 rng(199u + static_cast<unsigned>(isa));
    std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
    for (size_t n : {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 100, 128, 257, 1000}) {
        SCOPED_TRACE("n = " + std::to_string(n));
        const size_t offset = 1 + rng() % 15;  // elements: misaligns the vectors
        std::vector<float> a(n + 32), widened(n + 32), y(n + 32);
        std::vector<uint16_t> h(n + 32);  // [n] halves, plus guard elements
        for (size_t i = 0; i < a.size(); ++i) {
            a[i] = dist(rng);
            h[i] = random_f16(rng, 0, 17);  // subnormals up to magnitude 8: each half converts exactly
            widened[i] = static_cast<float>(f16_value(h[i]));  // exact: every half is an f32
            y[i] = dist(rng);
        }
        const float* pa = a.data() + offset;
        const uint16_t* ph = h.data() + offset;
        const float* pw = widened.data() + offset;
        const float exact = scalar.dot(pa, pw, n);
        ASSERT_EQ(scalar.dot_f16(pa, ph, n), exact) << "scalar dot_f16 must be dot on the converted halves";
        double magnitude = 0.0;
        for (size_t i = 0; i < n; ++i) magnitude += std::fabs(static_cast<double>(pa[i]) * pw[i]);
        const double dotBound = (gamma_k(static_cast<double>(n)) + gamma_k(n + 8.0)) * magnitude;
        EXPECT_LE(std::fabs(static_cast<double>(simd.dot_f16(pa, ph, n)) - exact), dotBound);

        const float alpha = dist(rng);
        std::vector<float> ySimd = y, yScalar = y, yReference = y;
        simd.axpy_f16(alpha, ph, ySimd.data() + offset, n);
        scalar.axpy_f16(alpha, ph, yScalar.data() + offset, n);
        scalar.axpy(alpha, pw, yReference.data() + offset, n);
        ASSERT_EQ(yScalar, yReference) << "scalar axpy_f16 must be axpy on the converted halves";
        for (size_t i = 0; i < y.size(); ++i) {
            if (i < offset || i >= offset + n) {
                ASSERT_EQ(ySimd[i], y[i]) << "axpy_f16 wrote outside y[0..n) at " << i;
                continue;
            }
            const double bound = 2.0 * gamma_k(2.0) * (std::fabs(y[i]) + std::fabs(static_cast<double>(alpha) * pw[i - offset]));
            ASSERT_LE(std::fabs(static_cast<double>(ySimd[i]) - yScalar[i]), bound) << "element " << i - offset;
        }
    }
}

// weighted_row_sum (attention's values, one call per head) is axpy / axpy_f16 of the same path
// called row after row: bit-identical, for F32 and F16 rows, column counts around the vector
// widths, and it writes nothing past y[cols).
void expect_weighted_row_sum_is_axpy_per_row(Isa isa) {
    const Kernels& k = kernels_for(isa);
    ASSERT_NE(k.weighted_row_sum, nullptr) << isa_name(isa);
    std::mt19937 rng(301u + static_cast<unsigned>(isa));
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    for (DType dtype : {DType::F32, DType::F16}) {
        for (uint32_t rows : {0u, 1u, 5u, 40u}) {
            for (uint32_t cols : {1u, 7u, 16u, 17u, 40u, 64u, 100u, 128u, 256u}) {
                std::vector<float> w(rows), m32(size_t(rows) * cols), y(cols + 8);
                std::vector<uint16_t> m16(size_t(rows) * cols);
                for (float& v : w) v = dist(rng);
                for (size_t i = 0; i < m32.size(); ++i) {
                    m32[i] = dist(rng);
                    m16[i] = random_f16(rng, 0, 16);
                }
                for (float& v : y) v = dist(rng);
                std::vector<float> expected = y, got = y;
                for (uint32_t r = 0; r < rows; ++r) {
                    if (dtype == DType::F16) k.axpy_f16(w[r], m16.data() + size_t(r) * cols, expected.data(), cols);
                    else k.axpy(w[r], m32.data() + size_t(r) * cols, expected.data(), cols);
                }
                const auto* bytes = dtype == DType::F16 ? reinterpret_cast<const uint8_t*>(m16.data())
                                                        : reinterpret_cast<const uint8_t*>(m32.data());
                k.weighted_row_sum(dtype, bytes, rows, cols, w.data(), got.data());
                ASSERT_EQ(got, expected) << isa_name(isa) << " " << dtype_name(dtype) << " " << rows << "x" << cols;
            }
        }
    }
}

TEST(KernelsWeightedRowSum, ScalarIsAxpyPerRow) { expect_weighted_row_sum_is_axpy_per_row(Isa::Scalar); }

TEST_P(KernelsVector, WeightedRowSumIsAxpyPerRow) {
    if (!isa_supported(GetParam())) GTEST_SKIP() << "this CPU/OS does not support the " << isa_name(GetParam()) << " path";
    expect_weighted_row_sum_is_axpy_per_row(GetParam());
}

std::string vector_case_name(const ::testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); }

INSTANTIATE_TEST_SUITE_P(AllPaths, KernelsVector, ::testing::Values(Isa::Avx2, Isa::Avx512, Isa::Avx512Vnni, Isa::Avx2Int8, Isa::AvxVnni),
                         vector_case_name);

// ---- dispatch ----

TEST(KernelsDispatch, IsaNamesRoundTrip) {
    for (Isa isa : kAllPaths) {
        const std::optional<Isa> parsed = parse_isa(isa_name(isa));
        ASSERT_TRUE(parsed.has_value()) << isa_name(isa);
        EXPECT_EQ(*parsed, isa);
    }
    EXPECT_EQ(isa_name(Isa::Avx512Vnni), "avx512vnni");
    EXPECT_EQ(parse_isa("AVX2"), Isa::Avx2);
    EXPECT_FALSE(parse_isa("sse4").has_value());
    EXPECT_FALSE(parse_isa("").has_value());
    EXPECT_FALSE(parse_isa("avx512 ").has_value());
}

TEST(KernelsDispatch, SupportedPathsAreNestedAndTablesMatch) {
    EXPECT_TRUE(isa_supported(Isa::Scalar));
    EXPECT_TRUE(isa_supported(detect_best_isa()));
    EXPECT_TRUE(isa_supported(selected_isa()));
    // Each path's requirements include those of the one below it.
    if (isa_supported(Isa::Avx512Vnni)) {
        EXPECT_TRUE(isa_supported(Isa::Avx512));
    }
    if (isa_supported(Isa::Avx512)) {
        EXPECT_TRUE(isa_supported(Isa::Avx2));
    }
    if (isa_supported(Isa::AvxVnni)) {
        EXPECT_TRUE(isa_supported(Isa::Avx2Int8));
    }
    EXPECT_EQ(isa_supported(Isa::Avx2Int8), isa_supported(Isa::Avx2));
    for (Isa isa : kAllPaths) {
        if (!isa_supported(isa)) continue;
        const Kernels& k = kernels_for(isa);
        EXPECT_EQ(k.isa, isa);
        EXPECT_NE(k.tile_matvec, nullptr);
        EXPECT_NE(k.dot, nullptr);
        EXPECT_NE(k.axpy, nullptr);
        if (preference_rank(isa) < preference_rank(detect_best_isa())) ADD_FAILURE() << "best is not best";
    }
    EXPECT_EQ(active_kernels().isa, selected_isa());
    std::printf("[ info ] best ISA on this machine: %s; selected: %s\n", std::string(isa_name(detect_best_isa())).c_str(),
                std::string(isa_name(selected_isa())).c_str());
}

#if GTEST_HAS_DEATH_TEST
void set_env(const char* name, const char* value) {
#if defined(_WIN32)
    _putenv_s(name, value);
#else
    setenv(name, value, 1);
#endif
}

// selected_isa() is decided once per process, so each override runs in a fresh child (the
// "threadsafe" death-test style re-executes this binary for the one test). The child's exit
// code is the Isa it selected.
[[noreturn]] void exit_with_selected_isa(const char* requested) {
    set_env("CFLOW_ISA", requested);
    std::exit(static_cast<int>(selected_isa()));
}

TEST(KernelsDispatch, EnvironmentOverrideSelectsPath) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    const std::string best(isa_name(detect_best_isa()));
    for (Isa isa : kAllPaths) {
        const std::string name(isa_name(isa));
        SCOPED_TRACE("CFLOW_ISA=" + name);
        if (isa_supported(isa)) {
            EXPECT_EXIT(exit_with_selected_isa(name.c_str()), ::testing::ExitedWithCode(static_cast<int>(isa)), "");
        } else {  // falls back to the best path with one warning line
            EXPECT_EXIT(exit_with_selected_isa(name.c_str()),
                        ::testing::ExitedWithCode(static_cast<int>(detect_best_isa())),
                        "CFLOW_ISA=" + name + " is not supported.*using " + best);
        }
    }
    EXPECT_EXIT(exit_with_selected_isa("bogus"), ::testing::ExitedWithCode(static_cast<int>(detect_best_isa())),
                "CFLOW_ISA='bogus' is not one of scalar.avx2.avx512.avx512vnni.avx2int8.avxvnni; using " + best);
}
#endif


// ---- activations quantized once per matvec ----

// quantize_slice + tile_matvec_quantized is the int8 paths' split of tile_matvec (the engine
// quantizes each input slice once for every tile of a matrix): bit-identical results, for
// full and partial tiles, odd group counts and row counts off the 4-row blocks.
TEST(KernelsQuantizedSlices, SplitEqualsTileMatvecExactly) {
    for (Isa isa : kInt8Paths) {
        if (!isa_supported(isa)) {
            std::printf("[ skip ] %s: this CPU/OS lacks the path\n", std::string(isa_name(isa)).c_str());
            continue;
        }
        const Kernels& k = kernels_for(isa);
        ASSERT_NE(k.quantize_slice, nullptr) << isa_name(isa);
        ASSERT_NE(k.tile_matvec_quantized, nullptr) << isa_name(isa);
        std::mt19937 rng(77u + static_cast<unsigned>(isa));
        for (DType dtype : {DType::Q4_0, DType::Q8_0}) {
            for (const auto& [rows, cols] : {std::pair<uint32_t, uint32_t>{128, 256}, {7, 256}, {5, 96}, {130, 224}, {3, 1}}) {
                std::vector<uint8_t> payload(payload_bytes(dtype, rows, cols));
                fill_payload(dtype, payload.data(), rows, cols, rng);
                std::vector<float> x(cols);
                std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
                for (float& v : x) v = dist(rng);
                std::vector<float> direct(rows, 0.5f), split(rows, 0.5f);
                k.tile_matvec(dtype, payload.data(), rows, cols, x.data(), direct.data());
                alignas(kQuantizedSliceAlign) uint8_t slice[kQuantizedSliceBytes];
                k.quantize_slice(dtype, x.data(), cols, slice);
                k.tile_matvec_quantized(dtype, payload.data(), rows, cols, slice, split.data());
                for (uint32_t r = 0; r < rows; ++r)
                    ASSERT_EQ(split[r], direct[r]) << isa_name(isa) << " " << dtype_name(dtype) << " " << rows << "x" << cols
                                                   << " row " << r;
            }
        }
    }
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
        if (!isa_supported(isa)) continue;
        EXPECT_EQ(kernels_for(isa).quantize_slice, nullptr) << "f32-activation paths have no quantized slices";
    }
}

// tile_matmat_quantized (batched prefill) multiplies one tile with several tokens' slices:
// below kMatmatLaneTokens every output is bit-identical to tile_matvec_quantized on that token
// alone; from there the AVX-512 VNNI path (and the AVX2 paths for Q4_0) sum each block in int32
// per (row, token) lane (the
// same exact integer dots) and adds the scaled blocks in another order, so it must stay within
// the reassociation bound of the row: kReassocRelTol(cols) * (sum |w x| + |y0|), with the
// activations' int8 rounding (at most kVnniActQuantTol of each block's amax) added to |x|.
// Token counts around the 4-token blocks and the threshold, partial tiles, odd group counts,
// rows off the row blocks and off the 16-row lanes, and output rows strided as the engine lays
// them out.
TEST(KernelsQuantizedSlices, MatmatMatchesPerTokenMatvec) {
    for (Isa isa : kInt8Paths) {
        if (!isa_supported(isa)) {
            std::printf("[ skip ] %s: this CPU/OS lacks the path\n", std::string(isa_name(isa)).c_str());
            continue;
        }
        const Kernels& k = kernels_for(isa);
        ASSERT_NE(k.tile_matmat_quantized, nullptr) << isa_name(isa);
        std::mt19937 rng(91u + static_cast<unsigned>(isa));
        for (DType dtype : {DType::Q4_0, DType::Q8_0}) {
            for (const auto& [rows, cols] : {std::pair<uint32_t, uint32_t>{128, 256}, {7, 256}, {5, 96}, {130, 224}, {3, 1}, {1, 160}}) {
                std::vector<uint8_t> payload(payload_bytes(dtype, rows, cols));
                fill_payload(dtype, payload.data(), rows, cols, rng);
                for (uint32_t tokens : {1u, 2u, 3u, 4u, 5u, 8u, 11u, 12u, 13u, 19u, 64u}) {
                    const size_t yStride = rows + 3;  // rows of a wider matrix
                    std::vector<float> x(size_t(tokens) * cols);  // [tokens x cols]
                    std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
                    for (float& v : x) v = dist(rng);
                    std::vector<uint8_t> slices(size_t(tokens) * kQuantizedSliceBytes + kQuantizedSliceAlign);
                    uint8_t* aligned = slices.data() + (kQuantizedSliceAlign - reinterpret_cast<uintptr_t>(slices.data()) % kQuantizedSliceAlign) % kQuantizedSliceAlign;
                    std::vector<float> expected(tokens * yStride, 0.25f), batched(tokens * yStride, 0.25f);
                    for (uint32_t t = 0; t < tokens; ++t) {
                        k.quantize_slice(dtype, x.data() + size_t(t) * cols, cols, aligned + t * kQuantizedSliceBytes);
                        k.tile_matvec_quantized(dtype, payload.data(), rows, cols, aligned + t * kQuantizedSliceBytes,
                                                expected.data() + t * yStride);
                    }
                    k.tile_matmat_quantized(dtype, payload.data(), rows, cols, aligned, kQuantizedSliceBytes, tokens,
                                            batched.data(), yStride);
                    const bool lanes = isa == Isa::Avx512Vnni || dtype == DType::Q4_0;  // rows-in-lanes kernels
                    const bool exact = tokens < kMatmatLaneTokens || !lanes;
                    for (size_t i = 0; i < expected.size(); ++i) {
                        const uint32_t t = uint32_t(i / yStride), r = uint32_t(i % yStride);
                        const std::string where = std::string(isa_name(isa)) + " " + std::string(dtype_name(dtype)) + " " +
                                                  std::to_string(rows) + "x" + std::to_string(cols) + " tokens " +
                                                  std::to_string(tokens) + " token " + std::to_string(t) + " row " +
                                                  std::to_string(r);
                        if (exact || r >= rows) {
                            ASSERT_EQ(batched[i], expected[i]) << where;
                            continue;
                        }
                        double magnitude = 0.25;  // |y0|
                        for (uint32_t c = 0; c < cols; ++c)
                            magnitude += std::fabs(weight_at(dtype, payload.data(), rows, cols, r, c)) *
                                         (std::fabs(x[size_t(t) * cols + c]) * (1.0 + kVnniActQuantTol) + 3.0 * kVnniActQuantTol);
                        ASSERT_LE(std::fabs(double(batched[i]) - expected[i]), kReassocRelTol(cols) * 2.0 * magnitude) << where;
                    }
                }
            }
        }
    }
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
        if (!isa_supported(isa)) continue;
        EXPECT_EQ(kernels_for(isa).tile_matmat_quantized, nullptr) << "f32-activation paths multiply token by token";
    }
}

} // namespace
} // namespace cflow
