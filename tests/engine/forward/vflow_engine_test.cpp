// The engine runs a .vflow file unchanged: the same synthetic dense Sequential model is
// converted to .cflow and to .vflow, both are loaded with Model::load and stepped through
// Session for 16 tokens, and the logits must be bit-identical (the tiles are the same bytes
// and the forward pass does the same arithmetic in the same order).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

// Logits after each of `tokens`, in order: [tokens x vocab] f32.
std::vector<std::vector<float>> run_tokens(const std::string& path, const std::vector<int32_t>& tokens, unsigned threads) {
    std::vector<std::vector<float>> out;
    auto model = Model::load(path);
    EXPECT_TRUE(model.ok()) << model.error();
    if (!model.ok()) return out;
    auto session = Session::create(model.value(), SessionOptions{threads, 0});
    EXPECT_TRUE(session.ok()) << session.error();
    if (!session.ok()) return out;
    for (int32_t token : tokens) {
        auto logits = (*session)->step(token);
        EXPECT_TRUE(logits.ok()) << logits.error();
        if (!logits.ok()) return out;
        out.emplace_back(logits->begin(), logits->end());
    }
    return out;
}

void expect_bit_identical(const SyntheticSpec& spec, const ConvertOptions& base, const std::string& name) {
    const SourceModel source = make_synthetic_model(spec);
    const auto dir = temp_dir("vflow-engine-" + name);
    const std::string cflow_path = (dir / "m.cflow").string(), vflow_path = (dir / "m.vflow").string();
    ConvertOptions options = base;
    options.format = ContainerFormat::Cflow;
    auto rc = convert_to_cflow(source, cflow_path, options);
    ASSERT_TRUE(rc.ok()) << rc.error();
    options.format = ContainerFormat::Vflow;
    auto rv = convert_to_cflow(source, vflow_path, options);
    ASSERT_TRUE(rv.ok()) << rv.error();

    std::vector<int32_t> tokens;  // 16 tokens spread over the vocabulary, with repeats
    for (int32_t i = 0; i < 16; ++i) tokens.push_back((i * 37 + 5) % int32_t(spec.vocab));
    tokens[9] = tokens[3];
    for (unsigned threads : {1u, 3u}) {
        SCOPED_TRACE(::testing::Message() << "threads " << threads);
        const auto from_cflow = run_tokens(cflow_path, tokens, threads);
        const auto from_vflow = run_tokens(vflow_path, tokens, threads);
        ASSERT_EQ(from_cflow.size(), tokens.size());
        ASSERT_EQ(from_vflow.size(), tokens.size());
        for (size_t t = 0; t < tokens.size(); ++t) {
            ASSERT_EQ(from_cflow[t].size(), spec.vocab);
            ASSERT_EQ(from_vflow[t].size(), spec.vocab);
            EXPECT_EQ(std::memcmp(from_cflow[t].data(), from_vflow[t].data(), spec.vocab * sizeof(float)), 0)
                << "logits differ after token " << t;
            // Not a degenerate run: the logits vary over the vocabulary and over positions.
            EXPECT_NE(from_cflow[t][0], from_cflow[t][1]);
        }
        EXPECT_NE(std::memcmp(from_cflow[0].data(), from_cflow[1].data(), spec.vocab * sizeof(float)), 0);
    }
}

TEST(VflowEngine, DenseQ4LogitsAreBitIdenticalToCflow) {
    SyntheticSpec spec;
    spec.d_model = 128;
    spec.n_layers = 3;
    spec.n_heads = 4;
    spec.n_kv_heads = 2;
    spec.head_dim = 32;
    spec.d_ff = 160;
    spec.vocab = 300;
    spec.weight_std = 0.1f;
    expect_bit_identical(spec, {.weight_quant = DType::Q4_0, .embedding_quant = DType::Q8_0, .threads = 2}, "q4");
}

TEST(VflowEngine, TiedBiasQkNormF32LogitsAreBitIdenticalToCflow) {
    SyntheticSpec spec;
    spec.n_layers = 2;
    spec.qkv_bias = true;
    spec.qk_norm = true;
    spec.tied = true;
    spec.seed = 5;
    expect_bit_identical(spec, {.weight_quant = DType::F32, .threads = 2}, "tied-f32");
}

} // namespace
} // namespace cflow::test
