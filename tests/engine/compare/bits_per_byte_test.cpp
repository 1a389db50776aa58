// Bits per byte (issue 37): perplexity is per token, so a 512-token vocabulary "beats" a 4096-token
// one by predicting smaller pieces. The perplexity pass counts the UTF-8 bytes its scored targets
// stand for; bits per byte = total_nll / ln 2 / those bytes. Checked against byte counts known
// from the text itself, for two tokenizers on one text (the same bytes), and in the comparison
// (the same text for every entry; ranked by bits per byte when the tokenizers differ).
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numbers>

#include "cflow/engine/compare/comparison.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/generation/perplexity.h"
#include "cflow/engine/tokenizer/tokenizer.h"
#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

// Three documents, one blank line apart; the byte counts below are the documents' own.
constexpr const char* kBpbDocuments[] = {
    "Once upon a time there was a little fox who lived in the woods.",
    "The fox liked to run and jump. One day it found a red ball under a tree.",
    "It played with the ball all day and was very happy.",
};

std::string bpb_text() {
    return std::string(kBpbDocuments[0]) + "\n\n" + kBpbDocuments[1] + "\n\n" + kBpbDocuments[2] + "\n";
}

uint64_t bpb_text_bytes() {
    uint64_t bytes = 0;
    for (const char* doc : kBpbDocuments) bytes += std::strlen(doc);
    return bytes;  // 63 + 72 + 51
}

std::string bpb_default_model() { return (std::filesystem::path(CFLOW_SOURCE_DIR) / "resources" / "default-model.cflow").string(); }

// A synthetic model whose 600-token vocabulary (byte tokens, words, letters, letter pairs) is not
// the default model's 4096-token one.
std::string bpb_synthetic_model() {
    SyntheticSpec spec;
    spec.n_layers = 1;
    spec.max_seq_len = 64;
    spec.seed = 11;
    spec.vocab = 600;
    const auto path = (temp_dir("bits_per_byte_model") / "vocab600.cflow").string();
    ConvertOptions options;
    options.weight_quant = DType::F32;
    auto r = convert_to_cflow(make_synthetic_model(spec), path, options);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error());
    return path;
}

PerplexityStats bpb_score(const std::string& path, const std::vector<std::string>& documents, uint64_t max_scored = 0) {
    auto model = Model::load(path);
    EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error());
    auto session = Session::create(model.value(), SessionOptions{1, 64}).value();
    PerplexityOptions options;
    options.max_scored_tokens = max_scored;
    auto stats = perplexity(*session, tokenize_documents(model.value()->tokenizer(), documents), options);
    EXPECT_TRUE(stats.ok()) << (stats.ok() ? "" : stats.error());
    return stats.ok() ? stats.value() : PerplexityStats{};
}

TEST(BitsPerByte, IsTheLossInBitsOverTheBytesOfTheScoredText) {
    const auto documents = split_documents(bpb_text());
    ASSERT_EQ(documents.size(), 3u);
    const PerplexityStats all = bpb_score(bpb_default_model(), documents);
    // Every token after the first BOS is scored: the bytes are the three documents' (BOS and EOS
    // stand for no text, SPM's dummy prefix is no byte of the text).
    EXPECT_EQ(all.scored_bytes, bpb_text_bytes());
    EXPECT_EQ(bpb_text_bytes(), 186u);
    ASSERT_GT(all.total_nll, 0);
    EXPECT_DOUBLE_EQ(all.bits_per_byte(), all.total_nll / std::numbers::ln2 / 186.0);
    // A default-model story costs well under 8 bits a byte and over 1.
    EXPECT_GT(all.bits_per_byte(), 1.0);
    EXPECT_LT(all.bits_per_byte(), 8.0);

    // Ten scored targets: the bytes those ten tokens decode to, as decode() gives them.
    auto model = Model::load(bpb_default_model()).value();
    const auto ids = tokenize_documents(model->tokenizer(), documents);
    const PerplexityStats ten = bpb_score(bpb_default_model(), documents, 10);
    ASSERT_EQ(ten.scored_tokens, 10u);
    const std::vector<int32_t> targets(ids.begin() + 1, ids.begin() + 11);
    EXPECT_EQ(ten.scored_bytes, model->tokenizer().decode(targets).size());
    EXPECT_EQ(model->tokenizer().decode(targets), std::string(kBpbDocuments[0]).substr(0, ten.scored_bytes));
}

TEST(BitsPerByte, TwoTokenizersOnOneTextDivideByTheSameBytes) {
    const std::string synthetic = bpb_synthetic_model();
    const auto documents = split_documents(bpb_text());
    const PerplexityStats a = bpb_score(bpb_default_model(), documents);
    const PerplexityStats b = bpb_score(synthetic, documents);
    EXPECT_NE(a.scored_tokens, b.scored_tokens);  // different tokens...
    EXPECT_EQ(a.scored_bytes, bpb_text_bytes());  // ...the same bytes
    EXPECT_EQ(b.scored_bytes, bpb_text_bytes());
    EXPECT_DOUBLE_EQ(b.bits_per_byte(), b.total_nll / std::numbers::ln2 / double(bpb_text_bytes()));
}

TEST(BitsPerByte, TheComparisonScoresOneTextAndRanksByBitsPerByteAcrossTokenizers) {
    const std::string synthetic = bpb_synthetic_model();
    CompareRequest request;
    request.entries = {CompareEntry{"synthetic", synthetic, 1}, CompareEntry{"default", bpb_default_model(), 1}};
    request.workloads = CompareWorkloads{false, true, false, false, false, false};
    request.text = bpb_text();
    request.contextTokens = 64;
    request.maxScoredTokens = 30;  // fewer than either tokenizer's stream: the text is cut
    auto report = run_comparison(request);
    ASSERT_TRUE(report.ok()) << report.error();
    EXPECT_TRUE(report->tokenizersDiffer);
    EXPECT_EQ(compare_quality_metric(*report), CompareMetric::BitsPerByte);

    // The common text: whole words of the first document, the same for both tokenizers.
    auto a = Model::load(synthetic).value();
    auto b = Model::load(bpb_default_model()).value();
    const auto common = common_scored_documents({&a->tokenizer(), &b->tokenizer()}, split_documents(bpb_text()), 30);
    ASSERT_EQ(common.size(), 1u);
    EXPECT_EQ(std::string(kBpbDocuments[0]).rfind(common[0], 0), 0u) << common[0];
    EXPECT_EQ(kBpbDocuments[0][common[0].size()], ' ') << common[0];
    EXPECT_EQ(report->scoredTextBytes, common[0].size());
    for (size_t i = 0; i < 2; ++i) {
        const PerplexityStats stats = bpb_score(i == 0 ? synthetic : bpb_default_model(), common);
        EXPECT_EQ(stats.scored_bytes, report->scoredTextBytes);
        EXPECT_LE(stats.scored_tokens, 30u);
        EXPECT_NEAR(*report->rows[i].value(CompareMetric::Perplexity), stats.perplexity(), 1e-9);
        EXPECT_NEAR(*report->rows[i].value(CompareMetric::BitsPerByte), stats.bits_per_byte(), 1e-12);
    }
    // The trained default model needs fewer bits a byte than random weights.
    EXPECT_EQ(rank_compare_rows(*report, CompareMetric::BitsPerByte), (std::vector<size_t>{1, 0}));

    // One tokenizer: perplexity ranks, and the whole text is scored when it fits.
    request.entries = {CompareEntry{"x", bpb_default_model(), 1}, CompareEntry{"y", bpb_default_model(), 2}};
    request.maxScoredTokens = 1000;
    auto same = run_comparison(request);
    ASSERT_TRUE(same.ok()) << same.error();
    EXPECT_FALSE(same->tokenizersDiffer);
    EXPECT_EQ(compare_quality_metric(*same), CompareMetric::Perplexity);
    EXPECT_EQ(same->scoredTextBytes, bpb_text_bytes());
}

TEST(BitsPerByte, RankingPutsTheBestFirstForEitherDirection) {
    CompareReport report;
    for (double v : {3.0, 1.0, 2.0}) {
        CompareRow row;
        row.values[size_t(CompareMetric::BitsPerByte)] = v;
        row.values[size_t(CompareMetric::DecodeTokPerS)] = v;
        report.rows.push_back(row);
    }
    report.rows.push_back(CompareRow{});  // not measured: left out
    EXPECT_EQ(rank_compare_rows(report, CompareMetric::BitsPerByte), (std::vector<size_t>{1, 2, 0}));
    EXPECT_EQ(rank_compare_rows(report, CompareMetric::DecodeTokPerS), (std::vector<size_t>{0, 2, 1}));
    EXPECT_FALSE(compare_metric_higher_is_better(CompareMetric::BitsPerByte));
    EXPECT_EQ(compare_metric_key(CompareMetric::BitsPerByte), "bits_per_byte");
}

} // namespace
} // namespace cflow::test
