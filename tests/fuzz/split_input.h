#pragma once
// Targets whose readers take two files (config.json + weights, checkpoint + tokenizer) read
// one input as [u16 little-endian length L][L bytes: first file][rest: second file], so the
// fuzzer mutates both and their sizes independently.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace cflow::fuzz {

struct SplitInput {
    const uint8_t* first = nullptr;
    size_t first_size = 0;
    const uint8_t* second = nullptr;
    size_t second_size = 0;
};

inline SplitInput split_input(const uint8_t* data, size_t size) {
    SplitInput s;
    if (size < 2) {
        s.second = data;
        s.second_size = size;
        return s;
    }
    const size_t declared = static_cast<size_t>(data[0]) | (static_cast<size_t>(data[1]) << 8);
    const size_t first = std::min(declared, size - 2);
    s.first = data + 2;
    s.first_size = first;
    s.second = data + 2 + first;
    s.second_size = size - 2 - first;
    return s;
}

} // namespace cflow::fuzz
