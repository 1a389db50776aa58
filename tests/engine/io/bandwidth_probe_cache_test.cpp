// The shared read-bandwidth figure (issue 37): a fresh record from this machine is used as it
// is; a stale one, one from another CPU, one measured another way or a damaged file is measured
// again with a reason for the log line, never a crash, and the file is rewritten whole.
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cflow/engine/forward/thread_pool.h"
#include "cflow/engine/io/bandwidth_probe_cache.h"
#include "test_support.h"

namespace cflow {
namespace {

namespace fs = std::filesystem;

int64_t probe_cache_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A record as this machine would have stored it; the figure is one no probe measures exactly.
StoredBandwidthProbe probe_cache_record(unsigned threads, int64_t measuredAt) {
    StoredBandwidthProbe p;
    p.result.bytesPerSecond = 12.345678e9;
    p.result.bufferBytes = 256ull << 20;
    p.result.threads = threads;
    p.passes = 5;
    p.method = kBandwidthProbeMethod;
    p.cpuModel = this_cpu_model();
    p.logicalCpus = bandwidth_probe_threads(0);
    p.measuredAtUnixSeconds = measuredAt;
    return p;
}

SharedProbeOptions probe_cache_small(const fs::path& file) {
    SharedProbeOptions o;
    o.path = file.string();
    o.bufferBytes = 8ull << 20;  // a real measurement, kept short
    o.passes = 2;
    return o;
}

std::string probe_cache_read(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void probe_cache_write(const fs::path& file, const std::string& text) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << text;
}

// The file holds a record for `threads` that this machine would reuse now.
void probe_cache_expect_fresh(const fs::path& file, unsigned threads) {
    auto stored = load_shared_bandwidth_probe(file.string(), threads, probe_cache_now(), 3600);
    ASSERT_TRUE(stored.ok()) << stored.error();
    EXPECT_GT(stored->result.bytesPerSecond, 1e8);
    EXPECT_NE(stored->result.bytesPerSecond, 12.345678e9) << "the old figure was kept";
}

TEST(BandwidthProbeCache, AFreshRecordFromThisMachineIsUsedWithoutMeasuring) {
    const fs::path file = test::temp_dir("probe-cache-fresh") / "read-bandwidth.json";
    ASSERT_TRUE(store_shared_bandwidth_probe(file.string(), probe_cache_record(2, probe_cache_now() - 60)).ok());
    ThreadPool pool(2);
    const SharedBandwidthProbe r = shared_read_bandwidth(pool, probe_cache_small(file));
    EXPECT_TRUE(r.reused);
    EXPECT_TRUE(r.remeasureReason.empty()) << r.remeasureReason;
    EXPECT_DOUBLE_EQ(r.probe.result.bytesPerSecond, 12.345678e9);
    EXPECT_EQ(r.probe.result.bufferBytes, 256ull << 20) << "the stored method, not this call's buffer";
    EXPECT_EQ(r.path, file.string());
}

TEST(BandwidthProbeCache, AStaleRecordIsMeasuredAgainAndReplaced) {
    const fs::path file = test::temp_dir("probe-cache-stale") / "read-bandwidth.json";
    ASSERT_TRUE(store_shared_bandwidth_probe(file.string(), probe_cache_record(2, probe_cache_now() - 40 * 86400)).ok());
    ThreadPool pool(2);
    const SharedBandwidthProbe r = shared_read_bandwidth(pool, probe_cache_small(file));
    EXPECT_FALSE(r.reused);
    EXPECT_NE(r.remeasureReason.find("days old"), std::string::npos) << r.remeasureReason;
    EXPECT_TRUE(r.storeError.empty()) << r.storeError;
    EXPECT_EQ(r.probe.result.threads, 2u);
    EXPECT_EQ(r.probe.result.bufferBytes, 8ull << 20);
    probe_cache_expect_fresh(file, 2);
}

TEST(BandwidthProbeCache, ARecordFromAnotherCpuIsMeasuredAgain) {
    const fs::path file = test::temp_dir("probe-cache-other-cpu") / "read-bandwidth.json";
    StoredBandwidthProbe other = probe_cache_record(2, probe_cache_now() - 60);
    other.cpuModel = "Imaginary CPU 9000 (not this one)";
    ASSERT_TRUE(store_shared_bandwidth_probe(file.string(), other).ok());
    ThreadPool pool(2);
    const SharedBandwidthProbe r = shared_read_bandwidth(pool, probe_cache_small(file));
    EXPECT_FALSE(r.reused);
    EXPECT_NE(r.remeasureReason.find("another machine"), std::string::npos) << r.remeasureReason;
    EXPECT_NE(r.remeasureReason.find("Imaginary CPU 9000"), std::string::npos) << r.remeasureReason;
    probe_cache_expect_fresh(file, 2);
    EXPECT_EQ(probe_cache_read(file).find("Imaginary"), std::string::npos) << "the other machine's record was dropped";
}

TEST(BandwidthProbeCache, ARecordMeasuredAnotherWayIsMeasuredAgain) {
    const fs::path file = test::temp_dir("probe-cache-method") / "read-bandwidth.json";
    StoredBandwidthProbe old = probe_cache_record(2, probe_cache_now() - 60);
    old.method = "selected kernel path only";  // the probe before it read with every vector width
    ASSERT_TRUE(store_shared_bandwidth_probe(file.string(), old).ok());
    ThreadPool pool(2);
    const SharedBandwidthProbe r = shared_read_bandwidth(pool, probe_cache_small(file));
    EXPECT_FALSE(r.reused);
    EXPECT_NE(r.remeasureReason.find("another way"), std::string::npos) << r.remeasureReason;
    probe_cache_expect_fresh(file, 2);
}

TEST(BandwidthProbeCache, ADamagedFileIsMeasuredAgainNeverACrash) {
    const fs::path dir = test::temp_dir("probe-cache-corrupt");
    const fs::path file = dir / "read-bandwidth.json";
    const struct {
        const char* name;
        std::string text;
        const char* reason;
    } cases[] = {
        {"cut short", "{\"format\": 1, \"probes\": [{\"threads\": 2, \"bytes_per", "not valid JSON"},
        {"binary", std::string("\x00\xff\xfe garbage", 12), "not valid JSON"},
        {"empty", "", "not valid JSON"},
        {"wrong format", "{\"format\": 7, \"probes\": []}", "format-1"},
        {"probes not a list", "{\"format\": 1, \"probes\": {\"threads\": 2}}", "format-1"},
        {"wrong field types", "{\"format\": 1, \"probes\": [{\"threads\": \"two\", \"bytes_per_second\": \"fast\"}]}",
         "damaged record"},
        {"negative threads", "{\"format\": 1, \"probes\": [{\"threads\": -2, \"bytes_per_second\": 1e9, \"buffer_bytes\": 1, "
                             "\"passes\": 1, \"method\": \"\", \"cpu_model\": \"\", \"logical_cpus\": 1, \"measured_at_unix\": 0}]}",
         "damaged record"},
        {"a JSON array", "[1, 2, 3]", "not valid JSON"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        probe_cache_write(file, c.text);
        ThreadPool pool(2);
        const SharedBandwidthProbe r = shared_read_bandwidth(pool, probe_cache_small(file));
        EXPECT_FALSE(r.reused);
        EXPECT_NE(r.remeasureReason.find(c.reason), std::string::npos) << r.remeasureReason;
        EXPECT_GT(r.probe.result.bytesPerSecond, 1e8);
        EXPECT_TRUE(r.storeError.empty()) << r.storeError;
        probe_cache_expect_fresh(file, 2);
    }
}

TEST(BandwidthProbeCache, AMissingFileIsMeasuredOnceThenReused) {
    const fs::path file = test::temp_dir("probe-cache-missing") / "nested" / "cflow" / "read-bandwidth.json";
    ThreadPool pool(2);
    const SharedBandwidthProbe first = shared_read_bandwidth(pool, probe_cache_small(file));
    EXPECT_FALSE(first.reused);
    EXPECT_NE(first.remeasureReason.find("no shared probe"), std::string::npos) << first.remeasureReason;
    const SharedBandwidthProbe second = shared_read_bandwidth(pool, probe_cache_small(file));
    EXPECT_TRUE(second.reused) << second.remeasureReason;
    EXPECT_DOUBLE_EQ(second.probe.result.bytesPerSecond, first.probe.result.bytesPerSecond);
    EXPECT_EQ(second.probe.measuredAtUnixSeconds, first.probe.measuredAtUnixSeconds);
    EXPECT_EQ(shared_probe_text(second.probe), shared_probe_text(first.probe));
}

TEST(BandwidthProbeCache, EachThreadCountHasItsOwnRecordAndMeasuringAgainReplacesOnlyItsOwn) {
    const fs::path file = test::temp_dir("probe-cache-threads") / "read-bandwidth.json";
    ASSERT_TRUE(store_shared_bandwidth_probe(file.string(), probe_cache_record(1, probe_cache_now() - 60)).ok());
    ASSERT_TRUE(store_shared_bandwidth_probe(file.string(), probe_cache_record(2, probe_cache_now() - 60)).ok());
    ThreadPool pool(2);
    SharedProbeOptions again = probe_cache_small(file);
    again.measureAgain = true;
    const SharedBandwidthProbe r = shared_read_bandwidth(pool, again);
    EXPECT_FALSE(r.reused);
    EXPECT_EQ(r.remeasureReason, "asked to measure again");
    probe_cache_expect_fresh(file, 2);
    auto one = load_shared_bandwidth_probe(file.string(), 1, probe_cache_now(), 3600);
    ASSERT_TRUE(one.ok()) << one.error();
    EXPECT_DOUBLE_EQ(one->result.bytesPerSecond, 12.345678e9) << "the 1-thread record stays";
    auto three = load_shared_bandwidth_probe(file.string(), 3, probe_cache_now(), 3600);
    ASSERT_FALSE(three.ok());
    EXPECT_NE(three.error().find("no figure for 3 threads"), std::string::npos) << three.error();
}

TEST(BandwidthProbeCache, ARecordFromTheFutureIsNotTrusted) {
    const fs::path file = test::temp_dir("probe-cache-future") / "read-bandwidth.json";
    ASSERT_TRUE(store_shared_bandwidth_probe(file.string(), probe_cache_record(2, probe_cache_now() + 10 * 86400)).ok());
    auto stored = load_shared_bandwidth_probe(file.string(), 2, probe_cache_now(), 30 * 86400);
    ASSERT_FALSE(stored.ok());
    EXPECT_NE(stored.error().find("future"), std::string::npos) << stored.error();
}

TEST(BandwidthProbeCache, TheFileSaysWhatWasMeasuredHowWhereAndWhen) {
    const fs::path file = test::temp_dir("probe-cache-fields") / "read-bandwidth.json";
    ASSERT_TRUE(store_shared_bandwidth_probe(file.string(), probe_cache_record(2, 1765075860)).ok());
    const nlohmann::json j = nlohmann::json::parse(probe_cache_read(file), nullptr, false);
    ASSERT_FALSE(j.is_discarded());
    ASSERT_EQ(j["probes"].size(), 1u);
    const nlohmann::json& p = j["probes"][0];
    EXPECT_EQ(p["threads"], 2);
    EXPECT_EQ(p["buffer_bytes"], 256ull << 20);
    EXPECT_EQ(p["method"], kBandwidthProbeMethod);
    EXPECT_EQ(p["cpu_model"], this_cpu_model());
    EXPECT_EQ(p["measured_at"], "2025-12-07 02:51 UTC");
    EXPECT_EQ(shared_probe_text(probe_cache_record(2, 1765075860)),
              "12.3 GB/s with 2 threads (shared probe, measured 2025-12-07 02:51 UTC)");
    EXPECT_EQ(utc_time_text(0), "1970-01-01 00:00 UTC");
}

#ifndef _WIN32
TEST(BandwidthProbeCache, TheDefaultFileIsInTheXdgCacheFolder) {
    const char* oldXdg = std::getenv("XDG_CACHE_HOME");
    const std::string saved = oldXdg ? oldXdg : "";
    setenv("XDG_CACHE_HOME", "/tmp/cflow-xdg-cache-test", 1);
    EXPECT_EQ(default_bandwidth_probe_path(), "/tmp/cflow-xdg-cache-test/cflow/read-bandwidth.json");
    setenv("XDG_CACHE_HOME", "relative/ignored", 1);
    const char* home = std::getenv("HOME");
    if (home && home[0] == '/') {
        EXPECT_EQ(default_bandwidth_probe_path(), std::string(home) + "/.cache/cflow/read-bandwidth.json");
    }
    if (oldXdg) setenv("XDG_CACHE_HOME", saved.c_str(), 1);
    else unsetenv("XDG_CACHE_HOME");
}
#endif

} // namespace
} // namespace cflow
