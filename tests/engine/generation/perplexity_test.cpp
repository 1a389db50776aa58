// Sliding-window perplexity: window/stride bookkeeping (every target scored once, with the right
// history), agreement with a hand-rolled per-window loop in double, errors and cancellation, and
// the document splitting shared with resources/training/evaluate.py.
#include <cmath>
#include <numeric>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/generation/perplexity.h"
#include "cflow/engine/forward/session.h"
#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

constexpr double kNllTolerance = 1e-9;  // same logits, same double accumulation order

std::shared_ptr<const Model> small_moe_model() {
    SyntheticSpec spec;
    spec.n_layers = 2;
    spec.n_experts = 4;
    spec.top_k = 2;
    spec.expert_d_ff = 32;
    spec.combine_style = CombineStyle::DelayedSum;
    spec.dense_delay = 1;
    spec.expert_delay = 1;
    spec.max_seq_len = 64;
    const auto path = (temp_dir("perplexity") / "model.cflow").string();
    ConvertOptions options;
    options.weight_quant = DType::F32;
    auto r = convert_to_cflow(make_synthetic_model(spec), path, options);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error());
    auto m = Model::load(path);
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error());
    return m.ok() ? m.value() : nullptr;
}

std::vector<int32_t> token_stream(size_t n) {
    std::vector<int32_t> ids(n);
    for (size_t i = 0; i < n; ++i) ids[i] = int32_t(3 + (i * 37 + i * i * 11) % 290);
    return ids;
}

// -ln p(ids[target] | ids[from .. target-1]) from a fresh context, one step at a time.
double nll_with_history(Session& s, const std::vector<int32_t>& ids, size_t from, size_t target) {
    s.reset();
    std::span<const float> logits;
    for (size_t i = from; i < target; ++i) logits = s.step(ids[i]).value();
    double mx = -INFINITY, sum = 0;
    for (float v : logits) mx = std::max(mx, double(v));
    for (float v : logits) sum += std::exp(double(v) - mx);
    return mx + std::log(sum) - logits[size_t(ids[target])];
}

// Bad arguments are InvalidInput; the message names the offending value.
void expect_invalid(const Result<PerplexityStats>& r, const std::string& names) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.kind(), ErrorKind::InvalidInput) << r.error();
    EXPECT_NE(r.error().find(names), std::string::npos) << r.error();
}

TEST(Perplexity, NonOverlappingWindowsScoreEveryTokenOnceFromAFreshContext) {
    auto model = small_moe_model();
    ASSERT_TRUE(model);
    auto session = Session::create(model, SessionOptions{1, 64});
    ASSERT_TRUE(session.ok());
    const auto ids = token_stream(30);
    PerplexityOptions options;
    options.context_tokens = 8;
    auto stats = perplexity(**session, ids, options);
    ASSERT_TRUE(stats.ok()) << stats.error();
    EXPECT_EQ(stats->scored_tokens, ids.size() - 1);
    EXPECT_EQ(stats->evaluated_tokens, ids.size() - 1);  // windows share their edge token as input/target only
    EXPECT_EQ(stats->windows, 4u);                       // targets 1-8, 9-16, 17-24, 25-29
    EXPECT_EQ(stats->context_tokens, 8u);
    EXPECT_EQ(stats->stride_tokens, 8u);  // 0 = the window
    double expected = 0;
    for (size_t t = 1; t < ids.size(); ++t) expected += nll_with_history(**session, ids, (t - 1) / 8 * 8, t);
    EXPECT_NEAR(stats->total_nll, expected, kNllTolerance * ids.size());
    EXPECT_NEAR(stats->perplexity(), std::exp(expected / double(ids.size() - 1)), 1e-9);
    EXPECT_GT(stats->perplexity(), 1.0);
}

TEST(Perplexity, StridedWindowsKeepAtLeastContextMinusStrideTokensOfHistory) {
    auto model = small_moe_model();
    ASSERT_TRUE(model);
    auto session = Session::create(model, SessionOptions{1, 64});
    ASSERT_TRUE(session.ok());
    const auto ids = token_stream(25);
    PerplexityOptions options;
    options.context_tokens = 8;
    options.stride_tokens = 4;
    auto stats = perplexity(**session, ids, options);
    ASSERT_TRUE(stats.ok()) << stats.error();
    EXPECT_EQ(stats->scored_tokens, ids.size() - 1);
    EXPECT_GT(stats->evaluated_tokens, stats->scored_tokens);
    // Window w starts at 4w and scores targets after the previous window's last one (4w + 8).
    double expected = 0;
    for (size_t t = 1; t < ids.size(); ++t) {
        const size_t start = t <= 8 ? 0 : ((t - 9) / 4 + 1) * 4;
        expected += nll_with_history(**session, ids, start, t);
    }
    EXPECT_NEAR(stats->total_nll, expected, kNllTolerance * ids.size());

    // One window over the whole stream = plain causal scoring.
    PerplexityOptions whole;
    whole.context_tokens = 64;
    auto full = perplexity(**session, ids, whole);
    ASSERT_TRUE(full.ok());
    double plain = 0;
    for (size_t t = 1; t < ids.size(); ++t) plain += nll_with_history(**session, ids, 0, t);
    EXPECT_NEAR(full->total_nll, plain, kNllTolerance * ids.size());
    EXPECT_EQ(full->windows, 1u);
}

TEST(Perplexity, MaxScoredTokensCapsTheWork) {
    auto model = small_moe_model();
    ASSERT_TRUE(model);
    auto session = Session::create(model, SessionOptions{1, 64});
    ASSERT_TRUE(session.ok());
    PerplexityOptions options;
    options.context_tokens = 8;
    options.max_scored_tokens = 11;
    auto stats = perplexity(**session, token_stream(40), options);
    ASSERT_TRUE(stats.ok()) << stats.error();
    EXPECT_EQ(stats->scored_tokens, 11u);
}

TEST(Perplexity, BadInputAndCancellationGiveErrors) {
    auto model = small_moe_model();
    ASSERT_TRUE(model);
    auto session = Session::create(model, SessionOptions{1, 64});
    ASSERT_TRUE(session.ok());
    const auto ids = token_stream(20);
    expect_invalid(perplexity(**session, std::vector<int32_t>{5}, {}), "at least 2");
    PerplexityOptions too_long;
    too_long.context_tokens = 65;
    expect_invalid(perplexity(**session, ids, too_long), "exceeds the context of 64");
    PerplexityOptions bad_stride;
    bad_stride.context_tokens = 8;
    bad_stride.stride_tokens = 9;
    expect_invalid(perplexity(**session, ids, bad_stride), "stride 9");
    auto out_of_vocab = ids;
    out_of_vocab[7] = 300;
    expect_invalid(perplexity(**session, out_of_vocab, {}), "token 7 has id 300");
    CancelToken cancel;
    cancel.cancel();
    auto cancelled = perplexity(**session, ids, {}, {}, &cancel);
    ASSERT_FALSE(cancelled.ok());
    EXPECT_EQ(cancelled.kind(), ErrorKind::Cancelled) << cancelled.error();
    PerplexityOptions windows;
    windows.context_tokens = 4;
    int calls = 0;
    auto stopped = perplexity(**session, ids, windows, [&](uint64_t, uint64_t) { return ++calls < 2; });
    ASSERT_FALSE(stopped.ok());
    EXPECT_EQ(stopped.kind(), ErrorKind::Cancelled) << stopped.error();  // a progress callback's "stop" is a cancel
    EXPECT_EQ(calls, 2);
}

TEST(Perplexity, LlamaChunksScoreTheSecondHalfOfEachWholeChunkAfterABos) {
    auto model = small_moe_model();
    ASSERT_TRUE(model);
    auto session = Session::create(model, SessionOptions{1, 64});
    ASSERT_TRUE(session.ok());
    const auto ids = token_stream(29);  // 3 whole chunks of 8; the last 5 ids are never scored
    constexpr int32_t kBos = 1;
    auto stats = perplexity_llama_chunks(**session, ids, 8, kBos);
    ASSERT_TRUE(stats.ok()) << stats.error();
    EXPECT_EQ(stats->windows, 3u);
    EXPECT_EQ(stats->scored_tokens, 3u * (8 - 4 - 1));  // targets 5, 6, 7 of each chunk
    EXPECT_EQ(stats->evaluated_tokens, 3u * 7);
    EXPECT_EQ(stats->context_tokens, 8u);
    double expected = 0;
    for (size_t c = 0; c < 3; ++c) {
        std::vector<int32_t> chunk(ids.begin() + ptrdiff_t(c * 8), ids.begin() + ptrdiff_t(c * 8 + 8));
        chunk[0] = kBos;
        for (size_t t = 5; t < 8; ++t) expected += nll_with_history(**session, chunk, 0, t);
    }
    EXPECT_NEAR(stats->total_nll, expected, kNllTolerance * 9);

    // Without a BOS the chunk's own first id stays: a different (finite) number.
    auto own_first = perplexity_llama_chunks(**session, ids, 8, -1);
    ASSERT_TRUE(own_first.ok()) << own_first.error();
    EXPECT_EQ(own_first->scored_tokens, 9u);
    EXPECT_NE(own_first->total_nll, stats->total_nll);

    // The cap stops after the chunk that reaches it.
    auto capped = perplexity_llama_chunks(**session, ids, 8, kBos, 4);
    ASSERT_TRUE(capped.ok()) << capped.error();
    EXPECT_EQ(capped->windows, 2u);
    EXPECT_EQ(capped->scored_tokens, 6u);
}

TEST(Perplexity, LlamaChunksRefuseBadInput) {
    auto model = small_moe_model();
    ASSERT_TRUE(model);
    auto session = Session::create(model, SessionOptions{1, 64});
    ASSERT_TRUE(session.ok());
    const auto ids = token_stream(40);
    expect_invalid(perplexity_llama_chunks(**session, ids, 3, 1), "at least 4");
    expect_invalid(perplexity_llama_chunks(**session, ids, 65, 1), "exceeds the context of 64");
    expect_invalid(perplexity_llama_chunks(**session, token_stream(15), 8, 1), "need at least 16");
    expect_invalid(perplexity_llama_chunks(**session, ids, 8, 300), "BOS id 300");
    auto out_of_vocab = ids;
    out_of_vocab[39] = -2;
    expect_invalid(perplexity_llama_chunks(**session, out_of_vocab, 8, 1), "token 39 has id -2");
    CancelToken cancel;
    cancel.cancel();
    auto cancelled = perplexity_llama_chunks(**session, ids, 8, 1, 0, {}, &cancel);
    ASSERT_FALSE(cancelled.ok());
    EXPECT_EQ(cancelled.kind(), ErrorKind::Cancelled) << cancelled.error();
    int calls = 0;
    auto stopped = perplexity_llama_chunks(**session, ids, 8, 1, 0, [&](uint64_t, uint64_t) { return ++calls < 2; });
    ASSERT_FALSE(stopped.ok());
    EXPECT_EQ(stopped.kind(), ErrorKind::Cancelled) << stopped.error();
    EXPECT_EQ(calls, 2);
}

TEST(Perplexity, DocumentsSplitLikeTheTrainingEvaluation) {
    EXPECT_EQ(split_documents("One.\n\nTwo.\n \n\nThree.\n"), (std::vector<std::string>{"One.", "Two.", "Three."}));
    EXPECT_EQ(split_documents("a\nb\n\n\n"), (std::vector<std::string>{"a\nb"}));
    EXPECT_EQ(split_documents("  x <|endoftext|>\n\ny\n\nz<|endoftext|><|endoftext|>"),
              (std::vector<std::string>{"x", "y\n\nz"}));  // with the marker, blank lines stay inside documents
    EXPECT_TRUE(split_documents(" \n\n\t").empty());
}

} // namespace
} // namespace cflow::test
