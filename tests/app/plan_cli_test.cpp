// `cflow plan`: the prediction and its alternatives as text and as JSON with stable keys, from a
// calibration file the test writes (so nothing is measured and every figure follows from it),
// and one-line failures for bad input.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "cflow/engine/io/bandwidth_probe_cache.h"
#include "cflow/engine/predict/machine_calibration.h"
#include "cli_runner.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

// A calibration of this CPU (so it is accepted) with round figures.
std::string write_test_calibration(const std::filesystem::path& dir) {
    MachineCalibration c;
    c.cpuModel = this_cpu_model();
    c.logicalCpus = 2;
    c.isa = "test";
    c.measuredAtUnixSeconds = 1'700'000'000;
    c.diskBytesPerSecond = 1e9;
    c.diskDirect = true;
    c.processBaseBytes = 8 << 20;
    for (unsigned threads : {1u, 2u}) {
        ThreadCalibration t;
        t.threads = threads;
        t.bandwidthBytesPerSecond = 1e10;
        for (DType dtype : {DType::Q4_0, DType::Q8_0}) {
            KernelCost k;
            k.dtype = dtype;
            k.decodeWeightsPerSecond = 2e9 * threads;
            k.decodePassSeconds = 1e-5;
            k.prefillWeightsPerSecond = 1e10 * threads;
            k.prefillPassSeconds = 1e-6;
            t.kernels.push_back(k);
        }
        c.threads.push_back(t);
    }
    const std::string path = (dir / "calibration.json").string();
    EXPECT_TRUE(store_machine_calibration(path, c));
    return path;
}

TEST(PlanCli, JsonHasStableKeysAndEveryAlternative) {
    const auto dir = temp_dir("plan_cli_json");
    const std::string calibration = write_test_calibration(dir);
    const std::string model = write_synthetic_cflow(delayed_moe_spec(), dir / "moe.cflow", DType::Q8_0);
    auto r = run_cflow({"plan", model, "--calibration", calibration, "--threads", "2", "--ctx", "128", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    for (const char* key : {"model", "file_bytes", "expert_bank_bytes", "available_memory_bytes", "calibration", "settings",
                            "load_reason", "prediction", "fits", "alternatives"})
        EXPECT_TRUE(j.contains(key)) << key;
    for (const char* key : {"resident_bytes", "base_bytes", "weights_bytes", "kv_bytes", "expert_cache_bytes", "scratch_bytes",
                            "decode_tokens_per_second", "prefill_tokens_per_second", "expert_stall_share",
                            "decode_bytes_per_token", "disk_bytes_per_token", "bound", "calibrated_threads", "note"})
        EXPECT_TRUE(j["prediction"].contains(key)) << key;
    EXPECT_EQ(j["calibration"]["path"], calibration);
    EXPECT_EQ(j["calibration"]["measured_now"], false);
    EXPECT_EQ(j["settings"]["threads"], 2);
    EXPECT_EQ(j["settings"]["context"], 128);
    // The process figure is plan's own (the same binary), not the calibration's 8 MiB.
    const auto& pr = j["prediction"];
    EXPECT_GT(pr["base_bytes"].get<uint64_t>(), 0u);
    EXPECT_EQ(pr["resident_bytes"].get<uint64_t>(), pr["base_bytes"].get<uint64_t>() + pr["weights_bytes"].get<uint64_t>() +
                                                        pr["kv_bytes"].get<uint64_t>() + pr["expert_cache_bytes"].get<uint64_t>() +
                                                        pr["scratch_bytes"].get<uint64_t>());
    EXPECT_GT(j["prediction"]["decode_tokens_per_second"].get<double>(), 0);
    EXPECT_GT(j["prediction"]["prefill_tokens_per_second"].get<double>(), 0);
    // KV f16/f32, mapped + sync/staged at 4 cache sizes, 7 quantisations.
    int kv = 0, arms = 0, quants = 0;
    for (const auto& a : j["alternatives"]) {
        const std::string change = a["change"];
        kv += change == "kv_cache";
        arms += change == "expert_fetch";
        quants += change == "quantisation";
        EXPECT_TRUE(a["prediction"].contains("resident_bytes"));
    }
    EXPECT_EQ(kv, 2);
    EXPECT_EQ(arms, 9);
    EXPECT_EQ(quants, 7);
    // Sync without a cache waits for its reads; the mapped arm never does.
    for (const auto& a : j["alternatives"]) {
        if (a["value"] == "mapped") {
            EXPECT_EQ(a["prediction"]["expert_stall_share"].get<double>(), 0.0);
        }
        if (a["value"] == "sync, cache 0 MiB (0% of the bank)") {
            EXPECT_GT(a["prediction"]["expert_stall_share"].get<double>(), 0.0);
        }
    }
}

TEST(PlanCli, TextNamesTheCalibrationAndTheAlternatives) {
    const auto dir = temp_dir("plan_cli_text");
    const std::string calibration = write_test_calibration(dir);
    SyntheticSpec spec;
    const std::string model = write_synthetic_cflow(spec, dir / "dense.cflow", DType::Q4_0);
    auto r = run_cflow({"plan", model, "--calibration", calibration, "--threads", "1", "--ctx", "200"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("calibration " + calibration), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("resident memory"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("alternatives"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("expert_fetch"), std::string::npos) << "a dense model has no expert arms\n" << r.out;
}

TEST(PlanCli, BadInputFailsOnOneLine) {
    const auto dir = temp_dir("plan_cli_bad");
    const std::string calibration = write_test_calibration(dir);
    expect_one_line_failure(run_cflow({"plan", (dir / "missing.cflow").string(), "--calibration", calibration}),
                            "no such file");
    const std::string text = (dir / "notes.cflow").string();
    std::ofstream(text) << "not a model";
    auto r = run_cflow({"plan", text, "--calibration", calibration});
    expect_one_line_failure(r, "notes.cflow");
    SyntheticSpec spec;
    const std::string model = write_synthetic_cflow(spec, dir / "dense.cflow", DType::Q4_0);
    expect_one_line_failure(run_cflow({"plan", model, "--calibration", calibration, "--ctx", "16"}),
                            "do not fit in a context of 16 tokens");
    auto absurd = run_cflow({"plan", model, "--ctx", "99999999999"});
    EXPECT_NE(absurd.exit_code, 0);
    EXPECT_NE(absurd.err.find("--ctx"), std::string::npos) << absurd.err;
    const std::string damaged = (dir / "damaged.json").string();
    std::ofstream(damaged) << "{";
    expect_one_line_failure(run_cflow({"plan", model, "--calibration", damaged}), "option --calibration");
}

} // namespace
} // namespace cflow::test
