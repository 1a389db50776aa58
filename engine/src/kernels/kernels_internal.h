#pragma once
// Engine-internal: CPU feature detection and the per-ISA kernel tables that dispatch.cpp
// picks from. Each table lives in the translation unit compiled with that ISA's flags
// (kernels_avx2.cpp, kernels_avx512.cpp, kernels_avx512vnni.cpp); nothing here may be
// called unless isa_supported() said yes, because those units use the ISA everywhere.
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "cflow/engine/kernels/kernels.h"

// The SIMD paths exist only on x86; elsewhere dispatch offers the scalar path alone.
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
#define CFLOW_KERNELS_X86 1
#else
#define CFLOW_KERNELS_X86 0
#endif

// Fully unrolls a loop over the R rows (or T tokens) of a block, so the per-row accumulators stay in
// registers: GCC 12 keeps a non-unrolled acc[R] array on the stack, and the store/reload of
// each accumulator around every fused multiply-add made the int8 tile walks latency-bound.
#if defined(__GNUC__) && !defined(__clang__)
#define CFLOW_UNROLL_ROWS _Pragma("GCC unroll 16")
#elif defined(__clang__)
#define CFLOW_UNROLL_ROWS _Pragma("unroll")
#else
#define CFLOW_UNROLL_ROWS
#endif

namespace cflow::kernels {

// set_explicit_prefetch()'s switch, read by the kernels that issue PREFETCHT0.
extern std::atomic<bool> g_explicit_prefetch;

// AMX int8 tiles for the AVX-512 VNNI path's batched prefill: the CPU has them, the OS saves them,
// and the process was granted their state (amx_permission_*.cpp); probed once. Gated by
// set_amx_enabled() (amx_active()).
bool amx_int8_usable();
bool amx_active();
// The OS part: ask for the tile-data state component (Linux: arch_prctl ARCH_REQ_XCOMP_PERM);
// true once granted. Called at most once per process by amx_int8_usable().
bool request_amx_tile_permission();

// What the CPU offers and what the OS saves on a context switch (XCR0). A SIMD path is
// usable only when both the instructions exist and the OS preserves the registers.
struct CpuFeatures {
    bool avx2 = false;
    bool fma = false;
    bool f16c = false;
    bool os_ymm = false;       // XCR0 bits 1,2: SSE and AVX (YMM upper halves) state
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512vl = false;
    bool avx512dq = false;
    bool avx512vnni = false;
    bool avxvnni = false;      // VEX-encoded vpdpbusd on ymm (CPUID 7.1 EAX bit 4)
    bool os_zmm = false;       // XCR0 bits 5,6,7: opmask, ZMM0-15 upper halves, ZMM16-31
    bool amx_tile = false;     // CPUID 7.0 EDX bit 24: tile registers and TILELOADD/TILESTORED
    bool amx_int8 = false;     // CPUID 7.0 EDX bit 25: TDPBSUD and the other int8 tile dot products
    bool os_amx = false;       // XCR0 bits 17,18: the OS saves tile configuration and tile data
};

CpuFeatures detect_cpu_features();  // cpu_features.cpp; all false on non-x86 builds

// Scalar: the specification every other path is tested against.
void tile_matvec_scalar(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y);
float dot_scalar(const float* a, const float* b, size_t n);
void axpy_scalar(float alpha, const float* x, float* y, size_t n);
float dot_f16_scalar(const float* a, const uint16_t* b, size_t n);
void axpy_f16_scalar(float alpha, const uint16_t* x, float* y, size_t n);
void weighted_row_sum_scalar(DType dtype, const uint8_t* m, uint32_t rows, uint32_t cols, const float* w, float* y);
const Kernels& scalar_table();

#if CFLOW_KERNELS_X86
// AVX2 + FMA + F16C; the functions are exported because the int8 tables reuse them.
void tile_matvec_avx2(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y);
float dot_avx2(const float* a, const float* b, size_t n);
void axpy_avx2(float alpha, const float* x, float* y, size_t n);
float dot_f16_avx2(const float* a, const uint16_t* b, size_t n);
void axpy_f16_avx2(float alpha, const uint16_t* x, float* y, size_t n);
void weighted_row_sum_avx2(DType dtype, const uint8_t* m, uint32_t rows, uint32_t cols, const float* w, float* y);
const Kernels& avx2_table();
const Kernels& avx2int8_table();    // quantised tiles with int8 activations (vpmaddubsw); F32/F16 as AVX2
const Kernels& avxvnni_table();     // the same with VEX vpdpbusd (AVX-VNNI)
// AVX-512 F/BW/VL/DQ; the functions are exported because the VNNI table reuses them.
void tile_matvec_avx512(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y);
float dot_avx512(const float* a, const float* b, size_t n);
void axpy_avx512(float alpha, const float* x, float* y, size_t n);
float dot_f16_avx512(const float* a, const uint16_t* b, size_t n);
void axpy_f16_avx512(float alpha, const uint16_t* x, float* y, size_t n);
void weighted_row_sum_avx512(DType dtype, const uint8_t* m, uint32_t rows, uint32_t cols, const float* w, float* y);
const Kernels& avx512_table();
const Kernels& avx512vnni_table(); // quantised tiles with int8 activations (vpdpbusd); F32/F16 as AVX-512
#endif

} // namespace cflow::kernels
