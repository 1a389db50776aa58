// `cflow bench --json`: one JSON object on one line with the figures BENCHMARKS.md is built
// from, consistent with each other (bytes per token match the model's streams, the bandwidth
// ratio is achieved over probed); no timing is asserted (these machines are shared and noisy).
#include <vector>

#include <nlohmann/json.hpp>

#include "cflow/engine/kernels/kernels.h"
#include "cflow/formats/converter.h"
#include "cli_runner.h"
#include "json_lines.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

std::string bench_model() {
    SyntheticSpec spec;
    spec.dtype = DType::Q8_0;
    auto source = make_synthetic_model(spec);
    const auto model = (temp_dir("bench_cli") / "m.cflow").string();
    ConvertOptions options;
    options.weight_quant = DType::Q4_0;
    EXPECT_TRUE(convert_to_cflow(source, model, options).ok());
    return model;
}

TEST(BenchCli, JsonHasEveryFigureOnOneLine) {
    const std::string model = bench_model();
    auto r = run_cflow({"bench", model, "--threads", "1", "--tokens", "4", "--prompt-tokens", "5", "--warmup", "1", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    for (const char* key : {"prefill_tokens_per_second", "decode_tokens_per_second", "decode_bytes_per_token",
                            "read_bandwidth_bytes_per_second", "peak_rss_bytes", "decode_bandwidth_ratio"}) {
        ASSERT_TRUE(j.contains(key)) << key;
        EXPECT_GT(j[key].get<double>(), 0.0) << key;
    }
    EXPECT_EQ(j["threads"], 1);
    EXPECT_EQ(j["prompt_tokens"], 5);
    EXPECT_EQ(j["isa"], std::string(isa_name(selected_isa())));
    const double ratio = j["decode_tokens_per_second"].get<double>() * j["decode_bytes_per_token"].get<double>() /
                         j["read_bandwidth_bytes_per_second"].get<double>();
    EXPECT_NEAR(j["decode_bandwidth_ratio"].get<double>(), ratio, 1e-9 * ratio);
    ASSERT_TRUE(j.contains("mapped"));
    EXPECT_DOUBLE_EQ(j["mapped"]["decode_bytes_per_token"].get<double>(), j["decode_bytes_per_token"].get<double>())
        << "the same model reads the same bytes per token from a mapping and from anonymous memory";
}

TEST(BenchCli, TextReportNamesPathAndRatios) {
    const std::string model = bench_model();
    auto r = run_cflow({"bench", model, "--threads", "1", "--tokens", "2", "--prompt-tokens", "2", "--warmup", "0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("kernel path " + std::string(isa_name(selected_isa()))), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("ratio achieved/measured"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("peak resident memory"), std::string::npos) << r.out;
}

// The peak memory bench reports is its own: getrusage's maximum is kept across fork and exec, so
// a bench started by a process holding 1 GiB reported at least that (the test runner here; an
// IDE or a script for a user). The bench itself may hold a 256 MiB bandwidth probe buffer.
TEST(BenchCli, PeakMemoryIsTheCommandsOwnNotItsParents) {
#if !defined(__linux__)
    GTEST_SKIP() << "the parent's peak leaks into ru_maxrss through exec on Linux; elsewhere the OS reports its own";
#else
    const std::string model = bench_model();
    constexpr size_t kBallastBytes = size_t(1) << 30;
    std::vector<char> ballast(kBallastBytes);
    for (size_t i = 0; i < ballast.size(); i += 4096) ballast[i] = char(i);  // resident, not only reserved
    auto r = run_cflow({"bench", model, "--threads", "1", "--tokens", "2", "--prompt-tokens", "2", "--warmup", "0", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    const double peak = j["peak_rss_bytes"].get<double>();
    EXPECT_GT(peak, 0.0);
    EXPECT_LT(peak, double(kBallastBytes) * 0.75) << "bench reported its parent's peak";
    EXPECT_NE(ballast[4096], 1) << "keep the ballast alive";
#endif
}

// --kv-cache f16 reaches the session (the JSON names it) and generate takes the same option;
// a greedy story from the F16 cache is still a story (same length, non-empty).
TEST(BenchCli, KvCacheOptionReachesTheSession) {
    const std::string model = bench_model();
    auto r = run_cflow({"bench", model, "--threads", "1", "--tokens", "2", "--prompt-tokens", "3", "--warmup", "0",
                        "--kv-cache", "f16", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["kv_cache"], "f16");
    auto g = run_cflow({"generate", model, "-p", "hello", "-n", "6", "--temp", "0", "--kv-cache", "f16", "--threads", "1"});
    ASSERT_EQ(g.exit_code, 0) << g.err;
    EXPECT_GT(g.out.size(), std::string("hello").size());
    expect_one_line_failure(run_cflow({"generate", model, "-p", "x", "--kv-cache", "q8"}), "--kv-cache must be 'f32' or 'f16'");
    expect_one_line_failure(run_cflow({"bench", model, "--kv-cache", "bf16"}), "--kv-cache must be 'f32' or 'f16'");
}

// Without --kv-cache, the commands a user runs (bench, generate) take the f16 cache and say so;
// --kv-cache f32 still gives the exact one.
TEST(BenchCli, TheKvCacheIsF16UnlessF32IsAsked) {
    const std::string model = bench_model();
    auto r = run_cflow({"bench", model, "--threads", "1", "--tokens", "2", "--prompt-tokens", "3", "--warmup", "0", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["kv_cache"], "f16");
    r = run_cflow({"bench", model, "--threads", "1", "--tokens", "2", "--prompt-tokens", "3", "--warmup", "0",
                   "--kv-cache", "f32", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["kv_cache"], "f32");
    auto g = run_cflow({"generate", model, "-p", "hello", "-n", "3", "--temp", "0", "--threads", "1"});
    ASSERT_EQ(g.exit_code, 0) << g.err;
    EXPECT_NE(g.err.find("| kv cache f16 |"), std::string::npos) << g.err;
    g = run_cflow({"generate", model, "-p", "hello", "-n", "3", "--temp", "0", "--threads", "1", "--kv-cache", "f32"});
    ASSERT_EQ(g.exit_code, 0) << g.err;
    EXPECT_NE(g.err.find("| kv cache f32 |"), std::string::npos) << g.err;
}

TEST(BenchCli, BadArgumentsFailOnOneLine) {
    expect_one_line_failure(run_cflow({"bench"}), "expected exactly one MODEL.cflow");
    expect_one_line_failure(run_cflow({"bench", "x.cflow", "--prompt-tokens", "0"}), "--prompt-tokens");
    expect_one_line_failure(run_cflow({"bench", "/nonexistent/m.cflow", "--tokens", "1"}), "/nonexistent/m.cflow");
}

} // namespace
} // namespace cflow::test

namespace cflow::test {
namespace {

// `cflow bench experts`: one JSON line per arm (mapped, sync, staged) with the figures the
// issue's table needs, the prediction on the staged line, and the same greedy tokens in all
// three arms (exit 0 only then). No timing is asserted.
TEST(BenchExpertsCli, OneLinePerArmWithThePredictionAndIdenticalOutputs) {
    const std::string model = write_synthetic_cflow(delayed_moe_spec(), temp_dir("bench_experts_cli") / "moe.cflow");
    if (HasFailure()) return;
    auto r = run_cflow({"bench", "experts", model, "--threads", "1", "--tokens", "6", "--rounds", "2", "--warmup", "1", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    auto lines = json_lines(r.out);
    ASSERT_EQ(lines.size(), 3u) << r.out;
    const char* arms[] = {"mapped", "sync", "staged"};
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(lines[i]["arm"], arms[i]);
        for (const char* key : {"tokens_per_second", "compute_ms_per_token", "io_ms_per_token", "stall_ms_per_token",
                                "expert_bytes_per_token"})
            ASSERT_TRUE(lines[i].contains(key)) << arms[i] << " " << key;
        EXPECT_GT(lines[i]["tokens_per_second"].get<double>(), 0.0);
        EXPECT_EQ(lines[i]["tokens"], 6);
        EXPECT_TRUE(lines[i]["outputs_identical"].get<bool>());
        EXPECT_EQ(lines[i]["expert_bytes_per_token"], lines[0]["expert_bytes_per_token"]) << "the same bytes in every arm";
    }
    EXPECT_EQ(lines[0]["stall_ms_per_token"].get<double>(), 0.0) << "the mapped arm never waits for a read";
    ASSERT_TRUE(lines[2].contains("predicted_speedup"));
    const double predicted = lines[2]["predicted_speedup"];
    EXPECT_GE(predicted, 1.0);
    EXPECT_LE(predicted, 2.0) << "(C+IO)/max(C,IO) is between 1 and 2";
    EXPECT_TRUE(lines[2].contains("measured_speedup"));
    EXPECT_TRUE(lines[2].contains("hidden_stall_share"));
    // The refined model's denominator max((1+tau)C, IO) is never below max(C, IO) for tau >= 0,
    // and recomputing it from the printed tax gives the printed prediction.
    ASSERT_TRUE(lines[2].contains("interference_tax"));
    ASSERT_TRUE(lines[2].contains("predicted_speedup_with_interference"));
    const double tau = lines[2]["interference_tax"];
    const double taxed = lines[2]["predicted_speedup_with_interference"];
    const double c = lines[0]["ms_per_token"], io = lines[2]["io_ms_per_token"];
    EXPECT_NEAR(taxed, (c + io) / std::max((1.0 + tau) * c, io), 1e-6 * taxed);
    if (tau >= 0) {
        EXPECT_LE(taxed, predicted + 1e-9);
    }
    EXPECT_FALSE(lines[1].contains("predicted_speedup"));

    auto dense = run_cflow({"bench", "experts", bench_model()});
    EXPECT_NE(dense.exit_code, 0);
    EXPECT_NE(dense.err.find("no experts"), std::string::npos) << dense.err;
}

} // namespace
} // namespace cflow::test
