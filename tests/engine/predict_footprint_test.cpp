// A model's footprint (predict/model_footprint.h) from a real file: the weights per token counted
// by hand from the synthetic geometry.
#include <gtest/gtest.h>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/predict/model_footprint.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow {
namespace {

TEST(PredictFootprint, DenseWeightsPerTokenAsCountedByHand) {
    test::SyntheticSpec spec;  // d 64, 2 layers, 4 heads of 16 (4 KV heads), d_ff 128, vocab 300
    const auto path = test::write_synthetic_cflow(spec, test::temp_dir("predict_footprint") / "dense.cflow", DType::Q8_0);
    auto model = Model::load(path);
    ASSERT_TRUE(model) << model.error();
    auto f = model_footprint(**model);
    ASSERT_TRUE(f) << f.error();
    // Per layer: Q, K, V, O 64 x 64 each, gate and up 128 x 64, down 64 x 128; the LM head 300 x 64.
    const double perLayer = 4 * 64 * 64 + 3 * 128 * 64;
    EXPECT_DOUBLE_EQ(f->perToken.totalWeights(), 2 * perLayer + 300 * 64);
    EXPECT_DOUBLE_EQ(f->perToken.weights[size_t(DType::Q8_0)], f->perToken.totalWeights());
    EXPECT_EQ(f->perToken.dominant(), DType::Q8_0);
    // Stored adds the embedding table, which a token reads one row of.
    EXPECT_DOUBLE_EQ(f->stored.totalWeights(), 2 * perLayer + 2 * 300 * 64);
    EXPECT_GT(f->untouchedEmbeddingBytes, 0u);
    EXPECT_EQ(f->passes, 2u);
    EXPECT_EQ(f->moePasses, 0u);
    EXPECT_EQ(f->expertBankBytes, 0u);
    // KV: K and V x 2 passes x 10 positions x 4 heads x 16 x 4 B.
    EXPECT_DOUBLE_EQ(f->kvBytesAt(10, 4), 2.0 * 2 * 10 * 4 * 16 * 4);
    EXPECT_EQ(f->fileBytes, (*model)->file().file().size());
}

TEST(PredictFootprint, MoeCountsTopKOfTheExperts) {
    test::SyntheticSpec spec = test::delayed_moe_spec();  // 4 layers, 8 experts of 64, top-2
    const auto path = test::write_synthetic_cflow(spec, test::temp_dir("predict_footprint_moe") / "moe.cflow", DType::Q8_0);
    auto model = Model::load(path);
    ASSERT_TRUE(model) << model.error();
    auto f = model_footprint(**model);
    ASSERT_TRUE(f) << f.error();
    EXPECT_EQ(f->moePasses, spec.n_layers);
    // Each expert: gate and up 64 x d, down d x 64; top-2 of them in every layer pass.
    const double expertWeights = 3.0 * 64 * spec.d_model;
    EXPECT_DOUBLE_EQ(f->routedPerToken.totalWeights(), spec.n_layers * spec.top_k * expertWeights);
    EXPECT_GT(f->expertBankBytes, 0u);
    EXPECT_EQ(f->expertBankBytes % spec.n_experts, 0u);
    EXPECT_GE(f->expertBytes * spec.n_experts * spec.n_layers, f->expertBankBytes);
}

} // namespace
} // namespace cflow
