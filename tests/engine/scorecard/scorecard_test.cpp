// The scorecard's measuring code: claim 1's bytes read track k/E on synthetic MoE models, claim
// 5's read-order check passes on the trained file and fails on a permuted order, the A/B verdict
// rule follows its thresholds, and every claim result has the shape the CLI prints.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "cflow/engine/scorecard/scorecard.h"
#include "cflow/formats/converter.h"
#include "scorecard/scorecard_internal.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

double figure(const ClaimResult& r, const std::string& name) {
    for (const Figure& f : r.measured)
        if (f.name == name) return f.value;
    ADD_FAILURE() << "claim " << r.claim << " has no figure " << name;
    return -1;
}

std::string trained_model() { return std::string(CFLOW_SOURCE_DIR) + "/resources/default-model.cflow"; }

TEST(Scorecard, Claim1BytesReadTrackTopKOverExperts) {
    const auto dir = temp_dir("scorecard-claim1");
    double previous = 0;
    for (uint32_t k : {1u, 2u, 4u}) {
        SCOPED_TRACE(::testing::Message() << "top_k " << k);
        SyntheticSpec spec;
        spec.d_model = 128;
        spec.n_heads = 4;
        spec.n_kv_heads = 4;
        spec.head_dim = 32;
        spec.d_ff = 0;
        spec.n_experts = 8;
        spec.top_k = k;
        spec.expert_d_ff = 512;  // ~200 KiB per expert at Q8_0: 4 KiB sector rounding stays small
        spec.dtype = DType::Q8_0;
        const std::string path = (dir / ("moe-k" + std::to_string(k) + ".cflow")).string();
        ConvertOptions options;
        options.weight_quant = DType::Q8_0;
        auto converted = convert_to_cflow(make_synthetic_model(spec), path, options);
        ASSERT_TRUE(converted.ok()) << converted.error();
        ScorecardOptions so;
        so.quick = true;
        so.threads = 1;
        const ClaimResult r = scorecard_claim1_expert_loading(path, so);
        ASSERT_NE(r.verdict, Verdict::NotMeasurable) << r.reason;
        const double ratio = figure(r, "read_over_bank");
        EXPECT_NEAR(ratio, double(k) / 8.0, 0.10 * double(k) / 8.0) << r.reason;
        EXPECT_GT(ratio, previous);  // more experts routed, proportionally more bytes read
        EXPECT_EQ(r.verdict, Verdict::Proven) << r.reason;
        previous = ratio;
    }
}

TEST(Scorecard, Claim1WithoutAModelSaysWhy) {
    const ClaimResult r = scorecard_claim1_expert_loading("", {});
    EXPECT_EQ(r.verdict, Verdict::NotMeasurable);
    EXPECT_FALSE(r.reason.empty());
}

TEST(Scorecard, Claim5ReadOrderOfTheTrainedModelIsMonotonic) {
    auto order = forward_read_order(trained_model());
    ASSERT_TRUE(order.ok()) << order.error();
    ASSERT_GT(order->size(), 10u);
    const ReadOrderCheck c = check_read_order(*order);
    EXPECT_EQ(c.backward_jumps, 0u) << c.first_violation;
    EXPECT_EQ(scorecard_claim5_compute_order({trained_model()}).verdict, Verdict::Proven);
}

TEST(Scorecard, Claim5CheckFailsOnAPermutedOrder) {
    auto order = forward_read_order(trained_model());
    ASSERT_TRUE(order.ok()) << order.error();
    std::vector<ReadSpan> permuted = *order;
    std::swap(permuted[3], permuted[permuted.size() / 2]);  // one range read out of place
    const ReadOrderCheck c = check_read_order(permuted);
    EXPECT_GE(c.backward_jumps, 1u);
    EXPECT_GT(c.backward_bytes, 0u);
    EXPECT_FALSE(c.first_violation.empty());
    std::vector<ReadSpan> reversed(order->rbegin(), order->rend());
    EXPECT_EQ(check_read_order(reversed).backward_jumps, order->size() - 1);
}

TEST(Scorecard, AbVerdictFollowsItsThresholds) {
    using scorecard::ab_verdict;
    EXPECT_EQ(ab_verdict({1.10, 1.08, 1.12}, 0.05, "B").verdict, Verdict::Proven);
    EXPECT_EQ(ab_verdict({1.01, 0.99, 1.02}, 0.05, "B").verdict, Verdict::Refuted);
    EXPECT_EQ(ab_verdict({0.90, 1.20, 1.01}, 0.05, "B").verdict, Verdict::Inconclusive);
    EXPECT_EQ(ab_verdict({1.10, 0.98, 1.09}, 0.05, "B").verdict, Verdict::Inconclusive);  // median over, one round under 1
    EXPECT_EQ(ab_verdict({}, 0.05, "B").verdict, Verdict::Inconclusive);
}

TEST(Scorecard, QuickRunOfTheFileFreeClaimsHasTheReportedShape) {
    ScorecardOptions so;
    so.quick = true;
    so.claims = {2, 3, 5};
    ScorecardInputs inputs;
    inputs.layout_models = {trained_model()};
    int calls = 0;
    auto results = run_scorecard(inputs, so, [&](int, int, int) { return ++calls > 0; });
    ASSERT_TRUE(results.ok()) << results.error();
    ASSERT_EQ(results->size(), 3u);
    EXPECT_EQ(calls, 3);
    for (const ClaimResult& r : *results) {
        EXPECT_FALSE(r.title.empty());
        EXPECT_FALSE(r.method.empty());
        EXPECT_FALSE(r.reason.empty());
        EXPECT_FALSE(r.measured.empty()) << "claim " << r.claim;
        for (const Figure& f : r.measured) EXPECT_FALSE(f.unit.empty()) << f.name;
    }
    // Claim 3: scalar is always measured; a SIMD path, where there is one, agrees with it.
    EXPECT_GT(figure((*results)[1], "scalar_gweights_per_second"), 0.0);
}

TEST(Scorecard, ACancelledProgressStopsTheRun) {
    ScorecardOptions so;
    so.claims = {5};
    auto results = run_scorecard({}, so, [](int, int, int) { return false; });
    ASSERT_FALSE(results.ok());
    EXPECT_EQ(results.kind(), ErrorKind::Cancelled);
}

} // namespace
} // namespace cflow::test
