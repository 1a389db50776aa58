// `cflow convert --preflight` and `--validate` on the real stories260K: the report without a
// byte written (exit 2 when blocked), per-class quantisation flags, and a validated conversion
// whose report files sit beside the model.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "test_support.h"

namespace cflow::test {
namespace {

namespace fs = std::filesystem;
constexpr const char* kGguf = "assets/models/llama2c-stories260K/stories260K.gguf";

TEST(ConvertPreflightCli, JsonReportAndNothingWritten) {
    CFLOW_REQUIRE_ASSET(gguf, kGguf);
    const fs::path out = temp_dir("cli-preflight") / "s.cflow";
    auto r = run_cflow({"convert", gguf.string(), "--preflight", "--json", "-o", out.string(), "--attention-quant", "q8_0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_FALSE(j["blocked"].get<bool>());
    EXPECT_EQ(j["architecture"], "llama");
    EXPECT_EQ(j["parameters_total"].get<uint64_t>(), 292800u);
    ASSERT_EQ(j["estimates"].size(), 5u);
    EXPECT_EQ(j["estimates"][4]["quant"], "chosen");
    EXPECT_GT(j["estimates"][4]["file_bytes"].get<uint64_t>(), j["estimates"][3]["file_bytes"].get<uint64_t>())
        << "q8_0 attention costs more than all-q4_0";
    EXPECT_GT(j["read_bandwidth_bytes_per_second"].get<double>(), 0.0);
    EXPECT_FALSE(fs::exists(out));
}

// stories260K's 64-wide rows cannot hold a 256-weight super-block: --quant q4_k falls back to
// q8_0 matrix by matrix, says so, and the model still loads and runs.
TEST(ConvertPreflightCli, KQuantTargetFallsBackWhereRowsAreNotWholeSuperBlocks) {
    CFLOW_REQUIRE_ASSET(gguf, kGguf);
    const fs::path out = temp_dir("cli-kquant-fallback") / "s.cflow";
    auto r = run_cflow({"convert", gguf.string(), "-o", out.string(), "--quant", "q4_k", "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("took q8_0 instead of a K-quant"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("64 inputs are not whole 256-weight super-blocks"), std::string::npos) << r.err;
    auto g = run_cflow({"generate", out.string(), "-p", "Once", "-n", "4", "--seed", "1"});
    EXPECT_EQ(g.exit_code, 0) << g.err;
}

TEST(ConvertPreflightCli, ABlockedSourceExitsTwoWithItsReason) {
    const fs::path dir = temp_dir("cli-preflight-blocked");
    std::ofstream(dir / "noise.gguf") << std::string(1000, 'x');
    auto r = run_cflow({"convert", (dir / "noise.gguf").string(), "--preflight"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.out.find("blocked: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("noise.gguf"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("verdict: cannot convert"), std::string::npos) << r.out;
}

TEST(ConvertPreflightCli, ValidateWritesTheReportBesideTheModel) {
    CFLOW_REQUIRE_ASSET(gguf, kGguf);
    const fs::path out = temp_dir("cli-validate") / "s.cflow";
    auto r = run_cflow({"convert", gguf.string(), "-o", out.string(), "--quant", "q8_0", "--validate", "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("verdict: pass"), std::string::npos) << r.out;
    ASSERT_TRUE(fs::exists(out.string() + ".report.json"));
    ASSERT_TRUE(fs::exists(out.string() + ".report.md"));
    std::ifstream in(out.string() + ".report.json");
    const auto j = nlohmann::json::parse(in);
    EXPECT_EQ(j["validation"]["verdict"], "pass");
    EXPECT_EQ(j["file_bytes"].get<uint64_t>(), fs::file_size(out));
}

TEST(ConvertPreflightCli, BadFlagsFailWithOneLine) {
    CFLOW_REQUIRE_ASSET(gguf, kGguf);
    const fs::path out = temp_dir("cli-convert-flags") / "s.cflow";
    expect_one_line_failure(run_cflow({"convert", gguf.string(), "-o", out.string(), "--attention-quant", "q9"}),
                            "--attention-quant must be q4_k, q5_k, q6_k, q4_0, q8_0, f16 or f32");
    expect_one_line_failure(run_cflow({"convert", gguf.string(), "-o", out.string(), "--sample", "x.txt"}),
                            "--sample goes with --validate");
    expect_one_line_failure(run_cflow({"convert", gguf.string(), "-o", out.string(), "--json"}), "--json goes with --preflight");
    EXPECT_FALSE(fs::exists(out));
}

} // namespace
} // namespace cflow::test
