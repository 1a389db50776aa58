// dequantize_ggml_row (formats/src/ggml_dequant.cpp) against the independent float64 numpy
// decoder (tests/reference/ggml_blocks_reference.py) on the block fixtures of
// make_ggml_fixtures.py: every type, every edge case, row by row.
//
// Tolerance: none. ggml's dequantisation is f16/f32 scale times small integers, where every
// product is exact in f32 and at most one final operation rounds; the reference computes the
// same formula exactly in float64, and rounding that to f32 is the correctly rounded result
// (double rounding through float64's 53 bits cannot differ for one operation on f32 inputs,
// 53 >= 2 * 24 + 2). So the C++ values must equal float(reference) (compared with ==, which
// also lets -0 equal +0, a sign the two evaluation orders may pick differently).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cflow/formats/ggml_blocks.h"
#include "ggml_fixtures.h"

namespace cflow {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<double> read_f64(const fs::path& path) {
    const std::vector<uint8_t> bytes = read_file(path);
    std::vector<double> out(bytes.size() / 8);
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * 8);
    return out;
}

struct TypeStats {
    size_t cases = 0, values = 0, mismatches = 0;
    double max_abs_vs_f64 = 0;  // |C++ f32 - float64 reference|: the f32 rounding of the exact value
    double max_rel_vs_f64 = 0;
};

TEST(GgmlDequantParity, EveryTypeAndEdgeCaseEqualsTheFloat64Reference) {
    CFLOW_REQUIRE_GGML_FIXTURE("blocks/index.json");
    const fs::path dir = test::ggml_fixtures_dir() / "blocks";
    std::ifstream in(dir / "index.json");
    const nlohmann::json index = nlohmann::json::parse(in);
    ASSERT_FALSE(index.empty());
    std::map<std::string, TypeStats> stats;
    for (const auto& entry : index) {
        const std::string type = entry.at("type").get<std::string>();
        const std::string label = type + " " + entry.at("case").get<std::string>();
        const auto code = entry.at("ggml_type").get<uint32_t>();
        const auto rows = entry.at("rows").get<uint64_t>();
        const auto row_elements = entry.at("row_elements").get<uint64_t>();
        const GgmlBlockType* block = find_ggml_block_type(code);
        ASSERT_NE(block, nullptr) << label << ": ggml type " << code << " is not in ggml_block_types()";
        EXPECT_EQ(block->name, type) << label;
        ASSERT_EQ(row_elements % block->block_elements, 0u) << label;
        const uint64_t row_bytes = row_elements / block->block_elements * block->block_bytes;

        const std::vector<uint8_t> raw = read_file(dir / entry.at("blocks").get<std::string>());
        const std::vector<double> want = read_f64(dir / entry.at("values").get<std::string>());
        ASSERT_EQ(raw.size(), rows * row_bytes) << label << ": block bytes (the two tables disagree on block size)";
        ASSERT_EQ(want.size(), rows * row_elements) << label;

        TypeStats& st = stats[type];
        ++st.cases;
        std::vector<float> got(row_elements);
        for (uint64_t r = 0; r < rows; ++r) {
            dequantize_ggml_row(code, raw.data() + r * row_bytes, row_elements, got.data());
            for (uint64_t i = 0; i < row_elements; ++i) {
                const double w = want[r * row_elements + i];
                const float g = got[i];
                ++st.values;
                if (g != static_cast<float>(w)) {
                    if (++st.mismatches <= 5)
                        ADD_FAILURE() << label << ", row " << r << ", element " << i << ": C++ " << g
                                      << ", reference " << w << " (as f32 " << static_cast<float>(w) << ")";
                }
                const double abs_err = std::abs(static_cast<double>(g) - w);
                st.max_abs_vs_f64 = std::max(st.max_abs_vs_f64, abs_err);
                if (w != 0) st.max_rel_vs_f64 = std::max(st.max_rel_vs_f64, abs_err / std::abs(w));
            }
        }
    }
    for (const auto& [type, st] : stats) {
        std::printf("[ggml dequant] %-6s %zu cases, %6zu values, %zu differ from float(reference); vs float64: max abs "
                    "%.3g, max rel %.3g\n",
                    type.c_str(), st.cases, st.values, st.mismatches, st.max_abs_vs_f64, st.max_rel_vs_f64);
        EXPECT_EQ(st.mismatches, 0u) << type;
        EXPECT_LE(st.max_rel_vs_f64, std::ldexp(1.0, -24)) << type << ": more than f32's half-ulp rounding";
    }
    // Every block type the reader accepts (F32/F16/BF16 aside) has fixtures.
    for (const GgmlBlockType& t : ggml_block_types()) {
        if (t.block_elements > 1) {
            EXPECT_TRUE(stats.count(std::string(t.name))) << t.name << " has no fixture";
        }
    }
}

} // namespace
} // namespace cflow
