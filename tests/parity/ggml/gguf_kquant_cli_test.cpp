// The acceptance check through the user's tools: the Q4_K_M-like llama GGUF
// (make_ggml_fixtures.py) converted by `cflow convert --quant f32`, and the last position's
// logits from `cflow logits --ids ... --isa scalar --out FILE.f32`, against the float64
// reference forward pass over the GGUF's dequantised weights: relative L2 <= 1e-4.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ggml_fixtures.h"
#include "test_support.h"

#ifdef CFLOW_CLI_PATH
namespace cflow {
namespace {

namespace fs = std::filesystem;
constexpr double kCliLogitRelTolerance = 1e-4;

int run(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()); }

TEST(GgufKQuantCli, ConvertThenLogitsMatchesTheFloat64Reference) {
    const fs::path fixtures = test::ggml_fixtures_dir();
    const fs::path gguf = fixtures / "llama_kquant/model.gguf";
    if (fixtures.empty() || !fs::exists(gguf)) GTEST_SKIP() << "the ggml fixtures were not generated (needs /usr/bin/python3 with torch)";
    std::ifstream in(fixtures / "llama_kquant/reference.json");
    const auto reference = nlohmann::json::parse(in);
    const auto tokens = reference.at("tokens").get<std::vector<int32_t>>();
    const auto want = reference.at("logits").back().get<std::vector<double>>();  // [vocab], after the last token

    const fs::path dir = test::temp_dir("gguf-kquant-cli");
    const std::string cli = std::string("'") + CFLOW_CLI_PATH + "'";
    const fs::path model = dir / "model.f32.cflow", out = dir / "logits.f32";
    ASSERT_EQ(run(cli + " convert '" + gguf.string() + "' -o '" + model.string() + "' --quant f32 --embedding-quant f32 --quiet"), 0);
    std::string ids;
    for (int32_t t : tokens) ids += (ids.empty() ? "" : " ") + std::to_string(t);
    ASSERT_EQ(run(cli + " logits '" + model.string() + "' --ids '" + ids + "' --isa scalar --out '" + out.string() + "'"), 0);

    std::ifstream raw(out, std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(raw), std::istreambuf_iterator<char>()};
    ASSERT_EQ(bytes.size(), want.size() * sizeof(float));
    std::vector<float> got(want.size());
    std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(got.data()));
    double diff = 0, norm = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        norm += want[i] * want[i];
    }
    const double rel_l2 = std::sqrt(diff / norm);
    std::printf("[gguf-kquant-cli] cflow logits vs float64 reference: relative L2 %.3g (tolerance %.0e)\n", rel_l2,
                kCliLogitRelTolerance);
    EXPECT_LE(rel_l2, kCliLogitRelTolerance);
}

// `cflow convert` with no quant option keeps a GGUF's own types: the Q4_K_M mix lands as Q4_K and
// Q6_K tiles (inspect shows them part by part), with the same 1e-4 agreement as the F32 route.
TEST(GgufKQuantCli, DefaultConvertKeepsTheKQuantMix) {
    const fs::path fixtures = test::ggml_fixtures_dir();
    const fs::path gguf = fixtures / "llama_kquant/model.gguf";
    if (fixtures.empty() || !fs::exists(gguf)) GTEST_SKIP() << "the ggml fixtures were not generated (needs /usr/bin/python3 with torch)";
    std::ifstream in(fixtures / "llama_kquant/reference.json");
    const auto reference = nlohmann::json::parse(in);
    const auto tokens = reference.at("tokens").get<std::vector<int32_t>>();
    const auto want = reference.at("logits").back().get<std::vector<double>>();

    const fs::path dir = test::temp_dir("gguf-kquant-cli-kept");
    const std::string cli = std::string("'") + CFLOW_CLI_PATH + "'";
    const fs::path model = dir / "model.cflow", out = dir / "logits.f32", inspect = dir / "inspect.json";
    ASSERT_EQ(run(cli + " convert '" + gguf.string() + "' -o '" + model.string() + "' --quiet"), 0);
    ASSERT_EQ(std::system((cli + " inspect --json '" + model.string() + "' > '" + inspect.string() + "'").c_str()), 0);
    std::ifstream inspected(inspect);
    const auto j = nlohmann::json::parse(inspected);
    std::vector<std::string> qkv_types;
    for (const auto& seg : j.at("layers").at(0).at("segments"))
        if (seg.at("role") == "qkv")
            for (const auto& part : seg.at("parts")) qkv_types.push_back(part.at("dtype").get<std::string>());
    EXPECT_EQ(qkv_types, (std::vector<std::string>{"q4_k", "q4_k", "q6_k"}));

    std::string ids;
    for (int32_t t : tokens) ids += (ids.empty() ? "" : " ") + std::to_string(t);
    ASSERT_EQ(run(cli + " logits '" + model.string() + "' --ids '" + ids + "' --isa scalar --out '" + out.string() + "'"), 0);
    std::ifstream raw(out, std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(raw), std::istreambuf_iterator<char>()};
    ASSERT_EQ(bytes.size(), want.size() * sizeof(float));
    std::vector<float> got(want.size());
    std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(got.data()));
    double diff = 0, norm = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        norm += want[i] * want[i];
    }
    const double rel_l2 = std::sqrt(diff / norm);
    std::printf("[gguf-kquant-cli] kept-types conversion vs float64 reference: relative L2 %.3g\n", rel_l2);
    EXPECT_LE(rel_l2, kCliLogitRelTolerance);
}

} // namespace
} // namespace cflow
#endif
