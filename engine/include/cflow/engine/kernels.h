#pragma once
// Compute kernels with run-time ISA dispatch. The scalar kernels are the specification;
// every SIMD path is tested against them (tests/engine/kernels_test.cpp) with named tolerances.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "cflow/formats/dtype.h"

namespace cflow {

enum class Isa : uint8_t { Scalar = 0, Avx2 = 1, Avx512 = 2, Avx512Vnni = 3 };

std::string_view isa_name(Isa isa);                    // "scalar", "avx2", "avx512", "avx512vnni"
std::optional<Isa> parse_isa(std::string_view name);
bool isa_supported(Isa isa);                           // CPUID + XCR0 (OS saves the registers)
Isa detect_best_isa();
// detect_best_isa(), or the path named by the environment variable CFLOW_ISA when that path
// is supported (tests force each path with it). Decided once per process.
Isa selected_isa();

struct Kernels {
    Isa isa;
    // y[r] += sum_c W[r][c] * x[c] for r < rows, c < cols, where W is a tile payload of the
    // given dtype (layout in cflow_layout.h). x: [cols] f32, y: [rows] f32.
    void (*tile_matvec)(DType dtype, const uint8_t* payload, uint32_t rows, uint32_t cols, const float* x, float* y);
    // sum_i a[i] * b[i]
    float (*dot)(const float* a, const float* b, size_t n);
    // y[i] += alpha * x[i]
    void (*axpy)(float alpha, const float* x, float* y, size_t n);
};

const Kernels& kernels_for(Isa isa);  // isa must be supported
const Kernels& active_kernels();      // kernels_for(selected_isa())

} // namespace cflow
