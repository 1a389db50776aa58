// Sampler: greedy, reproducibility, top-k / top-p / min-p exclusion, repetition penalty, NaN/inf safety.
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "cflow/engine/generation/sampler.h"

namespace cflow {
namespace {

SamplingParams all_off(float temperature) {
    SamplingParams params;
    params.temperature = temperature;
    params.top_k = 0;
    params.top_p = 1.0f;
    params.min_p = 0.0f;
    params.repeat_penalty = 1.0f;
    return params;
}

TEST(Sampler, GreedyPicksArgmaxAndLowestIdOnTies) {
    Sampler sampler(all_off(0.0f));
    const std::vector<float> logits = {0.1f, 2.0f, -1.0f, 3.5f, 3.5f, 0.0f};  // [vocab] f32
    EXPECT_EQ(sampler.sample(logits, {}), 3);
    const std::vector<float> single = {-4.0f};
    EXPECT_EQ(sampler.sample(single, {}), 0);
    EXPECT_EQ(sampler.sample(std::span<const float>(), {}), -1);
}

TEST(Sampler, FixedSeedIsReproducibleAndSeedsDiffer) {
    std::vector<float> logits(50);  // [vocab] f32
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(std::sin(static_cast<double>(i)));
    SamplingParams params = all_off(1.0f);
    Sampler a(params), b(params);
    params.seed = 7;
    Sampler c(params);
    std::vector<int32_t> seq_a, seq_b, seq_c;
    for (int i = 0; i < 200; ++i) {
        seq_a.push_back(a.sample(logits, {}));
        seq_b.push_back(b.sample(logits, {}));
        seq_c.push_back(c.sample(logits, {}));
    }
    EXPECT_EQ(seq_a, seq_b);
    EXPECT_NE(seq_a, seq_c);
    a.reset();
    EXPECT_EQ(a.sample(logits, {}), seq_a.front());
}

TEST(Sampler, TopKOneEqualsGreedy) {
    SamplingParams params = all_off(1.5f);
    params.top_k = 1;
    Sampler sampler(params);
    Sampler greedy(all_off(0.0f));
    std::vector<float> logits(64);  // [vocab] f32
    for (int round = 0; round < 20; ++round) {
        for (size_t i = 0; i < logits.size(); ++i)
            logits[i] = static_cast<float>(std::cos(static_cast<double>(i * 7 + static_cast<size_t>(round) * 13)));
        EXPECT_EQ(sampler.sample(logits, {}), greedy.sample(logits, {}));
    }
}

// Probabilities at temperature 1 for logits log(p): 0.5, 0.3, 0.15, 0.04, 0.01.
std::vector<float> five_way_logits() {
    return {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.04f), std::log(0.01f)};
}

std::map<int32_t, int> histogram(Sampler& sampler, const std::vector<float>& logits, int draws) {
    std::map<int32_t, int> counts;
    for (int i = 0; i < draws; ++i) ++counts[sampler.sample(logits, {})];
    return counts;
}

TEST(Sampler, TopPExcludesTheTail) {
    SamplingParams params = all_off(1.0f);
    params.top_p = 0.75f;  // 0.5 + 0.3 = 0.8 >= 0.75: only ids 0 and 1 remain
    Sampler sampler(params);
    const auto counts = histogram(sampler, five_way_logits(), 20000);
    EXPECT_EQ(counts.size(), 2u);
    EXPECT_GT(counts.at(0), 0);
    EXPECT_GT(counts.at(1), 0);
    // Renormalized 0.5 / 0.8 = 0.625 for id 0.
    EXPECT_NEAR(counts.at(0) / 20000.0, 0.625, 0.02);
}

TEST(Sampler, MinPExcludesUnlikelyTokens) {
    SamplingParams params = all_off(1.0f);
    params.min_p = 0.1f;  // threshold 0.05: ids 3 (0.04) and 4 (0.01) never appear
    Sampler sampler(params);
    const auto counts = histogram(sampler, five_way_logits(), 20000);
    EXPECT_EQ(counts.size(), 3u);
    EXPECT_EQ(counts.count(3), 0u);
    EXPECT_EQ(counts.count(4), 0u);
    EXPECT_NEAR(counts.at(2) / 20000.0, 0.15 / 0.95, 0.02);
}

TEST(Sampler, UnrestrictedDrawFollowsTheDistribution) {
    Sampler sampler(all_off(1.0f));
    const auto counts = histogram(sampler, five_way_logits(), 40000);
    EXPECT_EQ(counts.size(), 5u);
    EXPECT_NEAR(counts.at(0) / 40000.0, 0.5, 0.015);
    EXPECT_NEAR(counts.at(4) / 40000.0, 0.01, 0.005);
}

TEST(Sampler, RepetitionPenaltyChangesTheArgmax) {
    SamplingParams params = all_off(0.0f);
    params.repeat_penalty = 1.5f;
    params.repeat_last_n = 2;
    Sampler sampler(params);
    const std::vector<float> logits = {1.0f, 3.0f, 2.5f, -1.0f};  // [vocab] f32
    const std::vector<int32_t> recent = {2, 1, 1};
    // Window {1, 1}: id 1 penalized once -> 3.0 / 1.5 = 2.0 < 2.5.
    EXPECT_EQ(sampler.sample(logits, recent), 2);
    // id 1 outside the window: unchanged argmax.
    const std::vector<int32_t> old = {1, 0, 3};
    EXPECT_EQ(sampler.sample(logits, old), 1);
    // Negative logits are multiplied: all negative, repeated id 0 falls behind id 1.
    const std::vector<float> negative = {-1.0f, -1.2f};
    const std::vector<int32_t> zero = {0};
    EXPECT_EQ(sampler.sample(negative, zero), 1);
    Sampler off(all_off(0.0f));
    EXPECT_EQ(off.sample(logits, recent), 1);
}

TEST(Sampler, NanAndInfLogitsDoNotCrash) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> with_nan = {nan, 1.0f, nan, 0.5f};
    const std::vector<float> all_nan = {nan, nan, nan};
    const std::vector<float> with_inf = {0.0f, inf, -inf, 1.0f};
    SamplingParams defaults;
    Sampler sampler(defaults);
    Sampler greedy(all_off(0.0f));
    for (int i = 0; i < 100; ++i) {
        const int32_t id = sampler.sample(with_nan, {});
        EXPECT_TRUE(id == 1 || id == 3) << id;
        const int32_t inf_id = sampler.sample(with_inf, {});
        EXPECT_EQ(inf_id, 1);  // +inf dominates every finite logit
        const int32_t nan_id = sampler.sample(all_nan, {});
        EXPECT_GE(nan_id, 0);
        EXPECT_LT(nan_id, 3);
    }
    EXPECT_EQ(greedy.sample(with_nan, {}), 1);
    EXPECT_EQ(greedy.sample(with_inf, {}), 1);
}

} // namespace
} // namespace cflow
