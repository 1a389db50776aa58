#pragma once
// Test inputs for the int8 tile kernels: random Q4_0 / Q8_0 tile payloads and the aligned
// quantized-slice buffers the engine hands them (shared by lanes_layout_test.cpp and amx_test.cpp).
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "cflow/engine/kernels/kernels.h"
#include "cflow/formats/tile_codec.h"
#include "cflow/formats/tile_plan.h"

namespace cflow::test {

// Random blocks with finite f16 scales in [2^-10, 2): the payload of a (rows x cols) tile.
inline std::vector<uint8_t> random_quantized_tile(DType dtype, uint32_t rows, uint32_t cols, std::mt19937& rng) {
    std::vector<uint8_t> payload(tile_payload_bytes(dtype, rows, cols));
    std::uniform_int_distribution<int> byte(0, 255);
    for (uint8_t& b : payload) b = static_cast<uint8_t>(byte(rng));
    std::uniform_int_distribution<int> scale(1, 2048);
    for (size_t k = 0; k < size_t(rows) * groups_per_row(cols); ++k) {
        const uint16_t h = f32_to_f16(static_cast<float>(scale(rng)) / 1024.0f);
        std::memcpy(payload.data() + 2 * k, &h, 2);
    }
    return payload;
}

// `count` quantized slices of kQuantizedSliceBytes each, kQuantizedSliceAlign-aligned as the
// session's slice buffers are. slice(i): [kQuantizedSliceBytes].
class QuantizedSlices {
public:
    explicit QuantizedSlices(size_t count) : bytes_(count * kQuantizedSliceBytes + kQuantizedSliceAlign) {
        const auto at = reinterpret_cast<uintptr_t>(bytes_.data());
        first_ = bytes_.data() + (kQuantizedSliceAlign - at % kQuantizedSliceAlign) % kQuantizedSliceAlign;
    }
    uint8_t* slice(size_t i) { return first_ + i * kQuantizedSliceBytes; }
    uint8_t* data() { return first_; }

private:
    std::vector<uint8_t> bytes_;
    uint8_t* first_ = nullptr;
};

} // namespace cflow::test
