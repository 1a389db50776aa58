// Phi-3.5-mini and Phi-4-mini end to end (architecture phi3), each from the GGUF llama.cpp's
// converter writes (fused attn_qkv, ffn_up holding gate and up, LongRoPE as rope_factors_short /
// rope_factors_long with rope.scaling.attn_factor) and from the Hugging Face folder
// (Phi3ForCausalLM: qkv_proj, gate_up_proj, rope_scaling type longrope), against the independent
// float64 numpy forward written from transformers' modeling_phi3.py and modeling_rope_utils.py
// (tests/reference/hf_phi3_reference.py; fixtures phi3/ and phi4mini/ of make_ggml_fixtures.py).
// Phi-4-mini rotates 24 of its 32 head dims (partial_rotary_factor 0.75) and ties its LM head.
// A session whose context is the original 64 positions uses the short factors (logits at every
// one of 48 positions within 1e-4 relative L2, the 32-token greedy continuation); one of 128 the
// long factors (every position of a 96-token sequence), both with the attention factor on cos
// and sin, as llama.cpp chooses them.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cflow/formats/cflow_layout.h"
#include "cflow/formats/model_features.h"
#include "cflow/formats/source_model.h"
#include "family_reference.h"
#include "test_support.h"

namespace cflow {
namespace {

struct PhiCase {
    const char* name;   // fixture folder
    float rope_fraction;
    bool tied;
};

const PhiCase kPhiCases[] = {{"phi3", 1.0f, false}, {"phi4mini", 0.75f, true}};

void PrintTo(const PhiCase& c, std::ostream* os) { *os << c.name; }

constexpr uint32_t kOriginalContext = 64;

class PhiFamily : public ::testing::TestWithParam<PhiCase> {};

TEST_P(PhiFamily, GgufAndHfFolderMatchTheFloat64ReferenceWithShortAndLongFactors) {
    const PhiCase& c = GetParam();
    const std::string gguf = std::string(c.name) + "/model.gguf", hf = std::string(c.name) + "/hf",
                      reference = std::string(c.name) + "/reference.json";
    CFLOW_REQUIRE_GGML_FIXTURE(gguf);
    CFLOW_REQUIRE_GGML_FIXTURE(hf);
    CFLOW_REQUIRE_GGML_FIXTURE(reference);
    const test::FamilyReference ref = test::load_family_reference(reference);
    const auto tokens_long = ref.json.at("tokens_long").get<std::vector<int32_t>>();
    const auto logits_long = ref.json.at("logits_long").get<std::vector<std::vector<double>>>();
    ASSERT_GT(tokens_long.size(), kOriginalContext);
    for (const auto& [kind, path] : {std::pair<std::string, std::string>{"GGUF", gguf}, {"HF folder", hf}}) {
        const std::string label = std::string(c.name) + " " + kind;
        auto source = open_source_model((test::ggml_fixtures_dir() / path).string());
        ASSERT_TRUE(source.ok()) << label << ": " << source.error();
        EXPECT_EQ(source->config.architecture, "phi3");
        EXPECT_FALSE(source->config.rope_interleaved) << label;
        auto model = test::convert_f32_and_load(*source, test::temp_dir(std::string("phi-") + c.name + "-" + std::to_string(kind.size())) / "m.cflow");
        ASSERT_TRUE(model.ok()) << label << ": " << model.error();
        const Model& m = **model;
        EXPECT_FLOAT_EQ(m.params().rope_fraction, c.rope_fraction) << label;
        EXPECT_EQ(bool(m.header().feature_flags & kFeatureTiedEmbeddings), c.tied) << label;
        EXPECT_TRUE(m.params().extended_features & kExtLongRope) << label;
        EXPECT_EQ(m.params().rope_original_context, kOriginalContext) << label;
        EXPECT_NEAR(m.params().rope_attn_factor, std::sqrt(1.0 + std::log(2.0) / std::log(64.0)), 1e-6) << label;
        EXPECT_FALSE(m.uses_long_rope(kOriginalContext)) << label;
        EXPECT_TRUE(m.uses_long_rope(kOriginalContext + 1)) << label;
        test::expect_family_reference(*model, ref, label + ", short factors", ExpertFetch::Mapped, kOriginalContext);

        auto session = test::scalar_f32_session(*model, ExpertFetch::Mapped, 2 * kOriginalContext);
        ASSERT_NE(session, nullptr);
        double max_err = 0;
        for (size_t p = 0; p < tokens_long.size(); ++p) {
            auto logits = session->step(tokens_long[p]);
            ASSERT_TRUE(logits.ok()) << label << " position " << p << ": " << logits.error();
            const double err = test::family_rel_l2(*logits, logits_long[p]);
            max_err = std::max(max_err, err);
            EXPECT_LE(err, test::kFamilyLogitRelTolerance) << label << ", long factors: logits at position " << p;
        }
        std::printf("[%s, long factors] logits rel L2 max over %zu positions %.2e\n", label.c_str(), tokens_long.size(), max_err);
    }
}

// Batched prefill over a long context (chunks of 64, the long factors, partial rotation) gives
// the logits of decoding token by token on the machine's best kernels, Q8_0 weights.
TEST_P(PhiFamily, Q8PrefillEqualsDecodeOnTheBestKernels) {
    const PhiCase& c = GetParam();
    const std::string gguf = std::string(c.name) + "/model.gguf", reference = std::string(c.name) + "/reference.json";
    CFLOW_REQUIRE_GGML_FIXTURE(gguf);
    CFLOW_REQUIRE_GGML_FIXTURE(reference);
    const test::FamilyReference ref = test::load_family_reference(reference);
    const auto tokens_long = ref.json.at("tokens_long").get<std::vector<int32_t>>();
    auto source = read_gguf_model((test::ggml_fixtures_dir() / gguf).string());
    ASSERT_TRUE(source.ok()) << source.error();
    ConvertOptions options;
    options.weight_quant = DType::Q8_0;
    options.threads = 2;
    const auto out = test::temp_dir(std::string("phi-q8-") + c.name) / "m.cflow";
    auto report = convert_to_cflow(*source, out.string(), options);
    ASSERT_TRUE(report.ok()) << report.error();
    EXPECT_EQ(report->retiled_exact_tensors, 0u);
    auto model = Model::load(out.string());
    ASSERT_TRUE(model.ok()) << model.error();
    std::vector<float> stepped;
    const double gap = test::prefill_vs_decode_rel_l2(*model, tokens_long, stepped);
    EXPECT_GE(gap, 0.0);
    EXPECT_LE(gap, 1e-5) << c.name << ": prefill and decode disagree";
    const auto logits_long = ref.json.at("logits_long").get<std::vector<std::vector<double>>>();
    EXPECT_LE(test::family_rel_l2(stepped, logits_long.back()), 0.05) << c.name << ": Q8_0 near the float64 reference";
}

TEST_P(PhiFamily, FeaturesNameLongRopeAndPartialRotation) {
    const PhiCase& c = GetParam();
    const std::string gguf = std::string(c.name) + "/model.gguf";
    CFLOW_REQUIRE_GGML_FIXTURE(gguf);
    auto source = read_gguf_model((test::ggml_fixtures_dir() / gguf).string());
    ASSERT_TRUE(source.ok()) << source.error();
    auto model = test::convert_f32_and_load(*source, test::temp_dir(std::string("phi-features-") + c.name) / "m.cflow");
    ASSERT_TRUE(model.ok()) << model.error();
    std::map<std::string, std::string> features;
    for (const ModelFeature& f : describe_features((*model)->file())) features[f.name] = f.detail;
    EXPECT_NE(features["rope scaling"].find("LongRoPE"), std::string::npos) << features["rope scaling"];
    EXPECT_EQ(features.count("partial rotary"), c.rope_fraction < 1.0f ? 1u : 0u);
}

INSTANTIATE_TEST_SUITE_P(Families, PhiFamily, ::testing::ValuesIn(kPhiCases),
                         [](const ::testing::TestParamInfo<PhiCase>& param) { return std::string(param.param.name); });

TEST(PhiHostile, BrokenLongRopeIsRefusedByName) {
    CFLOW_REQUIRE_GGML_FIXTURE("phi4mini/model.gguf");
    auto read = read_gguf_model((test::ggml_fixtures_dir() / "phi4mini/model.gguf").string());
    ASSERT_TRUE(read.ok()) << read.error();
    struct Case {
        const char* what;
        void (*mutate)(SourceModel&);
        const char* expected;
    };
    const Case cases[] = {
        {"long factors short by one", [](SourceModel& m) { m.config.rope_freq_factors_long.pop_back(); }, "LongRoPE factors: 12 short and 11 long"},
        {"NaN long factor", [](SourceModel& m) { m.config.rope_freq_factors_long[2] = std::nanf(""); }, "LongRoPE long factor 2"},
        {"no original context", [](SourceModel& m) { m.config.rope_original_context = 0; }, "original context length"},
        {"fused qkv of the wrong height", [](SourceModel& m) { m.tensors.at("blk.1.attn_qkv.weight").shape[0] -= 1; },
         "blk.1.attn_qkv.weight"},
        {"fused gate-up missing", [](SourceModel& m) { m.tensors.erase("blk.0.ffn_gate_up.weight"); }, "blk.0.ffn_gate.weight"},
    };
    for (const Case& c : cases) {
        SourceModel bad = *read;
        c.mutate(bad);
        auto r = convert_to_cflow(bad, (test::temp_dir("phi-hostile") / "m.cflow").string(), {});
        ASSERT_FALSE(r.ok()) << c.what;
        EXPECT_NE(r.error().find(c.expected), std::string::npos) << c.what << ": " << r.error();
    }
}

} // namespace
} // namespace cflow
