// The conversion wizard's default quantisation (issue 37): a source's own type where the
// engine runs it, else the smallest type within the weight-change budget; measured on the real
// stories260K checkpoint (F32) and the llama-2-tiny-random GGUF (F16).
#include <gtest/gtest.h>

#include "cflow/formats/source_model.h"
#include "cflow/formats/default_quantisation.h"
#include "test_support.h"

namespace {

using cflow::DType;
using cflow::choose_default_quantisation;
using cflow::QuantCandidate;
using cflow::SourceMatrixTypes;

// Sizes and changes shaped like a large model's: every K-quant is its own size.
std::vector<QuantCandidate> large_model_candidates() {
    return {{DType::Q4_0, 4500, 0.088}, {DType::Q4_K, 4500, 0.070}, {DType::Q5_K, 5500, 0.035},
            {DType::Q6_K, 6560, 0.018}, {DType::Q8_0, 8500, 0.006}, {DType::F16, 16000, 0.0002}};
}

TEST(DefaultQuantisation, AnF32SourceGetsTheSmallestTypeWithinTheBudget) {
    const auto d = choose_default_quantisation(SourceMatrixTypes{0, 0, 0, 40}, large_model_candidates());
    EXPECT_EQ(d.class_type, DType::Q6_K);
    EXPECT_FALSE(d.keeps_source_types);
    EXPECT_NE(d.reason.find("Default q6_k: the smallest type"), std::string::npos) << d.reason;
    EXPECT_NE(d.reason.find("(1.8%)"), std::string::npos) << d.reason;
    // The next smaller type and what it costs: q5_k, 16.2% smaller, 3.5% RMS.
    EXPECT_NE(d.reason.find("q5_k would make it"), std::string::npos) << d.reason;
    EXPECT_NE(d.reason.find("16.2% smaller"), std::string::npos) << d.reason;
    EXPECT_NE(d.reason.find("3.5% RMS"), std::string::npos) << d.reason;
}

TEST(DefaultQuantisation, ATieInSizeGoesToTheMorePreciseType) {
    // Widths no super-block divides: every K-quant falls back to q8_0's bytes and values.
    const std::vector<QuantCandidate> candidates = {{DType::Q4_0, 190, 0.088}, {DType::Q4_K, 330, 0.006},
                                                    {DType::Q5_K, 330, 0.006}, {DType::Q6_K, 330, 0.006},
                                                    {DType::Q8_0, 330, 0.006}, {DType::F16, 600, 0.0001}};
    const auto d = choose_default_quantisation(SourceMatrixTypes{0, 0, 0, 40}, candidates);
    EXPECT_EQ(d.class_type, DType::Q8_0);
    EXPECT_NE(d.reason.find("q4_0 would make it"), std::string::npos) << d.reason;
}

TEST(DefaultQuantisation, ABf16SourceIsQuantisedAnF16OneAndAQuantisedGgufKeepTheirTypes) {
    EXPECT_EQ(choose_default_quantisation(SourceMatrixTypes{0, 0, 30, 2}, large_model_candidates()).class_type, DType::Q6_K)
        << "the engine has no bf16 tiles";
    const auto f16 = choose_default_quantisation(SourceMatrixTypes{0, 30, 0, 1}, large_model_candidates());
    EXPECT_EQ(f16.class_type, DType::F16);
    EXPECT_NE(f16.reason.find("the file's own type"), std::string::npos) << f16.reason;
    EXPECT_NE(f16.reason.find("q8_0 would make it"), std::string::npos) << f16.reason;
    const auto kept = choose_default_quantisation(SourceMatrixTypes{28, 0, 0, 2}, large_model_candidates());
    EXPECT_TRUE(kept.keeps_source_types);
    EXPECT_NE(kept.reason.find("copied bit for bit"), std::string::npos) << kept.reason;
}

TEST(DefaultQuantisation, NothingWithinTheBudgetKeepsF32) {
    const std::vector<QuantCandidate> candidates = {{DType::Q4_0, 100, 0.2}, {DType::Q8_0, 200, 0.05}, {DType::F16, 300, 0.03}};
    EXPECT_EQ(choose_default_quantisation(SourceMatrixTypes{0, 0, 0, 4}, candidates).class_type, DType::F32);
}

TEST(DefaultQuantisation, MeasuredOnTheSharedTinyModels) {
    const auto stories = cflow::test::shared_asset("assets/models/llama2c-stories260K/stories260K.gguf");
    const auto random = cflow::test::shared_asset("assets/models-random/ollama-llama-2-tiny-random/llama-2-tiny-random.gguf");
    if (stories.empty() || random.empty()) GTEST_SKIP() << "needs ../shared";
    auto source = cflow::open_source_model(stories.string());
    ASSERT_TRUE(source.ok()) << source.error();
    const auto types = cflow::count_source_matrix_types(*source);
    EXPECT_EQ(types.f32, 5u * 7u + 2u) << "7 matrices a layer, the embeddings and the stored LM head";
    auto d = cflow::default_quantisation(*source, {});
    ASSERT_TRUE(d.ok()) << d.error();
    EXPECT_EQ(d->class_type, DType::Q8_0) << d->reason;  // q4_0 moves them by 8.8% (validation: warn, 77% top-1)

    auto f16 = cflow::open_source_model(random.string());
    ASSERT_TRUE(f16.ok()) << f16.error();
    EXPECT_GT(cflow::count_source_matrix_types(*f16).f16, 0u);
    auto kept = cflow::default_quantisation(*f16, {});
    ASSERT_TRUE(kept.ok()) << kept.error();
    EXPECT_EQ(kept->class_type, DType::F16) << kept->reason;
}

} // namespace
