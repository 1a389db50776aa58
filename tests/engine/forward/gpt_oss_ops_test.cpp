// gpt-oss's two new vector operations against their definitions evaluated in double
// (transformers' modeling_gpt_oss.py): the softmax with a sink logit (GptOssAttention: the sink
// joins the scores' softmax and its column is dropped) and the clamped SwiGLU (GptOssExperts).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "forward/ops.h"

namespace cflow {
namespace {

TEST(GptOssOps, SoftmaxWithSinkDropsTheSinksShare) {
    const std::vector<float> scores = {0.5f, -1.25f, 2.0f, 0.0f, 1.5f};  // [5]
    for (const float sink : {-30.0f, 0.0f, 1.75f, 40.0f}) {
        std::vector<float> got = scores;
        ops::softmax_with_sink(got.data(), got.size(), sink);
        double m = sink;
        for (float s : scores) m = std::max(m, double(s));
        double sum = std::exp(double(sink) - m);
        for (float s : scores) sum += std::exp(double(s) - m);
        double total = 0;
        for (size_t i = 0; i < scores.size(); ++i) {
            const double want = std::exp(double(scores[i]) - m) / sum;
            EXPECT_NEAR(got[i], want, 1e-6 * std::max(want, 1e-3)) << "sink " << sink << " score " << i;
            total += got[i];
        }
        EXPECT_NEAR(total, 1.0 - std::exp(double(sink) - m) / sum, 1e-6) << "sink " << sink;
    }
    // No scores at all (cannot happen in attention, but must not read past the end).
    float none = 0.0f;
    ops::softmax_with_sink(&none, 0, 1.0f);
    EXPECT_EQ(none, 0.0f);
}

TEST(GptOssOps, ClampedSwiGluClampsGateAboveAndUpBothWays) {
    ModelParams p{};
    p.ffn_activation = static_cast<uint8_t>(FfnActivation::ClampedSwiGLU);
    p.ffn_alpha = 1.702f;
    p.ffn_limit = 7.0f;
    const std::vector<float> gate0 = {-9.0f, -1.0f, 0.0f, 0.5f, 6.9f, 7.5f, 20.0f};  // [7]
    const std::vector<float> up = {-8.0f, -7.5f, -1.0f, 0.25f, 3.0f, 7.5f, -20.0f};   // [7]
    std::vector<float> gate = gate0;
    ops::glu(p, gate.data(), up.data(), gate.size());
    for (size_t i = 0; i < gate0.size(); ++i) {
        const double g = std::min(double(gate0[i]), 7.0);
        const double u = std::clamp(double(up[i]), -7.0, 7.0);
        const double want = g / (1.0 + std::exp(-1.702 * g)) * (u + 1.0);
        EXPECT_NEAR(gate[i], want, 1e-5 * std::max(1.0, std::fabs(want))) << i;
    }
    // The clamp matters: an unclamped gate of 20 and up of -20 would give about -380.
    EXPECT_NEAR(gate[6], 7.0 / (1.0 + std::exp(-1.702 * 7.0)) * -6.0, 1e-4);
}

} // namespace
} // namespace cflow
