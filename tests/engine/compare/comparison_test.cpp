// The comparison runner: every chosen metric measured and equal to the engine's own figure
// (perplexity(), analyze_file()), agreement exact for two bit-identical configurations and not
// for two different models, a tokenizer mismatch refused up front, progress, cancellation,
// request checks.
#include <cmath>

#include "cflow/engine/compare/agreement.h"
#include "cflow/engine/compare/comparison.h"
#include "cflow/engine/compare/speed_bench.h"
#include "cflow/engine/forward/critical_path.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/generation/perplexity.h"
#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

std::string write_model(const std::string& name, uint64_t seed, uint32_t vocab = 300,
                        ContainerFormat format = ContainerFormat::Cflow) {
    SyntheticSpec spec;
    spec.n_layers = 2;
    spec.n_experts = 4;
    spec.top_k = 2;
    spec.expert_d_ff = 32;
    spec.combine_style = CombineStyle::DelayedSum;
    spec.dense_delay = 1;
    spec.expert_delay = 1;
    spec.max_seq_len = 64;
    spec.seed = seed;
    spec.vocab = vocab;
    const char* extension = format == ContainerFormat::Vflow ? ".vflow" : ".cflow";
    const auto path = (temp_dir("comparison_" + name) / (name + extension)).string();  // temp_dir empties its folder
    ConvertOptions options;
    options.weight_quant = DType::F32;
    options.format = format;
    auto r = convert_to_cflow(make_synthetic_model(spec), path, options);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error());
    return path;
}

const char* kText =
    "Once upon a time there was a little fox who lived in the woods.\n\n"
    "The fox liked to run and jump. One day it found a red ball under a tree.\n\n"
    "It played with the ball all day and was very happy.";

CompareRequest two_entry_request(const std::string& a, const std::string& b) {
    CompareRequest request;
    request.entries = {CompareEntry{"a", a, 1}, CompareEntry{"b", b, 1}};
    request.workloads.agreement = true;
    request.promptTokens = 8;
    request.warmupTokens = 1;
    request.decodeTokens = 4;
    request.text = kText;
    request.textName = "fox";
    request.contextTokens = 32;
    request.maxScoredTokens = 48;
    return request;
}

TEST(Comparison, MeasuresEveryChosenMetricAsTheEngineDoes) {
    const auto a = write_model("seed1", 1), b = write_model("seed2", 2);
    auto report = run_comparison(two_entry_request(a, b));
    ASSERT_TRUE(report.ok()) << report.error();
    ASSERT_EQ(report->rows.size(), 2u);
    for (const CompareRow& row : report->rows)
        for (size_t m = 0; m < kCompareMetricCount; ++m) {
            if (CompareMetric(m) == CompareMetric::TimeToFirstTokenMs) {
                EXPECT_FALSE(row.values[m]) << "as received: measured for endpoint entries only";
                continue;
            }
            ASSERT_TRUE(row.values[m].has_value()) << row.displayName << " " << compare_metric_key(CompareMetric(m));
            EXPECT_TRUE(std::isfinite(*row.values[m])) << compare_metric_key(CompareMetric(m));
        }
    for (size_t i = 0; i < 2; ++i) {
        const CompareRow& row = report->rows[i];
        auto model = Model::load(i == 0 ? a : b).value();
        // Perplexity: the engine's sliding-window number on the same text (the documents cut to
        // about 48 scored tokens) and window.
        SessionOptions options{1, 32};
        auto session = Session::create(model, options).value();
        const auto documents = common_scored_documents({&model->tokenizer()}, split_documents(kText), 48);
        const auto ids = tokenize_documents(model->tokenizer(), documents);
        EXPECT_LE(ids.size(), 49u);
        EXPECT_GT(ids.size(), 40u);
        auto ppl = perplexity(*session, ids, PerplexityOptions{});
        ASSERT_TRUE(ppl.ok());
        EXPECT_NEAR(*row.value(CompareMetric::Perplexity), ppl->perplexity(), 1e-9);
        // Bits per byte over the text's own bytes: this 300-token vocabulary has no "▁" and spells
        // every space in three byte tokens, so its tokens decode to more bytes than the text has.
        size_t text_bytes = 0;
        for (const std::string& d : documents) text_bytes += d.size();
        EXPECT_EQ(report->scoredTextBytes, text_bytes);
        EXPECT_GT(ppl->scored_bytes, text_bytes);
        EXPECT_NEAR(*row.value(CompareMetric::BitsPerByte), ppl->total_nll / std::log(2.0) / double(text_bytes), 1e-12);
        auto path = analyze_file(model->file()).value();
        EXPECT_DOUBLE_EQ(*row.value(CompareMetric::BNaiveMiB), path.actual_totals.b_naive_bytes / kBytesPerMiB);
        EXPECT_DOUBLE_EQ(*row.value(CompareMetric::BCriticalMiB), path.actual_totals.b_critical_bytes / kBytesPerMiB);
        // Bytes per token: the streams add up to the total, and a MoE model reads experts.
        double streams = 0;
        for (CompareMetric m : {CompareMetric::AttentionBytesPerToken, CompareMetric::DenseBytesPerToken,
                                CompareMetric::ExpertBytesPerToken, CompareMetric::RouterBytesPerToken,
                                CompareMetric::VocabBytesPerToken})
            streams += *row.value(m);
        EXPECT_NEAR(streams, *row.value(CompareMetric::BytesPerToken), 1e-6);
        EXPECT_GT(*row.value(CompareMetric::ExpertBytesPerToken), 0);
        EXPECT_GT(*row.value(CompareMetric::DecodeTokPerS), 0);
        EXPECT_GT(*row.value(CompareMetric::PrefillTokPerS), 0);
        EXPECT_GE(*row.value(CompareMetric::ExpertWaitShare), 0);
        EXPECT_LT(*row.value(CompareMetric::ExpertWaitShare), 1);
        EXPECT_EQ(row.threads, 1u);
    }
    // Two different random models rarely agree; the reference row is exact by definition.
    EXPECT_EQ(*report->rows[0].value(CompareMetric::Top1Agreement), 1.0);
    EXPECT_EQ(*report->rows[0].value(CompareMetric::MeanKlNats), 0.0);
    EXPECT_LT(*report->rows[1].value(CompareMetric::Top1Agreement), 1.0);
    EXPECT_GT(*report->rows[1].value(CompareMetric::MeanKlNats), 1e-4);
    EXPECT_EQ(report->referenceName, "a");
    EXPECT_EQ(report->textName, "fox");
    EXPECT_GT(report->textTokens, 48u);
    EXPECT_FALSE(report->tokenizersDiffer);
    EXPECT_EQ(compare_quality_metric(*report), CompareMetric::Perplexity);
}

TEST(Comparison, OneModelUnderTwoExpertFetchArmsAgreesExactly) {
    const auto a = write_model("arms", 3);
    CompareRequest request = two_entry_request(a, a);
    request.entries[0].label.clear();
    request.entries[1].label.clear();
    request.entries[1].expertFetch = ExpertFetch::Sync;
    request.workloads.speed = request.workloads.criticalPath = false;
    auto report = run_comparison(request);
    ASSERT_TRUE(report.ok()) << report.error();
    EXPECT_EQ(report->rows[0].displayName, "arms.cflow (mapped, 1 thread)");
    EXPECT_EQ(report->rows[1].displayName, "arms.cflow (sync, 1 thread)");
    EXPECT_EQ(*report->rows[1].value(CompareMetric::Top1Agreement), 1.0);
    EXPECT_LT(*report->rows[1].value(CompareMetric::MeanKlNats), 1e-12);
    EXPECT_DOUBLE_EQ(*report->rows[0].value(CompareMetric::Perplexity), *report->rows[1].value(CompareMetric::Perplexity));
    EXPECT_FALSE(report->rows[0].value(CompareMetric::DecodeTokPerS).has_value());  // speed not chosen
    EXPECT_FALSE(report->rows[0].value(CompareMetric::BCriticalMiB).has_value());
    EXPECT_TRUE(report->rows[0].value(CompareMetric::ExpertBytesPerToken).has_value());
}

TEST(Comparison, CflowAgainstVflowOfOneCheckpointGivesTheSameDistributions) {
    const auto cflow = write_model("container", 7), vflow = write_model("container_v", 7, 300, ContainerFormat::Vflow);
    CompareRequest request = two_entry_request(cflow, vflow);
    request.workloads.speed = false;
    auto report = run_comparison(request);
    ASSERT_TRUE(report.ok()) << report.error();
    EXPECT_EQ(*report->rows[1].value(CompareMetric::Top1Agreement), 1.0);
    EXPECT_LT(*report->rows[1].value(CompareMetric::MeanKlNats), 1e-12);
    EXPECT_DOUBLE_EQ(*report->rows[0].value(CompareMetric::Perplexity), *report->rows[1].value(CompareMetric::Perplexity));
    EXPECT_TRUE(report->rows[1].value(CompareMetric::BCriticalMiB).has_value());
}

TEST(Comparison, AgreementAcrossDifferentTokenizersIsRefusedBeforeAnythingRuns) {
    const auto a = write_model("vocab300", 1), b = write_model("vocab320", 1, 320);
    bool measured = false;
    auto report = run_comparison(two_entry_request(a, b), [&](const CompareProgressInfo& p) {
        if (p.stage != "loading") measured = true;
    });
    ASSERT_FALSE(report.ok());
    EXPECT_EQ(report.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(report.error().find("need one tokenizer"), std::string::npos) << report.error();
    EXPECT_NE(report.error().find("vocabulary of 300 vs 320"), std::string::npos) << report.error();
    EXPECT_FALSE(measured);
    // Without agreement the same pair compares (perplexity uses each model's own tokenizer).
    CompareRequest request = two_entry_request(a, b);
    request.workloads.agreement = false;
    EXPECT_TRUE(run_comparison(request).ok());
}

TEST(Comparison, ProgressRisesToOneAndCancelStops) {
    const auto a = write_model("progress", 4);
    std::vector<double> fractions;
    auto report = run_comparison(two_entry_request(a, a), [&](const CompareProgressInfo& p) { fractions.push_back(p.fraction); });
    ASSERT_TRUE(report.ok()) << report.error();
    ASSERT_GT(fractions.size(), 4u);
    for (size_t i = 1; i < fractions.size(); ++i) EXPECT_GE(fractions[i], fractions[i - 1] - 1e-12);
    EXPECT_DOUBLE_EQ(fractions.back(), 1.0);

    CancelToken cancel;
    auto cancelled = run_comparison(two_entry_request(a, a), [&](const CompareProgressInfo& p) {
        if (p.stage == "perplexity") cancel.cancel();
    }, &cancel);
    ASSERT_FALSE(cancelled.ok());
    EXPECT_EQ(cancelled.kind(), ErrorKind::Cancelled);
}

TEST(Comparison, BadRequestsAreOneLineErrors) {
    const auto a = write_model("requests", 5);
    CompareRequest one = two_entry_request(a, a);
    one.entries.clear();
    auto r = run_comparison(one);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find("1 to 8"), std::string::npos);
    CompareRequest alone = two_entry_request(a, a);  // one local entry beside endpoint entries measured elsewhere
    alone.entries.resize(1);
    alone.workloads = CompareWorkloads{true, false, false, false, false, false};
    auto single = run_comparison(alone);
    ASSERT_TRUE(single.ok()) << single.error();
    EXPECT_EQ(single->rows.size(), 1u);
    CompareRequest missing = two_entry_request(a, (temp_dir("comparison_absent") / "absent.cflow").string());
    r = run_comparison(missing);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().rfind("b: ", 0), 0u) << r.error();  // names the entry
    CompareRequest blank = two_entry_request(a, a);
    blank.text = "  \n\n ";
    r = run_comparison(blank);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find("empty"), std::string::npos);
    CompareRequest ref = two_entry_request(a, a);
    ref.referenceEntry = 2;
    EXPECT_FALSE(run_comparison(ref).ok());
    CompareRequest none = two_entry_request(a, a);
    none.workloads = CompareWorkloads{false, false, false, false, false, false};
    EXPECT_FALSE(run_comparison(none).ok());
}

TEST(Comparison, MetricKeysRoundTrip) {
    for (size_t m = 0; m < kCompareMetricCount; ++m) {
        const auto key = compare_metric_key(CompareMetric(m));
        ASSERT_EQ(parse_compare_metric(key), CompareMetric(m)) << key;
        EXPECT_FALSE(compare_metric_label(CompareMetric(m)).empty());
    }
    EXPECT_FALSE(parse_compare_metric("tokens_per_second").has_value());
    EXPECT_TRUE(compare_metric_higher_is_better(CompareMetric::DecodeTokPerS));
    EXPECT_FALSE(compare_metric_higher_is_better(CompareMetric::Perplexity));
}

TEST(SpeedBench, StreamsAddUpAndMappedExpertsNeverWait) {
    auto model = Model::load(write_model("speed", 6)).value();
    SpeedPlan plan;
    plan.threads = 1;
    plan.promptTokens = 4;
    plan.warmupTokens = 1;
    plan.decodeTokens = 3;
    auto m = measure_speed(model, plan);
    ASSERT_TRUE(m.ok()) << m.error();
    double sum = 0;
    for (double b : m->decodeBytesPerTokenByStream) sum += b;
    EXPECT_DOUBLE_EQ(sum, m->decodeBytesPerToken);
    EXPECT_EQ(m->expertWaitShare, 0.0);
    EXPECT_EQ(m->threads, 1u);
    CancelToken cancel;
    cancel.cancel();
    auto c = measure_speed(model, plan, &cancel);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.kind(), ErrorKind::Cancelled);
}

} // namespace
} // namespace cflow::test
