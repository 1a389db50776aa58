// cflow_bench_kernels: single-thread throughput of a full tiled matvec per ISA path, against a
// plain SIMD stream read of the same bytes. The weight matrices are laid out as the .cflow file
// lays out a segment (16-byte TileHeader + payload, 128x256 tiles in stripe order, from
// plan_tiles) and are sized past the last-level cache, so both measurements come from DRAM.
//
// Usage: cflow_bench_kernels [--q4=ROWSxCOLS] [--f32=ROWSxCOLS] [--kq=ROWSxCOLS] [--seconds=S] [--scalar]
//                            [google benchmark flags]
// After the Google Benchmark cases it prints, per matrix and ISA, one line
// "ratio achieved/stream-read = X.XX" from a separate std::chrono measurement (warm-up, then
// the fastest of repeated full passes: on a shared machine other processes only ever add time,
// so the minimum is the least disturbed estimate for both sides of the ratio).
// Then a K-quant report on the selected ISA (CFLOW_ISA honoured): Q4_0, Q4_K and Q6_K matrices of
// the --kq shape (default 4096x4096, 128x256 tiles), each matvec run as the session runs it (x
// quantized once per slice on the int8 paths), in GB/s of weight bytes, and Q4_K / Q4_0.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
#include <immintrin.h>
#define CFLOW_BENCH_X86 1
#else
#define CFLOW_BENCH_X86 0
#endif

#if defined(__GNUC__)
#define CFLOW_TARGET(isa) __attribute__((target(isa)))
#else
#define CFLOW_TARGET(isa)
#endif

#include "cflow/engine/kernels/kernels.h"
#include "cflow/engine/kernels/lanes_layout.h"
#include "cflow/formats/tile_codec.h"
#include "cflow/formats/tile_plan.h"

namespace {

using cflow::DType;
using cflow::Isa;

// A weight matrix laid out like one tiled segment of a .cflow file.
struct TiledMatrix {
    DType dtype = DType::Q4_0;
    uint32_t rows = 0, cols = 0;
    std::vector<cflow::PlannedTile> tiles;
    std::vector<uint8_t> bytes;  // [planned_bytes] headers + payloads
    std::vector<float> x;        // [cols] f32
    std::vector<float> y;        // [rows] f32
    std::vector<uint8_t> lanes;  // [planned_bytes] the same bytes with every payload in the lanes layout (Q4_0/Q8_0)
    std::string label;
};

uint64_t splitmix(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

bool build_matrix(DType dtype, uint32_t rows, uint32_t cols, TiledMatrix& m) {
    auto planned = cflow::plan_tiles(with_dtype({{cflow::MatrixId::Q, rows}}, dtype), cols);
    if (!planned) {
        std::fprintf(stderr, "cannot plan a %ux%u %s matrix: %s\n", rows, cols,
                     std::string(cflow::dtype_name(dtype)).c_str(), planned.error().c_str());
        return false;
    }
    m.dtype = dtype;
    m.rows = rows;
    m.cols = cols;
    m.tiles = std::move(planned.value());
    m.bytes.assign(cflow::planned_bytes(m.tiles), 0);
    m.label = std::string(cflow::dtype_name(dtype)) + " " + std::to_string(rows) + "x" + std::to_string(cols);
    uint64_t seed = 42;
    // Random payload bytes, then finite values where they are floats: f16 block scales in
    // [2^-10, 2), f32 weights in [-1, 1) (no NaN/denormal slow paths in the measurement).
    for (size_t i = 0; i + 8 <= m.bytes.size(); i += 8) {
        const uint64_t r = splitmix(seed);
        std::memcpy(m.bytes.data() + i, &r, 8);
    }
    for (const cflow::PlannedTile& t : m.tiles) {
        uint8_t* payload = m.bytes.data() + t.offset + sizeof(cflow::TileHeader);
        if (dtype == DType::F32) {
            for (size_t k = 0; k < size_t{t.rows} * t.cols; ++k) {
                const float v = static_cast<float>(static_cast<int64_t>(splitmix(seed) >> 40) - (1 << 23)) / (1 << 23);
                std::memcpy(payload + k * 4, &v, 4);
            }
        } else if (cflow::is_kquant(dtype)) {
            // Every super-block's f16 d (and dmin) in [2^-10, 2): at offset 208 for Q6_K, 0 and 2 otherwise.
            const uint32_t blockBytes = cflow::kquant_block_bytes(dtype);
            for (uint32_t r = 0; r < t.rows; ++r) {
                uint8_t* block = payload + size_t{r} * blockBytes;
                for (size_t at : dtype == DType::Q6_K ? std::vector<size_t>{208} : std::vector<size_t>{0, 2}) {
                    const uint16_t h = cflow::f32_to_f16(static_cast<float>(1 + splitmix(seed) % 2048) / 1024.0f);
                    std::memcpy(block + at, &h, 2);
                }
            }
        } else if (dtype == DType::Q2_K || dtype == DType::Q3_K) {
            // Every super-block's f16 d (and Q2_K's dmin) in [2^-10, 2): Q2_K at 80 and 82, Q3_K at 108.
            const uint32_t blockBytes = cflow::ggml_tile_block_bytes(dtype);
            for (uint32_t r = 0; r < t.rows; ++r)
                for (size_t at : dtype == DType::Q2_K ? std::vector<size_t>{80, 82} : std::vector<size_t>{108}) {
                    const uint16_t h = cflow::f32_to_f16(static_cast<float>(1 + splitmix(seed) % 2048) / 1024.0f);
                    std::memcpy(payload + size_t{r} * blockBytes + at, &h, 2);
                }
        } else if (cflow::is_ggml32_int8(dtype)) {
            // Each 32-weight block's scale: E8M0 exponent 120..131 (MXFP4), f16 d (and Q4_1 / Q5_1's
            // min m) in [2^-10, 2) for the others.
            const size_t blockBytes = cflow::ggml_tile_block_bytes(dtype);
            const bool hasMin = dtype == DType::Q4_1 || dtype == DType::Q5_1;
            for (size_t k = 0; k < size_t{t.rows} * (t.cols / cflow::ggml_tile_block_weights(dtype)); ++k) {
                if (dtype == DType::MXFP4) {
                    payload[k * blockBytes] = static_cast<uint8_t>(120 + splitmix(seed) % 12);
                    continue;
                }
                for (size_t at : hasMin ? std::vector<size_t>{0, 2} : std::vector<size_t>{0}) {
                    const uint16_t h = cflow::f32_to_f16(static_cast<float>(1 + splitmix(seed) % 2048) / 1024.0f);
                    std::memcpy(payload + k * blockBytes + at, &h, 2);
                }
            }
        } else if (cflow::is_block_quant(dtype)) {
            const size_t scales = size_t{t.rows} * cflow::groups_per_row(t.cols);
            for (size_t k = 0; k < scales; ++k) {
                const float s = static_cast<float>(1 + splitmix(seed) % 2048) / 1024.0f;
                const uint16_t h = cflow::f32_to_f16(s);
                std::memcpy(payload + k * 2, &h, 2);
            }
        }
    }
    m.x.resize(cols);
    for (float& v : m.x) v = static_cast<float>(splitmix(seed) % 2001) / 1000.0f - 1.0f;
    m.y.assign(rows, 0.0f);
    if (dtype == DType::Q4_0 || dtype == DType::Q8_0) {
        m.lanes = m.bytes;
        for (const cflow::PlannedTile& t : m.tiles) {
            if (!cflow::lanes_layout_supported(dtype, t.rows, t.cols)) {
                m.lanes.clear();  // a tile the lanes kernels cannot take: no lanes measurement
                break;
            }
            const size_t at = t.offset + sizeof(cflow::TileHeader);
            cflow::repack_tile_lanes(dtype, m.bytes.data() + at, t.rows, t.cols, m.lanes.data() + at);
        }
    }
    return true;
}

// The whole matrix: y = W x, every tile's partial product added into its output stripe.
void full_matvec(const cflow::Kernels& k, TiledMatrix& m) {
    std::fill(m.y.begin(), m.y.end(), 0.0f);
    for (const cflow::PlannedTile& t : m.tiles)
        k.tile_matvec(m.dtype, m.bytes.data() + t.offset + sizeof(cflow::TileHeader), t.rows, t.cols,
                      m.x.data() + t.col_offset, m.y.data() + t.row_offset);
}

// As the session runs a matvec on the int8 paths: x quantized once per 256-column slice, then
// every tile reads its slice (tile_matvec above quantizes the slice again in every tile).
// slices: [cols / 256] of kQuantizedSliceBytes. From `lanes` when asked (the --load lanes copy).
void full_matvec_quantized(const cflow::Kernels& k, TiledMatrix& m, uint8_t* slices, bool fromLanes) {
    std::fill(m.y.begin(), m.y.end(), 0.0f);
    for (uint32_t c = 0; c < m.cols; c += cflow::kTileCols)
        k.quantize_slice(cflow::slice_dtype(m.dtype), m.x.data() + c, std::min<uint32_t>(cflow::kTileCols, m.cols - c),
                         slices + (c / cflow::kTileCols) * cflow::kQuantizedSliceBytes);
    const uint8_t* base = fromLanes ? m.lanes.data() : m.bytes.data();
    for (const cflow::PlannedTile& t : m.tiles) {
        const uint8_t* payload = base + t.offset + sizeof(cflow::TileHeader);
        const uint8_t* slice = slices + (t.col_offset / cflow::kTileCols) * cflow::kQuantizedSliceBytes;
        float* y = m.y.data() + t.row_offset;
        if (fromLanes) k.tile_matvec_quantized_lanes(m.dtype, payload, t.rows, t.cols, slice, y);
        else k.tile_matvec_quantized(m.dtype, payload, t.rows, t.cols, slice, y);
    }
}

// As the session runs a prefill chunk: every token's slices quantized once, then every tile
// multiplied with all `tokens` of them (Kernels::tile_matmat_quantized, or its lanes form).
// slices: [tokens][cols / 256] quantized slices; y: [tokens][rows].
void full_matmat_quantized(const cflow::Kernels& k, TiledMatrix& m, uint32_t tokens, uint8_t* slices, std::vector<float>& y,
                           bool fromLanes) {
    const size_t tokenStride = (m.cols / cflow::kTileCols) * cflow::kQuantizedSliceBytes;
    std::fill(y.begin(), y.end(), 0.0f);
    for (uint32_t tok = 0; tok < tokens; ++tok)
        for (uint32_t c = 0; c < m.cols; c += cflow::kTileCols)
            k.quantize_slice(cflow::slice_dtype(m.dtype), m.x.data() + c, std::min<uint32_t>(cflow::kTileCols, m.cols - c),
                             slices + tok * tokenStride + (c / cflow::kTileCols) * cflow::kQuantizedSliceBytes);
    const uint8_t* base = fromLanes ? m.lanes.data() : m.bytes.data();
    for (const cflow::PlannedTile& t : m.tiles) {
        const uint8_t* payload = base + t.offset + sizeof(cflow::TileHeader);
        const uint8_t* slice = slices + (t.col_offset / cflow::kTileCols) * cflow::kQuantizedSliceBytes;
        float* out = y.data() + t.row_offset;
        if (fromLanes) k.tile_matmat_quantized_lanes(m.dtype, payload, t.rows, t.cols, slice, tokenStride, tokens, out, m.rows);
        else k.tile_matmat_quantized(m.dtype, payload, t.rows, t.cols, slice, tokenStride, tokens, out, m.rows);
    }
}

// ---- stream-read baseline: touch every byte once with the widest loads available ----

#if CFLOW_BENCH_X86
CFLOW_TARGET("avx512f") uint64_t stream_read_avx512(const uint8_t* p, size_t n) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 256 <= n; i += 256) {
        a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(p + i));
        a1 = _mm512_add_epi64(a1, _mm512_loadu_si512(p + i + 64));
        a2 = _mm512_add_epi64(a2, _mm512_loadu_si512(p + i + 128));
        a3 = _mm512_add_epi64(a3, _mm512_loadu_si512(p + i + 192));
    }
    alignas(64) uint64_t lanes[8];
    _mm512_store_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
    uint64_t sum = 0;
    for (uint64_t v : lanes) sum += v;
    for (; i < n; ++i) sum += p[i];
    return sum;
}

CFLOW_TARGET("avx2") uint64_t stream_read_avx2(const uint8_t* p, size_t n) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
        a0 = _mm256_add_epi64(a0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
        a1 = _mm256_add_epi64(a1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
        a2 = _mm256_add_epi64(a2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
        a3 = _mm256_add_epi64(a3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
    }
    alignas(32) uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)));
    uint64_t sum = 0;
    for (uint64_t v : lanes) sum += v;
    for (; i < n; ++i) sum += p[i];
    return sum;
}
#endif

uint64_t stream_read_scalar(const uint8_t* p, size_t n) {
    uint64_t sum = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        std::memcpy(&v, p + i, 8);
        sum += v;
    }
    for (; i < n; ++i) sum += p[i];
    return sum;
}

uint64_t stream_read(const std::vector<uint8_t>& bytes) {
#if CFLOW_BENCH_X86
    if (cflow::isa_supported(Isa::Avx512)) return stream_read_avx512(bytes.data(), bytes.size());
    if (cflow::isa_supported(Isa::Avx2)) return stream_read_avx2(bytes.data(), bytes.size());
#endif
    return stream_read_scalar(bytes.data(), bytes.size());
}

const char* stream_read_width() {
    if (CFLOW_BENCH_X86 && cflow::isa_supported(Isa::Avx512)) return "avx512 loads";
    if (CFLOW_BENCH_X86 && cflow::isa_supported(Isa::Avx2)) return "avx2 loads";
    return "scalar loads";
}

// The scalar path is the specification, not a production path, and takes seconds per pass
// over these matrices; --scalar includes it.
bool gIncludeScalar = false;

std::vector<Isa> measured_isas() {
    std::vector<Isa> out;
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Avx2Int8, Isa::AvxVnni, Isa::Avx512Vnni})
        if (cflow::isa_supported(isa) && (isa != Isa::Scalar || gIncludeScalar)) out.push_back(isa);
    return out;
}

// ---- Google Benchmark cases ----

void BM_TiledMatvec(benchmark::State& state, TiledMatrix* m, Isa isa) {
    const cflow::Kernels& k = cflow::kernels_for(isa);
    for (auto _ : state) {
        full_matvec(k, *m);
        benchmark::DoNotOptimize(m->y.data());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(m->bytes.size()));
}

void BM_StreamRead(benchmark::State& state, TiledMatrix* m) {
    for (auto _ : state) benchmark::DoNotOptimize(stream_read(m->bytes));
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(m->bytes.size()));
    state.SetLabel(stream_read_width());
}

// ---- the ratio report (std::chrono) ----

template <class Fn>
double fastest_pass_seconds(Fn&& pass, double budgetSeconds) {
    using Clock = std::chrono::steady_clock;
    for (int i = 0; i < 2; ++i) pass();  // warm-up: page faults, TLB, frequency
    std::vector<double> times;
    const auto start = Clock::now();
    while (times.size() < 5 || (std::chrono::duration<double>(Clock::now() - start).count() < budgetSeconds && times.size() < 1000)) {
        const auto t0 = Clock::now();
        pass();
        times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    return *std::min_element(times.begin(), times.end());
}

void report_ratios(std::vector<TiledMatrix>& matrices, double budgetSeconds) {
    std::printf("\nratio report (single thread, fastest of repeated passes after 2 warm-up passes)\n");
    for (TiledMatrix& m : matrices) {
        const double gb = static_cast<double>(m.bytes.size()) / 1e9;
        volatile uint64_t sink = 0;
        const double streamS = fastest_pass_seconds([&] { sink = sink + stream_read(m.bytes); }, budgetSeconds);
        std::printf("%-18s %8.1f MB  stream-read (%s): %6.2f GB/s\n", m.label.c_str(), gb * 1e3, stream_read_width(),
                    gb / streamS);
        for (Isa isa : measured_isas()) {
            const cflow::Kernels& k = cflow::kernels_for(isa);
            const double s = fastest_pass_seconds([&] { full_matvec(k, m); }, isa == Isa::Scalar ? budgetSeconds / 4 : budgetSeconds);
            std::printf("%-18s %-10s matvec: %6.2f GB/s  ratio achieved/stream-read = %.2f\n", m.label.c_str(),
                        std::string(cflow::isa_name(isa)).c_str(), gb / s, streamS / s);
            if (!k.tile_matvec_quantized || !(k.quantized_dtypes & cflow::dtype_bit(m.dtype))) continue;
            // [cols / 256] quantized slices, aligned as the session aligns them
            std::vector<uint8_t> sliceBytes((m.cols / cflow::kTileCols + 1) * cflow::kQuantizedSliceBytes + cflow::kQuantizedSliceAlign);
            uint8_t* slices = sliceBytes.data() + (cflow::kQuantizedSliceAlign -
                                                   reinterpret_cast<uintptr_t>(sliceBytes.data()) % cflow::kQuantizedSliceAlign) %
                                                      cflow::kQuantizedSliceAlign;
            const double qs = fastest_pass_seconds([&] { full_matvec_quantized(k, m, slices, false); }, budgetSeconds);
            std::printf("%-18s %-10s x quantized once: %6.2f GB/s  ratio achieved/stream-read = %.2f\n", m.label.c_str(),
                        std::string(cflow::isa_name(isa)).c_str(), gb / qs, streamS / qs);
            if (!k.tile_matvec_quantized_lanes || m.lanes.empty()) continue;
            const double ls = fastest_pass_seconds([&] { full_matvec_quantized(k, m, slices, true); }, budgetSeconds);
            std::printf("%-18s %-10s lanes layout:      %6.2f GB/s  ratio achieved/stream-read = %.2f\n", m.label.c_str(),
                        std::string(cflow::isa_name(isa)).c_str(), gb / ls, streamS / ls);
        }
    }
}

// The session's matvec on one path: quantized once per slice where the path quantizes this dtype.
double session_matvec_seconds(const cflow::Kernels& k, TiledMatrix& m, double budgetSeconds) {
    std::vector<uint8_t> sliceBytes((m.cols / cflow::kTileCols + 1) * cflow::kQuantizedSliceBytes + cflow::kQuantizedSliceAlign);
    uint8_t* slices = sliceBytes.data() + (cflow::kQuantizedSliceAlign -
                                           reinterpret_cast<uintptr_t>(sliceBytes.data()) % cflow::kQuantizedSliceAlign) %
                                              cflow::kQuantizedSliceAlign;  // [cols / 256] slices
    if (k.tile_matvec_quantized && (k.quantized_dtypes & cflow::dtype_bit(m.dtype)))
        return fastest_pass_seconds([&] { full_matvec_quantized(k, m, slices, false); }, budgetSeconds);
    return fastest_pass_seconds([&] { full_matvec(k, m); }, budgetSeconds);
}

// One prefill pass of `tokens` tokens over m as the session runs it (the lanes copy where the path
// has one): the fastest pass in seconds; lanes says which walk ran.
double prefill_pass_seconds(const cflow::Kernels& k, TiledMatrix& m, uint32_t tokens, double budgetSeconds, bool& lanes) {
    std::vector<uint8_t> sliceBytes(size_t{tokens} * (m.cols / cflow::kTileCols) * cflow::kQuantizedSliceBytes +
                                    cflow::kQuantizedSliceAlign);
    uint8_t* slices = sliceBytes.data() + (cflow::kQuantizedSliceAlign -
                                           reinterpret_cast<uintptr_t>(sliceBytes.data()) % cflow::kQuantizedSliceAlign) %
                                              cflow::kQuantizedSliceAlign;  // [tokens][cols / 256] slices
    std::vector<float> y(size_t{tokens} * m.rows);  // [tokens][rows]
    lanes = k.tile_matmat_quantized_lanes && !m.lanes.empty();
    return fastest_pass_seconds([&] { full_matmat_quantized(k, m, tokens, slices, y, lanes); }, budgetSeconds);
}

// Q4_0, Q4_K and Q6_K of one shape on the selected ISA: GB/s of weight bytes and Q4_K / Q4_0.
void report_kquant(uint32_t rows, uint32_t cols, double budgetSeconds) {
    const Isa isa = cflow::selected_isa();
    const cflow::Kernels& k = cflow::kernels_for(isa);
    std::printf("\nK-quant report (%s, single thread, session matvec: x quantized once per slice on int8 paths)\n",
                std::string(cflow::isa_name(isa)).c_str());
    double q4_0GBs = 0.0, q4_kGBs = 0.0;
    for (DType dtype : {DType::Q4_0, DType::Q4_K, DType::Q6_K}) {
        TiledMatrix m;
        if (!build_matrix(dtype, rows, cols, m)) continue;
        const double gb = static_cast<double>(m.bytes.size()) / 1e9;
        const double s = session_matvec_seconds(k, m, budgetSeconds);
        std::printf("%-18s %-10s %7.2f MB  %8.1f us/matvec  %6.2f GB/s\n", m.label.c_str(),
                    std::string(cflow::isa_name(isa)).c_str(), gb * 1e3, s * 1e6, gb / s);
        if (dtype == DType::Q4_0) q4_0GBs = gb / s;
        if (dtype == DType::Q4_K) q4_kGBs = gb / s;
    }
    if (q4_0GBs > 0.0) std::printf("ratio Q4_K / Q4_0 (GB/s of weight bytes) = %.2f\n", q4_kGBs / q4_0GBs);
    if (!k.tile_matmat_quantized) return;
    // Prefill: a chunk of tokens per weight pass, in multiply-accumulates per second (weights x tokens).
    constexpr uint32_t kTokens = 64;
    std::printf("prefill report (%s, single thread, %u tokens per weight pass)\n", std::string(cflow::isa_name(isa)).c_str(), kTokens);
    double q4_0Macs = 0.0, q4_kMacs = 0.0;
    for (DType dtype : {DType::Q4_0, DType::Q4_K, DType::Q6_K}) {
        TiledMatrix m;
        if (!(k.quantized_dtypes & cflow::dtype_bit(dtype)) || !build_matrix(dtype, rows, cols, m)) continue;
        bool lanes = false;
        const double s = prefill_pass_seconds(k, m, kTokens, budgetSeconds, lanes);
        const double macs = double(m.rows) * m.cols * kTokens;
        std::printf("%-18s %-10s %s %8.1f ms/pass  %6.2f GMAC/s\n", m.label.c_str(), std::string(cflow::isa_name(isa)).c_str(),
                    lanes ? "lanes" : "tiles", s * 1e3, macs / s / 1e9);
        if (dtype == DType::Q4_0) q4_0Macs = macs / s;
        if (dtype == DType::Q4_K) q4_kMacs = macs / s;
    }
    if (q4_0Macs > 0.0 && q4_kMacs > 0.0) std::printf("ratio Q4_K / Q4_0 prefill (MAC/s) = %.2f\n", q4_kMacs / q4_0Macs);
}

// Every ggml block type a GGUF may hold, each kept as its own tile type (int8 activations on the
// int8 paths), against Q8_0 (what the conversion made of the 32-weight types before they had fast
// kernels) and Q4_0: time per matvec of one shape on the selected ISA (x quantized once per slice
// where the path quantizes the type), and prefill MAC/s at 64 tokens per weight pass.
void report_ggml_blocks(uint32_t rows, uint32_t cols, double budgetSeconds) {
    const Isa isa = cflow::selected_isa();
    const cflow::Kernels& k = cflow::kernels_for(isa);
    std::printf("\n32-weight block report (%s, single thread)\n", std::string(cflow::isa_name(isa)).c_str());
    constexpr DType kTypes[] = {DType::Q4_0,   DType::Q8_0,  DType::Q4_1,   DType::Q5_0, DType::Q5_1, DType::IQ4_NL,
                                DType::MXFP4, DType::IQ4_XS, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q6_K};
    double q8Seconds = 0.0, q4Seconds = 0.0;
    for (DType dtype : kTypes) {
        TiledMatrix m;
        if (!build_matrix(dtype, rows, cols, m)) continue;
        const double gb = static_cast<double>(m.bytes.size()) / 1e9;
        const double s = session_matvec_seconds(k, m, budgetSeconds);
        if (dtype == DType::Q8_0) q8Seconds = s;
        if (dtype == DType::Q4_0) q4Seconds = s;
        std::printf("%-18s %-10s %7.2f MB  %8.1f us/matvec  %6.2f GB/s", m.label.c_str(), std::string(cflow::isa_name(isa)).c_str(),
                    gb * 1e3, s * 1e6, gb / s);
        if (q8Seconds > 0.0 && q4Seconds > 0.0 && dtype != DType::Q4_0 && dtype != DType::Q8_0)
            std::printf("  time / Q8_0 = %.2f  / Q4_0 = %.2f", s / q8Seconds, s / q4Seconds);
        std::printf("\n");
    }
    if (!k.tile_matmat_quantized) return;
    constexpr uint32_t kTokens = 64;
    double q4Macs = 0.0;
    for (DType dtype : kTypes) {
        TiledMatrix m;
        if (!(k.quantized_dtypes & cflow::dtype_bit(dtype)) || !build_matrix(dtype, rows, cols, m)) continue;
        bool lanes = false;
        const double s = prefill_pass_seconds(k, m, kTokens, budgetSeconds, lanes);
        const double macs = double(m.rows) * m.cols * kTokens;
        if (dtype == DType::Q4_0) q4Macs = macs / s;
        std::printf("%-18s %-10s prefill %s %8.1f ms/pass  %6.2f GMAC/s", m.label.c_str(), std::string(cflow::isa_name(isa)).c_str(),
                    lanes ? "lanes" : "tiles", s * 1e3, macs / s / 1e9);
        if (q4Macs > 0.0 && dtype != DType::Q4_0) std::printf("  / Q4_0 = %.2f", macs / s / q4Macs);
        std::printf("\n");
    }
}

bool parse_shape(const std::string& arg, const std::string& flag, uint32_t& rows, uint32_t& cols) {
    if (arg.rfind(flag, 0) != 0) return false;
    unsigned r = 0, c = 0;
    if (std::sscanf(arg.c_str() + flag.size(), "%ux%u", &r, &c) == 2 && r > 0 && c > 0) {
        rows = r;
        cols = c;
    } else {
        std::fprintf(stderr, "ignoring malformed %s (want ROWSxCOLS)\n", arg.c_str());
    }
    return true;
}

} // namespace

int main(int argc, char** argv) {
    // Defaults exceed a 300 MiB last-level cache (as on the development machine) about twice.
    uint32_t q4Rows = 32768, q4Cols = 32768;  // 604 MB of Q4_0 tiles
    uint32_t f32Rows = 16384, f32Cols = 8192;  // 537 MB of F32 tiles
    uint32_t kqRows = 4096, kqCols = 4096;     // a 4096x4096 projection: 9.4 MB of Q4_K
    double seconds = 2.0;
    std::vector<char*> rest{argv[0]};
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (parse_shape(arg, "--q4=", q4Rows, q4Cols) || parse_shape(arg, "--f32=", f32Rows, f32Cols) ||
            parse_shape(arg, "--kq=", kqRows, kqCols))
            continue;
        if (arg == "--scalar") {
            gIncludeScalar = true;
            continue;
        }
        if (arg.rfind("--seconds=", 0) == 0) {
            seconds = std::atof(arg.c_str() + 10);
            continue;
        }
        rest.push_back(argv[i]);
    }
    int restCount = static_cast<int>(rest.size());
    benchmark::Initialize(&restCount, rest.data());

    std::vector<TiledMatrix> matrices(2);
    if (!build_matrix(DType::Q4_0, q4Rows, q4Cols, matrices[0]) || !build_matrix(DType::F32, f32Rows, f32Cols, matrices[1]))
        return 1;
    std::printf("best ISA: %s; selected (CFLOW_ISA honoured): %s\n", std::string(cflow::isa_name(cflow::detect_best_isa())).c_str(),
                std::string(cflow::isa_name(cflow::selected_isa())).c_str());

    for (TiledMatrix& m : matrices) {
        benchmark::RegisterBenchmark(("BM_StreamRead/" + m.label).c_str(), BM_StreamRead, &m)->Unit(benchmark::kMillisecond);
        for (Isa isa : measured_isas())
            benchmark::RegisterBenchmark(("BM_TiledMatvec/" + m.label + "/" + std::string(cflow::isa_name(isa))).c_str(),
                                         BM_TiledMatvec, &m, isa)
                ->Unit(benchmark::kMillisecond);
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();

    report_ratios(matrices, seconds);
    report_kquant(kqRows, kqCols, seconds);
    report_ggml_blocks(kqRows, kqCols, seconds);
    return 0;
}
