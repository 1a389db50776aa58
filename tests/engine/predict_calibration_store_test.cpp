// machine-calibration.json (predict/machine_calibration.h): a round trip, a damaged file and a
// file from another CPU model are told apart, and a failed read never passes for a calibration.
#include <gtest/gtest.h>

#include <fstream>

#include "cflow/engine/predict/machine_calibration.h"
#include "test_support.h"

namespace cflow {
namespace {

MachineCalibration sample_calibration() {
    MachineCalibration c;
    c.cpuModel = "Test CPU 9000";
    c.logicalCpus = 4;
    c.isa = "avx2";
    c.measuredAtUnixSeconds = 1'800'000'000;
    c.diskBytesPerSecond = 1.5e9;
    c.diskDirect = true;
    c.processBaseBytes = 9 << 20;
    for (unsigned threads : {1u, 2u}) {
        ThreadCalibration t;
        t.threads = threads;
        t.bandwidthBytesPerSecond = 1e10 * threads;
        KernelCost k;
        k.dtype = DType::Q4_K;
        k.decodeWeightsPerSecond = 3e9;
        k.decodePassSeconds = 2e-5;
        k.decodeAttnSecondsPerElem = 1e-10;
        k.prefillWeightsPerSecond = 2e10;
        k.prefillPassSeconds = 1e-6;
        k.prefillAttnSecondsPerElem = 2e-11;
        k.decodeMoePassSeconds = 3e-5;
        k.prefillMoePassSeconds = 4e-6;
        t.kernels.push_back(k);
        c.threads.push_back(t);
    }
    return c;
}

TEST(PredictCalibrationStore, RoundTripKeepsEveryFigure) {
    const std::string path = (test::temp_dir("predict_calibration_rt") / "sub" / "machine-calibration.json").string();
    ASSERT_TRUE(store_machine_calibration(path, sample_calibration()));
    auto c = load_machine_calibration(path, "Test CPU 9000");
    ASSERT_TRUE(c) << c.error();
    EXPECT_EQ(c->isa, "avx2");
    EXPECT_EQ(c->logicalCpus, 4u);
    EXPECT_EQ(c->measuredAtUnixSeconds, 1'800'000'000);
    EXPECT_DOUBLE_EQ(c->diskBytesPerSecond, 1.5e9);
    EXPECT_TRUE(c->diskDirect);
    EXPECT_EQ(c->processBaseBytes, 9u << 20);
    ASSERT_EQ(c->threads.size(), 2u);
    EXPECT_DOUBLE_EQ(c->at(2)->bandwidthBytesPerSecond, 2e10);
    EXPECT_EQ(c->at(7)->threads, 2u);  // the nearest measured count
    const KernelCost& k = c->threads[0].kernels.at(0);
    EXPECT_EQ(k.dtype, DType::Q4_K);
    EXPECT_DOUBLE_EQ(k.decodeWeightsPerSecond, 3e9);
    EXPECT_DOUBLE_EQ(k.decodeAttnSecondsPerElem, 1e-10);
    EXPECT_DOUBLE_EQ(k.prefillPassSeconds, 1e-6);
    EXPECT_DOUBLE_EQ(k.decodeMoePassSeconds, 3e-5);
    EXPECT_DOUBLE_EQ(k.prefillMoePassSeconds, 4e-6);
}

TEST(PredictCalibrationStore, AnotherCpuModelIsMeasuredAgain) {
    const std::string path = (test::temp_dir("predict_calibration_cpu") / "machine-calibration.json").string();
    ASSERT_TRUE(store_machine_calibration(path, sample_calibration()));
    auto c = load_machine_calibration(path, "Other CPU 1");
    ASSERT_FALSE(c);
    EXPECT_NE(c.error().find("another CPU"), std::string::npos) << c.error();
    EXPECT_NE(c.error().find("Test CPU 9000"), std::string::npos) << c.error();
}

TEST(PredictCalibrationStore, DamagedOrMissingFilesSayWhat) {
    const auto dir = test::temp_dir("predict_calibration_bad");
    auto missing = load_machine_calibration((dir / "none.json").string(), "Test CPU 9000");
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().find("no machine calibration"), std::string::npos) << missing.error();

    const std::string cut = (dir / "cut.json").string();
    ASSERT_TRUE(store_machine_calibration(cut, sample_calibration()));
    std::string text;
    {
        std::ifstream in(cut);
        text.assign(std::istreambuf_iterator<char>(in), {});
    }
    std::ofstream(cut, std::ios::trunc) << text.substr(0, text.size() / 2);
    auto damaged = load_machine_calibration(cut, "Test CPU 9000");
    ASSERT_FALSE(damaged);
    EXPECT_NE(damaged.error().find("not valid JSON"), std::string::npos) << damaged.error();

    const std::string wrongType = (dir / "wrong.json").string();
    std::ofstream(wrongType) << R"({"format": 1, "method": "x", "cpu_model": 3})";
    auto wrong = load_machine_calibration(wrongType, "Test CPU 9000");
    ASSERT_FALSE(wrong);
    EXPECT_NE(wrong.error().find("damaged"), std::string::npos) << wrong.error();

    // A stored record measured another way is not reused.
    MachineCalibration other = sample_calibration();
    other.method = "an older recipe";
    const std::string old = (dir / "old.json").string();
    ASSERT_TRUE(store_machine_calibration(old, other));
    auto stale = load_machine_calibration(old, "Test CPU 9000");
    ASSERT_FALSE(stale);
    EXPECT_NE(stale.error().find("another way"), std::string::npos) << stale.error();
}

TEST(PredictCalibrationStore, AgeReadsInUnitsAPersonUses) {
    EXPECT_EQ(calibration_age_text(0, 600), "10 min");
    EXPECT_EQ(calibration_age_text(0, 3 * 3600), "3.0 h");
    EXPECT_EQ(calibration_age_text(0, 5 * 86400), "5 days");
}

} // namespace
} // namespace cflow
