#include "cflow/formats/dtype.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace cflow {

namespace {
constexpr std::array<std::string_view, 17> kNames = {"f32",  "f16",  "q8_0", "q4_0",   "bf16", "ggml", "q4_k", "q5_k",
                                                    "q6_k", "q2_k", "q3_k", "iq4_xs", "q4_1", "q5_0", "q5_1", "iq4_nl", "mxfp4"};
}

std::string_view dtype_name(DType t) {
    auto i = static_cast<size_t>(t);
    return i < kNames.size() ? kNames[i] : std::string_view("unknown");
}

std::optional<DType> parse_dtype(std::string_view name) {
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    for (size_t i = 0; i < kNames.size(); ++i)
        if (lower == kNames[i]) return static_cast<DType>(i);
    return std::nullopt;
}

} // namespace cflow
