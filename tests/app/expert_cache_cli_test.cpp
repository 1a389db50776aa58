// --cache-mib M|fit: bench experts reports the cache's figures per arm, generate --stats the
// per-token counters, and bad values fail with one line naming the option. No timing is asserted.
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "json_lines.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

// The model in `dir` (temp_dir() empties a directory: call it once per test).
std::string moe_model(const std::filesystem::path& dir) {
    SyntheticSpec spec = delayed_moe_spec();
    spec.router_skew = 4.0f;
    return write_synthetic_cflow(spec, dir / "moe.cflow");
}

TEST(ExpertCacheCli, BenchExpertsJsonCarriesTheCacheFigures) {
    const std::string model = moe_model(temp_dir("cache_cli_bench"));
    for (const char* size : {"1", "fit"}) {
        SCOPED_TRACE(size);
        auto r = run_cflow({"bench", "experts", model, "--threads", "1", "--tokens", "6", "--rounds", "2", "--warmup",
                            "1", "--cache-mib", size, "--json"});
        ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
        const auto lines = json_lines(r.out);
        ASSERT_EQ(lines.size(), 3u) << r.out;
        for (const auto& line : lines) {
            for (const char* key : {"cache_mib", "cache_hit_rate", "expert_bytes_read_per_token", "expert_bytes_saved_per_token"})
                ASSERT_TRUE(line.contains(key)) << line["arm"] << " " << key;
            const double hit_rate = line["cache_hit_rate"];
            EXPECT_GE(hit_rate, 0.0);
            EXPECT_LE(hit_rate, 1.0);
            EXPECT_TRUE(line["outputs_identical"].get<bool>());
            const double read = line["expert_bytes_read_per_token"], saved = line["expert_bytes_saved_per_token"];
            if (line["arm"] == "mapped") {
                EXPECT_EQ(line["cache_mib"].get<double>(), 0.0) << "the page cache is the mapped arm's cache";
                EXPECT_EQ(read + saved, 0.0);
            } else {
                // Every routed expert is served from the cache or read: together, the expert bytes.
                EXPECT_DOUBLE_EQ(read + saved, line["expert_bytes_per_token"].get<double>());
                if (std::string(size) == "1") {
                    EXPECT_EQ(line["cache_mib"].get<double>(), 1.0);
                }
            }
        }
        // 1 MiB holds this model's whole bank (4 layers x 8 small experts): after warm-up, hits.
        if (std::string(size) == "1") {
            EXPECT_GT(lines[1]["cache_hit_rate"].get<double>(), 0.0);
        }
    }
}

TEST(ExpertCacheCli, GenerateStatsCountHitsAndBytes) {
    const auto dir = temp_dir("cache_cli_generate");
    const std::string model = moe_model(dir);
    const auto trace = (dir / "trace.jsonl").string();
    auto r = run_cflow({"generate", model, "-p", "ab", "-n", "8", "--temp", "0", "--expert-fetch", "staged", "--cache-mib",
                        "1", "--stats", "--telemetry-file", trace});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::ifstream in(trace);
    std::string text;
    uint64_t hits = 0;
    int steps = 0;
    while (std::getline(in, text)) {
        const auto j = nlohmann::json::parse(text);
        for (const char* key : {"expertCacheHits", "expertCacheMisses", "expertBytesSaved", "expertBytesFromDisk"})
            ASSERT_TRUE(j.contains(key)) << key;
        EXPECT_EQ(j["expertCacheHits"].get<uint64_t>() + j["expertCacheMisses"].get<uint64_t>(), 4u * 2u);
        hits += j["expertCacheHits"].get<uint64_t>();
        ++steps;
    }
    EXPECT_GE(steps, 8);
    EXPECT_GT(hits, 0u);
}

TEST(ExpertCacheCli, BadSizesFailWithOneLine) {
    const std::string model = moe_model(temp_dir("cache_cli_bad"));
    for (const char* bad : {"-3", "abc", "1.5", ""}) {
        SCOPED_TRACE(bad);
        expect_one_line_failure(run_cflow({"bench", "experts", model, "--cache-mib", bad}), "--cache-mib");
        expect_one_line_failure(run_cflow({"generate", model, "-p", "a", "-n", "1", "--expert-fetch", "sync", "--cache-mib", bad}),
                                "--cache-mib");
        expect_one_line_failure(run_cflow_with_input({"chat", model, "--cache-mib", bad}, "hi\n"), "--cache-mib");
        // Refused before the server binds a port (serve would otherwise run until Ctrl-C).
        expect_one_line_failure(run_cflow({"serve", model, "--port", "0", "--expert-fetch", "staged", "--cache-mib", bad}),
                                "--cache-mib");
    }
    expect_one_line_failure(run_cflow({"serve", model, "--port", "0", "--expert-fetch", "paged"}), "--expert-fetch");
    expect_one_line_failure(run_cflow({"serve", model, "--port", "0", "--cache-mib", "4"}), "--expert-fetch");
    // A cache for the mapped arm would go unused: said, not ignored.
    expect_one_line_failure(run_cflow({"generate", model, "-p", "a", "-n", "1", "--cache-mib", "4"}), "--expert-fetch");
}

} // namespace
} // namespace cflow::test
