// Qwen3 and Qwen3-MoE end to end, each from the GGUF llama.cpp's converter writes (architecture
// qwen3 / qwen3moe) and from the Hugging Face folder, against an independent float64 numpy
// forward written from transformers' modeling_qwen3.py / modeling_qwen3_moe.py
// (tests/reference/hf_llama_reference.py; fixtures qwen3/ and qwen3moe/ of make_ggml_fixtures.py):
// per-head Q/K RMSNorm before NEOX RoPE, head_dim 64 where hidden_size / heads is 32, and for the
// MoE 16 experts, top-4 with renormalised weights and no shared expert. Logits at every one of 48
// positions within 1e-4 relative L2, the 32-token greedy continuation token for token, and for
// the MoE the same again with experts streamed by staged direct reads.
#include <string>

#include <gtest/gtest.h>

#include "cflow/formats/cflow_layout.h"
#include "cflow/formats/source_model.h"
#include "family_reference.h"
#include "test_support.h"

namespace cflow {
namespace {

struct Qwen3Case {
    const char* name;  // fixture folder
    bool moe;
};

constexpr Qwen3Case kQwen3Cases[] = {{"qwen3", false}, {"qwen3moe", true}};

void expect_qwen3_geometry(const Model& model, const Qwen3Case& c) {
    const GlobalHeader& h = model.header();
    EXPECT_EQ(h.head_dim, 64u) << c.name;
    EXPECT_EQ(h.d_model, 128u) << c.name;
    EXPECT_TRUE(h.feature_flags & kFeatureQkNorm) << c.name;
    EXPECT_FALSE(h.feature_flags & kFeatureQkvBias) << c.name;
    EXPECT_FALSE(h.feature_flags & kFeatureTiedEmbeddings) << c.name;
    if (c.moe) {
        EXPECT_EQ(h.n_experts, 16u);
        EXPECT_EQ(h.top_k, 4u);
        EXPECT_EQ(h.d_ff, 0u);
        EXPECT_EQ(model.params().shared_expert_d_ff, 0u);
        EXPECT_EQ(static_cast<RouterMode>(model.params().router_mode), RouterMode::SoftmaxTopK);
    } else {
        EXPECT_EQ(h.n_experts, 0u);
        EXPECT_EQ(h.d_ff, 256u);
    }
}

class Qwen3Family : public ::testing::TestWithParam<Qwen3Case> {};

TEST_P(Qwen3Family, GgufMatchesTheFloat64Reference) {
    const Qwen3Case c = GetParam();
    const std::string gguf = std::string(c.name) + "/model.gguf", reference = std::string(c.name) + "/reference.json";
    CFLOW_REQUIRE_GGML_FIXTURE(gguf);
    CFLOW_REQUIRE_GGML_FIXTURE(reference);
    const test::FamilyReference ref = test::load_family_reference(reference);
    auto source = read_gguf_model((test::ggml_fixtures_dir() / gguf).string());
    ASSERT_TRUE(source.ok()) << source.error();
    EXPECT_EQ(source->config.architecture, c.name);
    EXPECT_FALSE(source->config.rope_interleaved) << "qwen3 GGUFs keep HF's split-half (NEOX) order";
    auto model = test::convert_f32_and_load(*source, test::temp_dir(std::string("qwen3-gguf-") + c.name) / "m.cflow");
    ASSERT_TRUE(model.ok()) << model.error();
    expect_qwen3_geometry(**model, c);
    test::expect_family_reference(*model, ref, std::string(c.name) + " GGUF");
    if (c.moe) test::expect_family_reference(*model, ref, std::string(c.name) + " GGUF, staged experts", ExpertFetch::Staged);
}

TEST_P(Qwen3Family, HfFolderMatchesTheFloat64Reference) {
    const Qwen3Case c = GetParam();
    const std::string folder = std::string(c.name) + "/hf", reference = std::string(c.name) + "/reference.json";
    CFLOW_REQUIRE_GGML_FIXTURE(folder);
    CFLOW_REQUIRE_GGML_FIXTURE(reference);
    const test::FamilyReference ref = test::load_family_reference(reference);
    auto source = open_source_model((test::ggml_fixtures_dir() / folder).string());
    ASSERT_TRUE(source.ok()) << source.error();
    EXPECT_EQ(source->config.architecture, c.name);
    auto model = test::convert_f32_and_load(*source, test::temp_dir(std::string("qwen3-hf-") + c.name) / "m.cflow");
    ASSERT_TRUE(model.ok()) << model.error();
    expect_qwen3_geometry(**model, c);
    test::expect_family_reference(*model, ref, std::string(c.name) + " HF folder");
}

INSTANTIATE_TEST_SUITE_P(Families, Qwen3Family, ::testing::ValuesIn(kQwen3Cases),
                         [](const ::testing::TestParamInfo<Qwen3Case>& param) { return std::string(param.param.name); });

} // namespace
} // namespace cflow
