// The predictor's arithmetic (predict/predictor.h) against plans computed by hand: a tiny
// footprint and calibration whose every figure is chosen so the expected values can be written
// out below. No timing is involved.
#include <gtest/gtest.h>

#include "cflow/engine/predict/calibrate.h"
#include "cflow/engine/predict/predictor.h"

namespace cflow {
namespace {

// 2 passes, 2 heads of 4 (1 KV head), d 8, vocab 10; 1000 Q8_0 weights in 1100 bytes and 100
// f32 bytes per token; a 5000-byte file with an 800-byte embedding table.
ModelFootprint hand_footprint() {
    ModelFootprint f;
    f.fileBytes = 5000;
    f.passes = 2;
    f.nHeads = 2;
    f.nKvHeads = 1;
    f.headDim = 4;
    f.dModel = 8;
    f.vocab = 10;
    f.maxSeqLen = 100;
    f.kvRing.assign(2, 0);
    f.perToken.add(DType::Q8_0, 1000, 1100);
    f.rawBytesPerToken = 100;
    f.stored.add(DType::Q8_0, 1000, 1100);
    f.untouchedEmbeddingBytes = 800;
    return f;
}

// One thread: 1000 B/s of bandwidth; Q8_0 decodes 500 weights/s + 0.1 s per pass + 0.01 s per
// cached element, prefills 1000 weights/s + 0.05 s per pass + 0.001 s per element.
MachineCalibration hand_calibration(double bandwidth = 1000) {
    MachineCalibration m;
    m.cpuModel = "test cpu";
    m.processBaseBytes = 1000;
    m.diskBytesPerSecond = 100;
    ThreadCalibration t;
    t.threads = 1;
    t.bandwidthBytesPerSecond = bandwidth;
    KernelCost k;
    k.dtype = DType::Q8_0;
    k.decodeWeightsPerSecond = 500;
    k.decodePassSeconds = 0.1;
    k.decodeAttnSecondsPerElem = 0.01;
    k.prefillWeightsPerSecond = 1000;
    k.prefillPassSeconds = 0.05;
    k.prefillAttnSecondsPerElem = 0.001;
    t.kernels.push_back(k);
    m.threads.push_back(t);
    return m;
}

PlanSettings hand_settings() {
    PlanSettings s;
    s.threads = 1;
    s.context = 50;
    s.kvCache = KvCacheType::F16;
    s.promptTokens = 10;
    s.decodeTokens = 4;
    s.load = PlanLoad::Map;
    return s;
}

TEST(PredictPredictor, DenseComputeBoundByHand) {
    auto p = predict(hand_footprint(), hand_settings(), hand_calibration());
    ASSERT_TRUE(p) << p.error();
    // Mean position 10 + 4/2 = 12. KV read: K and V x 2 passes x 12 positions x 1 head x 4 x 2 B = 384.
    EXPECT_DOUBLE_EQ(p->decodeBytesPerToken, 1100 + 100 + 384);
    EXPECT_DOUBLE_EQ(p->memorySecondsPerToken, 1.584);
    // Matvec 1000 / 500 = 2 s; attention 2 passes x 2 heads x 4 x 12 x 0.01 = 1.92 s.
    EXPECT_NEAR(p->computeSecondsPerToken, 3.92, 1e-12);
    // (2 passes + the LM head stage) x 0.1 s.
    EXPECT_NEAR(p->overheadSecondsPerToken, 0.3, 1e-12);
    EXPECT_NEAR(p->decodeTokPerS, 1.0 / 4.22, 1e-12);
    EXPECT_EQ(p->bound, "compute");
    // Prefill: 3 x 0.05 + 1000 / 1000 + 16 elements x 5 (half the prompt) x 0.001 = 1.23 s.
    EXPECT_NEAR(p->prefillTokPerS, 1.0 / 1.23, 1e-12);
    EXPECT_DOUBLE_EQ(p->expertStallShare, 0.0);
    // Memory: 1000 process + (5000 - 800) mapped + KV at 50: 2 x 2 x 50 x 4 x 2 B = 1600; scratch
    // (vocab 10 + 2 heads x 50 + 12 x 8 + 3 x 8 + 64 x (8 x 8 + 3 x 8)) floats = 5862 x 4 B.
    EXPECT_EQ(p->weightsBytes, 4200u);
    EXPECT_EQ(p->kvBytes, 1600u);
    EXPECT_EQ(p->scratchBytes, 23448u);
    EXPECT_EQ(p->residentBytes, 1000u + 4200u + 1600u + 23448u);
}

TEST(PredictPredictor, UnbatchedPrefillIsADecodeStepWithoutTheHeadByHand) {
    ModelFootprint f = hand_footprint();
    f.batchedPrefill = false;  // a pipeline combine style
    f.lmHead.add(DType::Q8_0, 200, 220);  // 200 of the 1000 weights are the LM head
    auto p = predict(f, hand_settings(), hand_calibration());
    ASSERT_TRUE(p) << p.error();
    // At position 5: bytes 1100 - 220 + 100 + KV 2 x 2 x 5 x 4 x 2 = 160 -> 1.14 s; compute
    // 800 / 500 + 16 x 5 x 0.01 = 2.4 s; 2 passes x 0.1 s (no head stage).
    EXPECT_NEAR(p->prefillTokPerS, 1.0 / 2.6, 1e-12);
}

TEST(PredictPredictor, SlowMemoryMakesItMemoryBound) {
    auto p = predict(hand_footprint(), hand_settings(), hand_calibration(100));
    ASSERT_TRUE(p) << p.error();
    EXPECT_DOUBLE_EQ(p->memorySecondsPerToken, 15.84);
    EXPECT_NEAR(p->decodeTokPerS, 1.0 / (15.84 + 0.3), 1e-12);
    EXPECT_EQ(p->bound, "memory");
}

TEST(PredictPredictor, KvTypeAndLoadModeChangeMemoryAsCounted) {
    PlanSettings s = hand_settings();
    s.kvCache = KvCacheType::F32;
    s.load = PlanLoad::Read;
    auto p = predict(hand_footprint(), s, hand_calibration());
    ASSERT_TRUE(p) << p.error();
    EXPECT_EQ(p->kvBytes, 3200u);       // 4 B per value
    EXPECT_EQ(p->weightsBytes, 2u << 20);  // the whole file copied, in a 2 MiB huge page
    s.load = PlanLoad::Lanes;
    p = predict(hand_footprint(), s, hand_calibration());
    ASSERT_TRUE(p) << p.error();
    EXPECT_EQ(p->weightsBytes, 4200u + (2u << 20));  // the mapping read to make the copy, and the copy
}

// Experts: 4 of 220 bytes per layer pass, top-1, in both passes: 400 weights / 440 bytes routed per token.
ModelFootprint hand_moe() {
    ModelFootprint f = hand_footprint();
    f.nExperts = 4;
    f.topK = 1;
    f.moePasses = 2;
    f.routedPerToken.add(DType::Q8_0, 400, 440);
    f.expertBankBytes = 1760;
    f.expertBytes = 220;
    return f;
}

TEST(PredictPredictor, SyncExpertsStallForTheirMissesByHand) {
    PlanSettings s = hand_settings();
    s.expertFetch = ExpertFetch::Sync;
    s.expertCacheBytes = 880;  // half the bank: half the routed bytes hit
    auto p = predict(hand_moe(), s, hand_calibration());
    ASSERT_TRUE(p) << p.error();
    EXPECT_DOUBLE_EQ(p->diskBytesPerToken, 220);
    EXPECT_NEAR(p->stallSecondsPerToken, 2.2, 1e-12);  // 220 B at 100 B/s
    // Compute: (1000 + 400) / 500 + 1.92 = 4.72 s; overhead 0.3 s.
    EXPECT_NEAR(p->computeSecondsPerToken, 4.72, 1e-12);
    EXPECT_NEAR(p->decodeTokPerS, 1.0 / 7.22, 1e-12);
    EXPECT_NEAR(p->expertStallShare, 2.2 / 7.22, 1e-12);
    // Mapped less the bank; cache 880 + one staging expert (top-1 x (delay 0 + 1)) of 220.
    EXPECT_EQ(p->weightsBytes, 5000u - 800u - 1760u);
    EXPECT_EQ(p->expertCacheBytes, 880u + 220u);
}

TEST(PredictPredictor, StagedExpertsOverlapTheirReadsWithTheLayers) {
    PlanSettings s = hand_settings();
    s.expertFetch = ExpertFetch::Staged;
    s.expertCacheBytes = 880;
    auto p = predict(hand_moe(), s, hand_calibration());
    ASSERT_TRUE(p) << p.error();
    // Per pass (4.72 + 0.3) / 3 = 1.673 s overlaps each of the 2 MoE passes' reads: 3.35 s > 2.2 s.
    EXPECT_DOUBLE_EQ(p->stallSecondsPerToken, 0.0);
    // Without a cache, 440 B take 4.4 s: 4.4 - 3.3467 s remain.
    s.expertCacheBytes = 0;
    p = predict(hand_moe(), s, hand_calibration());
    ASSERT_TRUE(p) << p.error();
    EXPECT_NEAR(p->stallSecondsPerToken, 4.4 - 2.0 * (4.72 + 0.3) / 3.0, 1e-12);
}

TEST(PredictPredictor, AnUncalibratedDtypeIsPricedWithItsFamilyAndSaysSo) {
    ModelFootprint f = hand_footprint();
    f.perToken.add(DType::Q5_K, 100, 70);
    auto p = predict(f, hand_settings(), hand_calibration());
    ASSERT_TRUE(p) << p.error();
    EXPECT_NE(p->note.find("q5_k"), std::string::npos) << p->note;
    MachineCalibration none = hand_calibration();
    none.threads.clear();
    EXPECT_FALSE(predict(f, hand_settings(), none));
}

TEST(PredictPredictor, RetypingPricesTheSameWeightsInAnotherDtype) {
    const ModelFootprint f = hand_footprint();
    const ModelFootprint q4 = retyped_footprint(f, DType::Q4_0);
    // A full Q4_0 tile: 16-byte header + 128 rows x 8 blocks x 18 B over 128 x 256 weights.
    const double perWeight = (16.0 + 128 * 8 * 18) / (128.0 * 256);
    EXPECT_DOUBLE_EQ(tile_bytes_per_weight(DType::Q4_0), perWeight);
    EXPECT_DOUBLE_EQ(q4.perToken.totalWeights(), 1000);
    EXPECT_DOUBLE_EQ(q4.perToken.bytes[size_t(DType::Q4_0)], 1000 * perWeight);
    EXPECT_EQ(q4.fileBytes, uint64_t(5000 - 1100 + 1000 * perWeight));
}

TEST(PredictCalibrationFit, RecoversTheCostsATimingWasMadeOf) {
    // Timings made from pass 1e-4 s, 2e9 weights/s, attention 1e-9 s per element.
    const double pass = 1e-4, rate = 2e9, attn = 1e-9;
    auto run = [&](double weights, double attnWidth, double position) {
        CalibrationRun r{weights, 3, attnWidth, position, 0};
        r.secondsPerToken = 3 * pass + weights / rate + attnWidth * position * attn;
        return r;
    };
    const CalibrationRun small = run(1e6, 2 * 4 * 64, 90), largeShort = run(9e6, 2 * 12 * 64, 90),
                         largeLong = run(9e6, 2 * 12 * 64, 346);
    KernelCost k;
    fit_kernel_cost(small, largeShort, largeLong, true, k);
    EXPECT_NEAR(k.decodePassSeconds, pass, 1e-12);
    EXPECT_NEAR(k.decodeWeightsPerSecond, rate, rate * 1e-9);
    EXPECT_NEAR(k.decodeAttnSecondsPerElem, attn, 1e-18);
    EXPECT_DOUBLE_EQ(k.prefillWeightsPerSecond, 0.0);  // decode fields only
    // A MoE run 2 passes x 50 us slower than its dense cost.
    CalibrationRun moe = run(2e6, 2 * 4 * 64, 90);
    moe.secondsPerToken += 2 * 50e-6;
    EXPECT_NEAR(fit_moe_pass_seconds(moe, 2, rate, pass, attn), 50e-6, 1e-12);
}

} // namespace
} // namespace cflow
