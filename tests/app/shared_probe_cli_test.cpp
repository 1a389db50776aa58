// `cflow bench` and `cflow convert --preflight` print the one shared read-bandwidth figure
// (issue 37): with a fresh record stored for this machine, both print it, word for word, and
// measure nothing; without one, bench measures once, says why on stderr, and the preflight
// then prints what bench stored.
#include <chrono>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "cflow/engine/io/bandwidth_probe_cache.h"
#include "cflow/formats/converter.h"
#include "cli_runner.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

// XDG_CACHE_HOME of this process (and of the commands it runs) points at a fresh folder.
struct SharedProbeCliCache {
    explicit SharedProbeCliCache(const std::string& name) {
        const char* old = std::getenv("XDG_CACHE_HOME");
        had = old != nullptr;
        if (old) previous = old;
        setenv("XDG_CACHE_HOME", temp_dir("shared_probe_cli_" + name).string().c_str(), 1);
    }
    ~SharedProbeCliCache() {
        if (had) setenv("XDG_CACHE_HOME", previous.c_str(), 1);
        else unsetenv("XDG_CACHE_HOME");
    }
    bool had = false;
    std::string previous;
};

std::string shared_probe_cli_model() {
    SyntheticSpec spec;
    spec.dtype = DType::Q8_0;
    const auto model = (temp_dir("shared_probe_cli") / "m.cflow").string();
    ConvertOptions options;
    options.weight_quant = DType::Q4_0;
    EXPECT_TRUE(convert_to_cflow(make_synthetic_model(spec), model, options).ok());
    return model;
}

StoredBandwidthProbe shared_probe_cli_record(unsigned threads) {
    StoredBandwidthProbe p;
    p.result.bytesPerSecond = 23.456e9;  // no measurement gives exactly this
    p.result.bufferBytes = 256ull << 20;
    p.result.threads = threads;
    p.passes = 5;
    p.method = kBandwidthProbeMethod;
    p.cpuModel = this_cpu_model();
    p.logicalCpus = bandwidth_probe_threads(0);
    p.measuredAtUnixSeconds =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count() - 60;
    return p;
}

TEST(SharedProbeCli, BenchAndThePreflightPrintTheStoredFigure) {
    CFLOW_REQUIRE_ASSET(gguf, "assets/models/llama2c-stories260K/stories260K.gguf");
    SharedProbeCliCache cache("stored");
    const StoredBandwidthProbe stored = shared_probe_cli_record(1);
    ASSERT_TRUE(store_shared_bandwidth_probe(default_bandwidth_probe_path(), stored).ok());
    const std::string line = shared_probe_text(stored);

    const std::string model = shared_probe_cli_model();
    auto bench = run_cflow({"bench", model, "--threads", "1", "--tokens", "2", "--prompt-tokens", "2", "--warmup", "0", "--json"});
    ASSERT_EQ(bench.exit_code, 0) << bench.err;
    const auto j = nlohmann::json::parse(bench.out);
    EXPECT_DOUBLE_EQ(j["read_bandwidth_bytes_per_second"].get<double>(), 23.456e9);
    EXPECT_EQ(j["read_bandwidth_source"], line);
    EXPECT_EQ(bench.err.find("measured the read bandwidth"), std::string::npos) << bench.err;

    auto text = run_cflow({"bench", model, "--threads", "1", "--tokens", "2", "--prompt-tokens", "2", "--warmup", "0"});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("read bandwidth: " + line), std::string::npos) << text.out;

    auto preflight = run_cflow({"convert", gguf.string(), "--preflight", "--threads", "1"});
    ASSERT_EQ(preflight.exit_code, 0) << preflight.err;
    EXPECT_NE(preflight.out.find("read bandwidth: " + line), std::string::npos) << preflight.out;
}

TEST(SharedProbeCli, WithoutAStoredFigureBenchMeasuresOnceAndThePreflightPrintsIt) {
    CFLOW_REQUIRE_ASSET(gguf, "assets/models/llama2c-stories260K/stories260K.gguf");
    SharedProbeCliCache cache("missing");
    const std::string model = shared_probe_cli_model();
    auto bench = run_cflow({"bench", model, "--threads", "1", "--tokens", "2", "--prompt-tokens", "2", "--warmup", "0", "--json"});
    ASSERT_EQ(bench.exit_code, 0) << bench.err;
    EXPECT_NE(bench.err.find("measured the read bandwidth (no shared probe at " + default_bandwidth_probe_path() + ")"),
              std::string::npos)
        << bench.err;
    const auto j = nlohmann::json::parse(bench.out);
    auto preflight = run_cflow({"convert", gguf.string(), "--preflight", "--threads", "1", "--json"});
    ASSERT_EQ(preflight.exit_code, 0) << preflight.err;
    const auto p = nlohmann::json::parse(preflight.out);
    EXPECT_DOUBLE_EQ(p["read_bandwidth_bytes_per_second"].get<double>(), j["read_bandwidth_bytes_per_second"].get<double>());
    EXPECT_EQ(p["read_bandwidth_source"], j["read_bandwidth_source"]);
}

} // namespace
} // namespace cflow::test
