// greedy_decode_steps, the one timed decode loop of bench, compare, the scorecard and bench
// experts: its tokens are a hand-written greedy loop's, warm-ups add nothing, totals add up over
// calls, a full context wraps only when asked, and cancellation stops before the next step.
#include <gtest/gtest.h>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/generation/sampler.h"
#include "cflow/engine/generation/timed_decode.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

std::unique_ptr<Session> small_session(uint32_t context) {
    SyntheticSpec spec;
    spec.n_layers = 2;
    spec.max_seq_len = 64;
    static const std::string path = write_synthetic_cflow(spec, temp_dir("timed-decode") / "model.cflow");
    auto model = Model::load(path);
    EXPECT_TRUE(model) << (model ? "" : model.error());
    auto session = Session::create(*model, SessionOptions{1, context});
    EXPECT_TRUE(session) << (session ? "" : session.error());
    return std::move(session).value();
}

TEST(TimedDecode, TokensAreAPlainGreedyLoopsAndTotalsAddUp) {
    auto reference = small_session(32);
    std::vector<int32_t> expected;
    int32_t token = 5;
    for (int i = 0; i < 9; ++i) {
        token = greedy_token(reference->step(token).value());
        expected.push_back(token);
    }

    auto session = small_session(32);
    int32_t next = 5;
    DecodeTotals totals;
    ASSERT_TRUE(greedy_decode_steps(*session, next, 3, nullptr));  // warm-up: not counted
    EXPECT_EQ(totals.tokens, 0);
    ASSERT_TRUE(greedy_decode_steps(*session, next, 4, &totals));
    ASSERT_TRUE(greedy_decode_steps(*session, next, 2, &totals));
    EXPECT_EQ(totals.tokens, 6);
    EXPECT_EQ(totals.emitted, std::vector<int32_t>(expected.begin() + 3, expected.end()));
    EXPECT_EQ(next, expected.back());
    EXPECT_GT(totals.seconds, 0);
    EXPECT_GT(totals.stepUs, 0);
    EXPECT_GT(totals.bytes(Stream::Attention), 0);
    double all = 0;
    for (double b : totals.bytesByStream) all += b;
    EXPECT_DOUBLE_EQ(totals.bytesPerToken(), all / 6);
}

TEST(TimedDecode, AFullContextWrapsOnlyWhenAsked) {
    auto session = small_session(8);
    int32_t next = 5;
    DecodeTotals totals;
    Status unwrapped = greedy_decode_steps(*session, next, 12, &totals);
    EXPECT_FALSE(unwrapped) << "step 9 does not fit in 8 positions";
    session->reset();
    next = 5;
    DecodeTotals wrapped;
    ASSERT_TRUE(greedy_decode_steps(*session, next, 20, &wrapped, DecodeStepsOptions{true, nullptr}));
    EXPECT_EQ(wrapped.tokens, 20);
    EXPECT_LT(session->position(), session->context_length());
}

TEST(TimedDecode, CancellationStopsBeforeTheNextStep) {
    auto session = small_session(32);
    CancelToken cancel;
    cancel.cancel();
    int32_t next = 5;
    DecodeTotals totals;
    Status s = greedy_decode_steps(*session, next, 4, &totals, DecodeStepsOptions{false, &cancel});
    ASSERT_FALSE(s);
    EXPECT_EQ(s.kind(), ErrorKind::Cancelled);
    EXPECT_EQ(totals.tokens, 0);
    EXPECT_EQ(session->position(), 0u);
}

} // namespace
} // namespace cflow::test
