// `cflow generate --stats --trace-experts` writes one JSON line per forward step with the
// engine's telemetry records: bytes per stream, timings, chosen experts.
#include <nlohmann/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#if defined(__linux__)
#include <sys/resource.h>

#include <csignal>
#endif

#include "cflow/formats/converter.h"
#include "cli_runner.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

TEST(TelemetryCli, StatsAndExpertTraceAreJsonLinesPerStep) {
    SyntheticSpec spec;
    spec.n_layers = 4;
    spec.n_experts = 8;
    spec.top_k = 2;
    spec.expert_d_ff = 32;
    spec.combine_style = CombineStyle::DelayedSum;
    spec.dense_delay = 1;
    spec.expert_delay = 2;
    auto source = make_synthetic_model(spec);
    const auto dir = temp_dir("telemetry");
    const auto model = (dir / "moe.cflow").string();
    ConvertOptions options;
    options.weight_quant = DType::Q8_0;
    ASSERT_TRUE(convert_to_cflow(source, model, options).ok());
    const auto trace = (dir / "trace.jsonl").string();
    auto r = run_cflow({"generate", model, "-p", "ab", "-n", "5", "--temp", "0", "--stats", "--trace-experts",
                        "--telemetry-file", trace, "--no-stats"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::ifstream in(trace);
    std::string line;
    int steps = 0;
    while (std::getline(in, line)) {
        auto j = nlohmann::json::parse(line);
        ASSERT_EQ(j["layers"].size(), spec.n_layers);
        for (const auto& l : j["layers"]) {
            ASSERT_EQ(l["experts"].size(), spec.top_k);
            const int layer = l["layer"];
            EXPECT_EQ(l["injectionLayer"], std::min(layer + 2, int(spec.n_layers) - 1));
            EXPECT_GT(l["bytesRead"]["attentionBytes"].get<uint64_t>(), 0u);
            EXPECT_GT(l["bytesRead"]["routerBytes"].get<uint64_t>(), 0u);
            EXPECT_GE(l["computeUs"].get<double>(), 0.0);
            double weight_sum = 0;
            for (const auto& w : l["expertWeights"]) weight_sum += w.get<double>();
            EXPECT_NEAR(weight_sum, 1.0, 1e-5);  // softmax over the selected logits
        }
        // Layers 0 and 1 inject nothing (their experts land at 2 and 3): no expert bytes there.
        EXPECT_EQ(j["layers"][0]["bytesRead"]["expertBytes"], 0);
        EXPECT_EQ(j["layers"][1]["bytesRead"]["expertBytes"], 0);
        EXPECT_GT(j["layers"][3]["bytesRead"]["expertBytes"].get<uint64_t>(), 0u);
        ++steps;
    }
    // BOS + 2 prompt tokens... the prompt's ids plus 5 generated tokens.
    EXPECT_GE(steps, 6);
}

// A telemetry file that cannot be written (a full disk) is an error, not a silent exit 0.
TEST(TelemetryCli, UnwritableTelemetryFileFails) {
#if defined(__linux__)
    SyntheticSpec spec;
    auto source = make_synthetic_model(spec);
    const auto model = (temp_dir("telemetry_full") / "m.cflow").string();
    ConvertOptions options;
    options.weight_quant = DType::Q8_0;
    ASSERT_TRUE(convert_to_cflow(source, model, options).ok());
    auto r = run_cflow({"generate", model, "-p", "ab", "-n", "40", "--temp", "0", "--stats", "--telemetry-file", "/dev/full"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("/dev/full: writing the telemetry failed"), std::string::npos) << r.err;
#else
    GTEST_SKIP() << "needs /dev/full";
#endif
}

// Issue 38: a full disk left a 0-byte telemetry file where the previous run's was. The file is
// now written beside the target and renamed at the end; a failed write keeps the old file. The
// disk fills through RLIMIT_FSIZE (inherited by the child; SIGXFSZ ignored so writes fail).
TEST(TelemetryCli, AFullDiskKeepsThePreviousTelemetryFile) {
#if defined(__linux__)
    SyntheticSpec spec;
    auto source = make_synthetic_model(spec);
    const auto dir = temp_dir("telemetry_full_disk");
    const auto model = (dir / "m.cflow").string();
    ConvertOptions options;
    options.weight_quant = DType::Q8_0;
    ASSERT_TRUE(convert_to_cflow(source, model, options).ok());
    const auto telemetry = dir / "steps.jsonl";
    std::ofstream(telemetry) << "the previous run\n";

    rlimit previous{};
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &previous), 0);
    rlimit small = previous;
    small.rlim_cur = 4096;
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
    auto r = run_cflow({"generate", model, "-p", "ab", "-n", "60", "--temp", "0", "--stats", "--telemetry-file",
                        telemetry.string()});
    setrlimit(RLIMIT_FSIZE, &previous);
    std::signal(SIGXFSZ, old_handler);

    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("writing the telemetry failed (disk full?), " + telemetry.string() + " is as it was"),
              std::string::npos)
        << r.err;
    std::ifstream kept(telemetry);
    std::stringstream text;
    text << kept.rdbuf();
    EXPECT_EQ(text.str(), "the previous run\n");
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << "left behind: " << entry.path();

    // With room, the same command replaces the file with this run's lines.
    auto ok = run_cflow({"generate", model, "-p", "ab", "-n", "60", "--temp", "0", "--stats", "--telemetry-file",
                         telemetry.string()});
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
    std::ifstream written(telemetry);
    std::string first;
    std::getline(written, first);
    EXPECT_TRUE(nlohmann::json::parse(first).contains("layers")) << first;
#else
    GTEST_SKIP() << "needs RLIMIT_FSIZE";
#endif
}

} // namespace
} // namespace cflow::test
