#pragma once
// Compute kernels with run-time ISA dispatch. The scalar kernels are the specification;
// every SIMD path is tested against them (tests/engine/kernels_test.cpp) with named tolerances.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "cflow/formats/dtype.h"

namespace cflow {

// Kernel paths. Scalar, Avx2 and Avx512 multiply quantized weights by f32 activations: the
// exactness references. Avx2Int8, AvxVnni and Avx512Vnni quantize each activation block to
// int8 and use integer dot products (vpmaddubsw, VEX vpdpbusd, EVEX vpdpbusd): the fast paths,
// preferred by detect_best_isa() in the order Avx512Vnni, AvxVnni, Avx2Int8, Avx512, Avx2, Scalar.
enum class Isa : uint8_t { Scalar = 0, Avx2 = 1, Avx512 = 2, Avx512Vnni = 3, Avx2Int8 = 4, AvxVnni = 5 };

// "scalar", "avx2", "avx512", "avx512vnni", "avx2int8", "avxvnni"
std::string_view isa_name(Isa isa);
std::optional<Isa> parse_isa(std::string_view name);
bool isa_supported(Isa isa);                           // CPUID + XCR0 (OS saves the registers)
Isa detect_best_isa();
// detect_best_isa(), or the path named by the environment variable CFLOW_ISA when that path
// is supported (tests force each path with it). Decided once per process.
Isa selected_isa();

bool isa_quantizes_activations(Isa isa);               // the int8 paths

// One 256-column slice of an activation vector quantized for the int8 paths (opaque; its
// layout depends on the path and the weight dtype). A matvec quantizes each slice once and
// every tile of the matrix reads it, instead of each tile quantizing its slice again.
inline constexpr size_t kQuantizedSliceBytes = 1024;
inline constexpr size_t kQuantizedSliceAlign = 64;
// Token count from which Kernels::tile_matmat_quantized may reorder f32 additions (see there).
inline constexpr uint32_t kMatmatLaneTokens = 12;

// The ggml tiles with 32-weight (sub-)blocks that the int8 paths multiply with int8 activations from
// one shared slice layout (32-value int8 blocks, each with its scale and the exact f32 sum of its
// x): Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4, and IQ4_XS (eight such sub-blocks per super-block), Q2_K and
// Q3_K (their super-blocks' 2-bit quants taken 32 at a time, a scale per 16; the slice also holds
// each 16 values' sums).
constexpr bool is_ggml32_int8(DType t) {
    return t == DType::Q4_1 || t == DType::Q5_0 || t == DType::Q5_1 || t == DType::IQ4_NL || t == DType::MXFP4 ||
           t == DType::IQ4_XS || t == DType::Q2_K || t == DType::Q3_K;
}
// The dtype whose quantized-slice layout a tile of dtype t reads: the K-quants share one (256
// int8 values, one scale and 16 sums, Q8_K-style), the ggml 32-weight block types another (keyed
// Q5_0), Q4_0 and Q8_0 each have their own.
constexpr DType slice_dtype(DType t) { return is_kquant(t) ? DType::Q4_K : is_ggml32_int8(t) ? DType::Q5_0 : t; }
constexpr uint32_t dtype_bit(DType t) { return 1u << static_cast<unsigned>(t); }

// The tile types every SIMD path multiplies from their packed blocks: the K-quants Q4_K / Q5_K /
// Q6_K, and on the int8 paths (int8 activations, blocks decoded in registers) the 32-weight block
// types Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4 and the super-blocks of IQ4_XS, Q2_K and Q3_K taken 32
// weights at a time: on a 16384x16384 matvec (one thread, from DRAM) each 32-weight type takes
// 0.5-1.0x the time of the Q8_0 a conversion would make of it, Q2_K about Q6_K's time and Q3_K
// 1.3x Q6_K's for half its bytes (BENCHMARKS.md). Front ends keep these types when converting a
// GGUF (ConvertOptions::keep_dtype_mask): today every ggml block type a tile holds.
inline constexpr uint32_t kNativeSpeedTileDtypes =
    dtype_bit(DType::F32) | dtype_bit(DType::F16) | dtype_bit(DType::Q8_0) | dtype_bit(DType::Q4_0) | dtype_bit(DType::Q4_K) |
    dtype_bit(DType::Q5_K) | dtype_bit(DType::Q6_K) | dtype_bit(DType::MXFP4) | dtype_bit(DType::Q4_1) | dtype_bit(DType::Q5_0) |
    dtype_bit(DType::Q5_1) | dtype_bit(DType::IQ4_NL) | dtype_bit(DType::IQ4_XS) | dtype_bit(DType::Q2_K) | dtype_bit(DType::Q3_K);

struct Kernels {
    Isa isa;
    // y[r] += sum_c W[r][c] * x[c] for r < rows, c < cols, where W is a tile payload of the
    // given dtype (layout in cflow_layout.h). x: [cols] f32, y: [rows] f32. On the int8 paths
    // Q4_0/Q8_0 tiles see x quantized per 32-block (bounded error, kernels_test.cpp).
    void (*tile_matvec)(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y);
    // sum_i a[i] * b[i]
    float (*dot)(const float* a, const float* b, size_t n);
    // y[i] += alpha * x[i]
    void (*axpy)(float alpha, const float* x, float* y, size_t n);
    // The same with b / x stored as IEEE half floats (the F16 KV cache): each element converts
    // exactly to f32, then the f32 kernel's arithmetic.
    float (*dot_f16)(const float* a, const uint16_t* b, size_t n);
    void (*axpy_f16)(float alpha, const uint16_t* x, float* y, size_t n);
    // y[c] += sum_r w[r] * M[r][c] for c < cols, rows in order: M is [rows x cols] row-major F32 or
    // F16 (attention's values: one call per head instead of an axpy per position); the same
    // arithmetic as axpy (or axpy_f16) called row after row. w: [rows], y: [cols].
    void (*weighted_row_sum)(DType dtype, const uint8_t* m, uint32_t rows, uint32_t cols, const float* w, float* y);
    // Int8 paths only (null elsewhere), for every quantised tile type: quantize_slice writes x [cols]
    // (cols <= 256) into slice (kQuantizedSliceBytes, kQuantizedSliceAlign-aligned) as
    // tile_matvec_quantized reads it for that dtype; tile_matvec_quantized(dtype, payload, rows,
    // cols, slice, y) then gives exactly what tile_matvec(dtype, payload, rows, cols, x, y) gives.
    void (*quantize_slice)(DType dtype, const float* x, uint32_t cols, void* slice) = nullptr;
    // dtype_bit() of every tile dtype quantize_slice and tile_matvec_quantized serve (0 elsewhere);
    // tile_matmat_quantized serves the same ones.
    uint32_t quantized_dtypes = 0;
    void (*tile_matvec_quantized)(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const void* slice,
                                  float* y) = nullptr;
    // Int8 paths only: tile_matvec_quantized for `tokens` activation vectors at once (batched
    // prefill). Token t's slice is at slices + t * sliceStride (bytes, a multiple of
    // kQuantizedSliceAlign) and its output rows at y + t * yStride (floats). Each weight block is
    // loaded and unpacked once for all the tokens. Below kMatmatLaneTokens tokens (and for Q8_0
    // on the AVX2 / AVX-VNNI paths always) every y value is bit-identical to what
    // tile_matvec_quantized gives for that token alone (same operations in the same order). From
    // kMatmatLaneTokens tokens the AVX-512 VNNI path (Q4_0 and Q8_0) and the AVX2 / AVX-VNNI paths
    // (Q4_0) rearrange the tile once so a register holds 16 (8) rows and sum each block per (row,
    // token) in int32: the integer dots are the same exact values, only the f32 additions are
    // ordered differently, so results agree within the reassociation bound
    // (tests/engine/kernels/kernels_test.cpp).
    void (*tile_matmat_quantized)(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols,
                                  const uint8_t* slices, size_t sliceStride, uint32_t tokens, float* y,
                                  size_t yStride) = nullptr;
    // tile_matvec_quantized on a tile in the lanes layout (lanes_layout.h; rows a multiple of 16,
    // whole blocks): the same exact integer block dots, f32 additions in another order, so within
    // the reassociation bound of tile_matvec_quantized (kernels_test.cpp). Null on paths without
    // one: the session unpacks such tiles and calls the file-layout kernels.
    void (*tile_matvec_quantized_lanes)(DType dtype, const uint8_t* lanes, uint32_t rows, uint32_t cols,
                                        const void* slice, float* y) = nullptr;
    // tile_matmat_quantized on a lanes tile, for any token count: within the same bound of
    // tile_matvec_quantized per token. Null where tile_matvec_quantized_lanes is.
    void (*tile_matmat_quantized_lanes)(DType dtype, const uint8_t* lanes, uint32_t rows, uint32_t cols,
                                        const uint8_t* slices, size_t sliceStride, uint32_t tokens, float* y,
                                        size_t yStride) = nullptr;
};

// Explicit PREFETCHT0 hints in the matvec inner loop: the int8 paths issue them (Avx2Int8,
// AvxVnni, Avx512Vnni ask for the weight bytes a fixed distance ahead of each row block). On by default; the scorecard's
// claim 6 turns them off for its A/B. Process-wide, read relaxed by every kernel call.
bool isa_issues_explicit_prefetch(Isa isa);
void set_explicit_prefetch(bool enabled);
bool explicit_prefetch_enabled();

// AMX int8 tiles (Intel Sapphire Rapids and later) under the AVX-512 VNNI path's batched prefill:
// from 16 tokens a tile, each 16 tokens x 16 rows x 32-byte block is one tile dot product instead
// of 128 vpdpbusd. The integer block dots are the same exact values and the f32 steps after them
// the same operations in the same order, so results are bit-identical with AMX on or off
// (tests/engine/kernels/amx_test.cpp). amx_available(): the CPU has AMX-INT8, the OS saves tile
// state and granted it to this process. On by default where available; the switch is
// process-wide (A/B measurements, tests).
bool amx_available();
void set_amx_enabled(bool enabled);
bool amx_enabled();  // available and not switched off

const Kernels& kernels_for(Isa isa);  // isa must be supported
const Kernels& active_kernels();      // kernels_for(selected_isa())

} // namespace cflow
