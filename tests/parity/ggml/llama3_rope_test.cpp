// Llama 3.1's rope scaling (rope_scaling type llama3) end to end, from the GGUF llama.cpp's
// converter writes (the scaling as the rope_freqs.weight tensor) and from the Hugging Face folder
// (config.json's rope_scaling), against an independent float64 numpy forward written from
// transformers' modeling_llama.py (tests/reference/hf_llama_reference.py, fixture
// llama3_rope/ of make_ggml_fixtures.py): logits at every one of 80 positions (past
// original_max_position_embeddings 64) within the parity suite's 1e-4 relative L2, and the
// 32-token greedy continuation token for token. Without the factors the logits are 0.39 off
// (the fixture checks that), so a converter that drops them fails here.
#include <cmath>
#include <cstddef>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cflow/formats/cflow_layout.h"
#include "cflow/formats/cflow_reader.h"
#include "family_reference.h"
#include "test_support.h"

namespace cflow {
namespace {

namespace fs = std::filesystem;

constexpr double kDivisorRelTolerance = 1e-6;  // f32 rounding of a divisor computed in double
constexpr const char* kRopeGguf = "llama3_rope/model.gguf";
constexpr const char* kRopeHfFolder = "llama3_rope/hf";
constexpr const char* kRopeReference = "llama3_rope/reference.json";

void expect_rope_reference(const std::shared_ptr<const Model>& model, const test::FamilyReference& ref,
                           const char* label) {
    const auto divisors = ref.json.at("rope_freq_divisors").get<std::vector<double>>();
    ASSERT_EQ(model->rope_freq_factors().size(), divisors.size()) << label;
    EXPECT_TRUE(model->header().feature_flags & kFeatureRopeFreqFactors) << label;
    for (size_t i = 0; i < divisors.size(); ++i)
        EXPECT_NEAR(model->rope_freq_factors()[i], divisors[i], kDivisorRelTolerance * divisors[i])
            << label << " divisor " << i;
    test::expect_family_reference(model, ref, std::string("llama3 rope, ") + label);
}

TEST(Llama3Rope, GgufRopeFreqsBecomeTheConfigsFactorsAndMatchTheReference) {
    CFLOW_REQUIRE_GGML_FIXTURE(kRopeGguf);
    CFLOW_REQUIRE_GGML_FIXTURE(kRopeReference);
    const test::FamilyReference ref = test::load_family_reference(kRopeReference);
    auto source = read_gguf_model((test::ggml_fixtures_dir() / kRopeGguf).string());
    ASSERT_TRUE(source.ok()) << source.error();
    ASSERT_EQ(source->config.rope_freq_factors.size(), ref.json.at("rope_freq_divisors").size());
    EXPECT_TRUE(source->config_tensors.count("rope_freqs.weight"));
    auto model = test::convert_f32_and_load(*source, test::temp_dir("llama3-rope-gguf") / "m.cflow");
    ASSERT_TRUE(model.ok()) << model.error();
    expect_rope_reference(*model, ref, "GGUF");
}

TEST(Llama3Rope, HfRopeScalingGivesTheSameFactorsAndMatchesTheReference) {
    CFLOW_REQUIRE_GGML_FIXTURE(kRopeHfFolder);
    CFLOW_REQUIRE_GGML_FIXTURE(kRopeReference);
    const test::FamilyReference ref = test::load_family_reference(kRopeReference);
    auto source = open_source_model((test::ggml_fixtures_dir() / kRopeHfFolder).string());
    ASSERT_TRUE(source.ok()) << source.error();
    auto model = test::convert_f32_and_load(*source, test::temp_dir("llama3-rope-hf") / "m.cflow");
    ASSERT_TRUE(model.ok()) << model.error();
    expect_rope_reference(*model, ref, "HF folder");
}

TEST(Llama3Rope, BadFactorsAndUnknownTensorsAreRefusedByName) {
    CFLOW_REQUIRE_GGML_FIXTURE(kRopeGguf);
    auto read = read_gguf_model((test::ggml_fixtures_dir() / kRopeGguf).string());
    ASSERT_TRUE(read.ok()) << read.error();
    const fs::path dir = test::temp_dir("llama3-rope-hostile");

    SourceModel nan_factor = *read;
    nan_factor.config.rope_freq_factors[3] = std::nanf("");
    auto r = convert_to_cflow(nan_factor, (dir / "nan.cflow").string(), {});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find("rope frequency factor 3"), std::string::npos) << r.error();

    SourceModel short_factors = *read;
    short_factors.config.rope_freq_factors.pop_back();
    r = convert_to_cflow(short_factors, (dir / "short.cflow").string(), {});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find("expected 16"), std::string::npos) << r.error();

    // A tensor no segment reads (here a made-up one) must not vanish in the conversion.
    SourceModel extra = *read;
    TensorView mystery = extra.tensors.at("blk.0.attn_norm.weight");
    mystery.name = "blk.0.attn_mystery.weight";
    mystery.origin = "model.gguf: tensor 'blk.0.attn_mystery.weight'";
    extra.tensors.emplace(mystery.name, mystery);
    r = convert_to_cflow(extra, (dir / "extra.cflow").string(), {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.kind(), ErrorKind::Unsupported);
    EXPECT_NE(r.error().find("tensor 'blk.0.attn_mystery.weight'"), std::string::npos) << r.error();
    EXPECT_NE(r.error().find("would drop"), std::string::npos) << r.error();
    EXPECT_FALSE(fs::exists(dir / "extra.cflow"));

    // Dropping rope_freqs.weight from what the reader folded into the config is the same refusal.
    SourceModel unfolded = *read;
    unfolded.config_tensors.clear();
    r = convert_to_cflow(unfolded, (dir / "unfolded.cflow").string(), {});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find("rope_freqs.weight"), std::string::npos) << r.error();
}

TEST(Llama3Rope, TheFeatureBitAndTheFactorsComeTogetherOrTheFileIsRefused) {
    CFLOW_REQUIRE_GGML_FIXTURE(kRopeGguf);
    auto read = read_gguf_model((test::ggml_fixtures_dir() / kRopeGguf).string());
    ASSERT_TRUE(read.ok()) << read.error();
    const fs::path dir = test::temp_dir("llama3-rope-flag");
    const fs::path with = dir / "with.cflow", without = dir / "without.cflow";
    ASSERT_TRUE(convert_to_cflow(*read, with.string(), {}).ok());
    SourceModel plain = *read;
    plain.config.rope_freq_factors.clear();
    plain.config_tensors.clear();
    plain.ignored_tensors.emplace("rope_freqs.weight", "test: plain RoPE wanted");
    ASSERT_TRUE(convert_to_cflow(plain, without.string(), {}).ok());
    ASSERT_TRUE(CflowFile::open(with.string()).ok());
    ASSERT_TRUE(CflowFile::open(without.string()).ok());

    auto flip_flag = [](const fs::path& path) {
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekg(offsetof(GlobalHeader, feature_flags));
        char flags = 0;
        f.read(&flags, 1);
        flags = char(uint8_t(flags) ^ kFeatureRopeFreqFactors);
        f.seekp(offsetof(GlobalHeader, feature_flags));
        f.write(&flags, 1);
    };
    flip_flag(with);
    auto opened = CflowFile::open(with.string());
    ASSERT_FALSE(opened.ok());
    EXPECT_NE(opened.error().find("cflow.rope.freq_factors' is present but"), std::string::npos) << opened.error();
    flip_flag(without);
    opened = CflowFile::open(without.string());
    ASSERT_FALSE(opened.ok());
    EXPECT_NE(opened.error().find("is missing"), std::string::npos) << opened.error();
}

} // namespace
} // namespace cflow
