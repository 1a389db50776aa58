// SmolLM3 end to end: llama's block without RoPE on every fourth layer (NoPE) and tied
// embeddings, from the GGUF llama.cpp's converter writes (architecture smollm3, Q/K interleaved,
// the NoPE step implied) and from the Hugging Face folder (no_rope_layers), against the float64
// numpy forward written from transformers' modeling_smollm3.py (tests/reference/
// hf_llama_reference.py, fixture smollm3/ of make_ggml_fixtures.py): logits at all 48 positions
// within 1e-4 relative L2 and the 32-token greedy continuation. RoPE on every layer would be
// 0.06 off (the fixture checks it), so an engine that ignores the NoPE layers fails here.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cflow/formats/cflow_layout.h"
#include "cflow/formats/source_model.h"
#include "family_reference.h"
#include "test_support.h"

namespace cflow {
namespace {

constexpr const char* kSmolGguf = "smollm3/model.gguf";
constexpr const char* kSmolHf = "smollm3/hf";
constexpr const char* kSmolReference = "smollm3/reference.json";

void expect_smollm3_layout(const Model& model, const std::string& label) {
    EXPECT_TRUE(model.header().feature_flags & kFeatureRopeSkipLayers) << label;
    EXPECT_TRUE(model.header().feature_flags & kFeatureTiedEmbeddings) << label;
    const std::vector<int32_t> skip(model.file().rope_skip_layers().begin(), model.file().rope_skip_layers().end());
    EXPECT_EQ(skip, (std::vector<int32_t>{0, 0, 0, 1})) << label;
    for (uint32_t l = 0; l < 4; ++l) EXPECT_EQ(model.applies_rope(l), l != 3) << label << " layer " << l;
}

TEST(SmolLM3, GgufAndHfFolderMatchTheFloat64Reference) {
    CFLOW_REQUIRE_GGML_FIXTURE(kSmolGguf);
    CFLOW_REQUIRE_GGML_FIXTURE(kSmolHf);
    CFLOW_REQUIRE_GGML_FIXTURE(kSmolReference);
    const test::FamilyReference ref = test::load_family_reference(kSmolReference);
    for (const auto& [label, path] : {std::pair<std::string, const char*>{"smollm3 GGUF", kSmolGguf},
                                      std::pair<std::string, const char*>{"smollm3 HF folder", kSmolHf}}) {
        auto source = open_source_model((test::ggml_fixtures_dir() / path).string());
        ASSERT_TRUE(source.ok()) << source.error();
        EXPECT_EQ(source->config.architecture, "smollm3");
        auto model = test::convert_f32_and_load(*source, test::temp_dir("smollm3-" + std::to_string(label.size())) / "m.cflow");
        ASSERT_TRUE(model.ok()) << label << ": " << model.error();
        expect_smollm3_layout(**model, label);
        test::expect_family_reference(*model, ref, label);
    }
}

TEST(SmolLM3, ABadNoRopeListIsRefusedByName) {
    CFLOW_REQUIRE_GGML_FIXTURE(kSmolGguf);
    auto read = read_gguf_model((test::ggml_fixtures_dir() / kSmolGguf).string());
    ASSERT_TRUE(read.ok()) << read.error();
    SourceModel bad = *read;
    bad.config.rope_skip_layers.pop_back();
    auto r = convert_to_cflow(bad, (test::temp_dir("smollm3-bad") / "m.cflow").string(), {});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find("rope skip layers: 3 entries for 4 layers"), std::string::npos) << r.error();
}

} // namespace
} // namespace cflow
