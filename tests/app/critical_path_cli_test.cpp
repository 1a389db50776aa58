// `cflow critical-path`: the paper's figures on the command line, JSON output, a .cflow file,
// and one-line failures for bad arguments.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cflow/formats/converter.h"
#include "cli_runner.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

const std::vector<std::string> kPaperGeometry = {"critical-path", "--d", "512", "--d-ff", "2048", "--layers", "6",
                                                 "--experts", "8", "--top-k", "2", "--expert-hidden", "512",
                                                 "--heads", "8", "--kv-heads", "8"};

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& extra) {
    base.insert(base.end(), extra.begin(), extra.end());
    return base;
}

TEST(CriticalPathCli, PaperGeometryPrintsNineFourPointFiveTwoX) {
    auto r = run_cflow(with(kPaperGeometry, {"--dense-delay", "1", "--expert-delay", "2"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("B_naive         9.00 MiB/token"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("B_critical      4.50 MiB/token"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("2.00x"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("note: "), std::string::npos) << r.out;
    EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(CriticalPathCli, UndelayedCandidatesStayAtNine) {
    for (const auto& delays : std::vector<std::vector<std::string>>{
             {}, {"--expert-delay", "2"}, {"--expert-delay", "2", "--combine-style", "AsyncExperts"}}) {
        auto r = run_cflow(with(kPaperGeometry, with(delays, {"--json"})));
        ASSERT_EQ(r.exit_code, 0) << r.err;
        auto j = nlohmann::json::parse(r.out);
        EXPECT_NEAR(j["ideal"]["b_critical_mib"].get<double>(), 9.0, 1e-12);
        EXPECT_NEAR(j["ideal"]["reduction"].get<double>(), 1.0, 1e-12);
    }
}

TEST(CriticalPathCli, JsonCarriesTotalsLayersAndNote) {
    auto r = run_cflow(with(kPaperGeometry, {"--dense-delay", "1", "--expert-delay", "2", "--json"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_DOUBLE_EQ(j["ideal"]["b_naive_mib"].get<double>(), 9.0);
    EXPECT_DOUBLE_EQ(j["ideal"]["b_critical_mib"].get<double>(), 4.5);
    EXPECT_DOUBLE_EQ(j["ideal"]["reduction"].get<double>(), 2.0);
    EXPECT_EQ(j["ideal"]["layers"].size(), 6u);
    EXPECT_DOUBLE_EQ(j["ideal"]["layers"][0]["dense_bytes"].get<double>(), 1.5 * 1024 * 1024);
    EXPECT_EQ(j["schedule"]["combine_style"], "DelayedSum");
    EXPECT_FALSE(j.contains("actual"));
    EXPECT_FALSE(j["note"].get<std::string>().empty());
}

TEST(CriticalPathCli, FixedPointStatesWhatItCounts) {
    auto r = run_cflow({"critical-path", "--d", "512", "--d-ff", "2048", "--heads", "8", "--blocks", "2", "--iters",
                        "3", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["schedule"]["passes"], 6);
    EXPECT_EQ(j["schedule"]["combine_style"], "FixedPoint");
    EXPECT_DOUBLE_EQ(j["ideal"]["b_critical_mib"].get<double>(), 9.0);
    EXPECT_DOUBLE_EQ(j["ideal"]["b_critical_unique_blocks_mib"].get<double>(), 3.0);
    EXPECT_NE(j["note"].get<std::string>().find("14.06"), std::string::npos);
    r = run_cflow({"critical-path", "--d", "512", "--d-ff", "2048", "--heads", "8", "--blocks", "2", "--iters", "3"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("each block streamed once: 3.00 MiB/token"), std::string::npos) << r.out;
}

TEST(CriticalPathCli, ModelFileReportsActualBytes) {
    SyntheticSpec spec;
    spec.n_experts = 4;
    spec.top_k = 2;
    spec.expert_d_ff = 32;
    spec.combine_style = CombineStyle::DelayedSum;
    spec.dense_delay = 1;
    spec.expert_delay = 1;
    const auto dir = temp_dir("critical_path_cli");
    const std::string model = (dir / "moe.cflow").string();
    ConvertOptions options;
    options.weight_quant = DType::F32;
    auto converted = convert_to_cflow(make_synthetic_model(spec), model, options);
    ASSERT_TRUE(converted.ok()) << converted.error();

    auto r = run_cflow({"critical-path", model, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["source"], model);
    ASSERT_TRUE(j.contains("actual"));
    EXPECT_EQ(j["actual"]["layers"].size(), spec.n_layers);
    EXPECT_GT(j["actual"]["b_critical_bytes"].get<double>(), 0.0);
    EXPECT_EQ(j["schedule"]["effective_dense_delay"], 1);

    r = run_cflow({"critical-path", model});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("actual segment bytes"), std::string::npos) << r.out;
}

TEST(CriticalPathCli, BadArgumentsFailWithOneLine) {
    expect_one_line_failure(run_cflow({"critical-path"}), "--d");
    expect_one_line_failure(run_cflow(with(kPaperGeometry, {"--top-k", "many"})), "--top-k");
    expect_one_line_failure(run_cflow(with(kPaperGeometry, {"--bogus"})), "--bogus");
    expect_one_line_failure(run_cflow(with(kPaperGeometry, {"--dense-delay", "6"})), "dense_delay");
    expect_one_line_failure(run_cflow(with(kPaperGeometry, {"--combine-style", "Diagonal"})), "--combine-style");
    expect_one_line_failure(run_cflow({"critical-path", "--d", "512", "--heads", "8", "--blocks", "2"}), "--iters");
    expect_one_line_failure(run_cflow({"critical-path", "--d", "100", "--heads", "8", "--layers", "2"}), "--head-dim");
    expect_one_line_failure(run_cflow({"critical-path", "/nonexistent/model.cflow"}), "/nonexistent/model.cflow");
    expect_one_line_failure(run_cflow({"critical-path", "/nonexistent/model.cflow", "--d", "512"}), "--d");
}

} // namespace
} // namespace cflow::test
