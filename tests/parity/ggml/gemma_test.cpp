// Gemma 2 and Gemma 3 end to end, each from the GGUF llama.cpp's converter writes (architecture
// gemma2 / gemma3: norms stored as 1 + w, NEOX RoPE, tied LM head) and from the Hugging Face
// folder (Gemma2ForCausalLM / Gemma3ForCausalLM: norms stored as w), against the independent
// float64 numpy forward written from transformers' modeling_gemma2.py / modeling_gemma3.py
// (tests/reference/hf_gemma_reference.py; fixtures gemma2/ and gemma3/ of make_ggml_fixtures.py):
// embeddings times sqrt(d), the four norms per layer, GELU-tanh gate, sliding-window layers
// (window 8 under a 48-token prompt) beside global ones, Gemma 2's attention and final soft-caps,
// Gemma 3's Q/K norms and its local RoPE base on the sliding layers with linear scaling on the
// global ones, and query_pre_attn_scalar != head_dim through the HF folder. Logits at every
// position within 1e-4 relative L2 on the scalar f32 path, the 32-token greedy continuation token
// for token; the fixture script checks that dropping any one of these features moves the logits
// by more than 1e-2, so an engine that ignores one fails here. Then the same models quantised on
// the machine's best kernels (prefill equals decode there), and hostile variants of each.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
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

namespace fs = std::filesystem;

struct GemmaCase {
    const char* name;  // fixture folder and architecture
    std::vector<int32_t> sliding;
};

const GemmaCase kGemmaCases[] = {{"gemma2", {1, 0, 1, 0}}, {"gemma3", {1, 1, 1, 1, 1, 0}}};

void PrintTo(const GemmaCase& c, std::ostream* os) { *os << c.name; }

void expect_gemma_layout(const Model& model, const GemmaCase& c, const std::string& label) {
    const GlobalHeader& h = model.header();
    const ModelParams& p = model.params();
    EXPECT_EQ(h.sliding_window, 8u) << label;
    EXPECT_TRUE(h.feature_flags & kFeatureEmbedScaleSqrtD) << label;
    EXPECT_TRUE(h.feature_flags & kFeatureTiedEmbeddings) << label;
    EXPECT_TRUE(h.feature_flags & kFeatureExtended) << label;
    EXPECT_EQ(p.ffn_activation, static_cast<uint8_t>(FfnActivation::GeGLUTanh)) << label;
    EXPECT_TRUE(p.extended_features & kExtPostNorms) << label;
    EXPECT_TRUE(p.extended_features & kExtSlidingLayers) << label;
    const std::vector<int32_t> sliding(model.file().sliding_layers().begin(), model.file().sliding_layers().end());
    EXPECT_EQ(sliding, c.sliding) << label;
    for (uint32_t l = 0; l < h.n_layers; ++l) {
        EXPECT_EQ(model.attention_window(l), c.sliding[l] ? 8u : 0u) << label << " layer " << l;
        EXPECT_NE(model.layers()[l].attn_post_norm, nullptr) << label << " layer " << l;
        EXPECT_NE(model.layers()[l].ffn_post_norm, nullptr) << label << " layer " << l;
    }
    if (std::string(c.name) == "gemma2") {
        EXPECT_GT(p.attn_logit_softcap, 0.0f) << label;
        EXPECT_GT(h.final_logit_softcap, 0.0f) << label;
        EXPECT_FALSE(h.feature_flags & kFeatureQkNorm) << label;
        EXPECT_FALSE(p.extended_features & kExtLocalRope) << label;
    } else {
        EXPECT_TRUE(h.feature_flags & kFeatureQkNorm) << label;
        EXPECT_TRUE(p.extended_features & kExtLocalRope) << label;
        EXPECT_EQ(p.rope_local_theta, 10000.0f) << label;
        EXPECT_EQ(p.rope_theta, 1000000.0f) << label;
        const LayerRope local = model.rope(0), global = model.rope(5);
        EXPECT_EQ(local.theta, 10000.0f) << label;
        EXPECT_TRUE(local.freq_factors.empty()) << label << ": the sliding layers rotate unscaled";
        EXPECT_EQ(global.theta, 1000000.0f) << label;
        ASSERT_EQ(global.freq_factors.size(), 16u) << label;
        for (float f : global.freq_factors) EXPECT_EQ(f, 8.0f) << label << ": linear scaling, factor 8";
    }
}

class GemmaFamily : public ::testing::TestWithParam<GemmaCase> {};

TEST_P(GemmaFamily, GgufAndHfFolderMatchTheFloat64Reference) {
    const GemmaCase& c = GetParam();
    const std::string gguf = std::string(c.name) + "/model.gguf", hf = std::string(c.name) + "/hf",
                      reference = std::string(c.name) + "/reference.json";
    CFLOW_REQUIRE_GGML_FIXTURE(gguf);
    CFLOW_REQUIRE_GGML_FIXTURE(hf);
    CFLOW_REQUIRE_GGML_FIXTURE(reference);
    const test::FamilyReference ref = test::load_family_reference(reference);
    for (const auto& [kind, path] : {std::pair<std::string, std::string>{"GGUF", gguf}, {"HF folder", hf}}) {
        const std::string label = std::string(c.name) + " " + kind;
        auto source = open_source_model((test::ggml_fixtures_dir() / path).string());
        ASSERT_TRUE(source.ok()) << label << ": " << source.error();
        EXPECT_EQ(source->config.architecture, c.name);
        EXPECT_FALSE(source->config.rope_interleaved) << label << ": Gemma GGUFs keep HF's split-half (NEOX) order";
        auto model = test::convert_f32_and_load(*source, test::temp_dir(std::string("gemma-") + c.name + "-" + std::to_string(kind.size())) / "m.cflow");
        ASSERT_TRUE(model.ok()) << label << ": " << model.error();
        expect_gemma_layout(**model, c, label);
        test::expect_family_reference(*model, ref, label);
    }
}

INSTANTIATE_TEST_SUITE_P(Families, GemmaFamily, ::testing::ValuesIn(kGemmaCases),
                         [](const ::testing::TestParamInfo<GemmaCase>& param) { return std::string(param.param.name); });

// query_pre_attn_scalar 48 with head_dim 32 (Gemma 2 27B's kind of config): scores scaled by
// 48^-0.5, which a GGUF cannot say (llama.cpp derives the scale from the model size).
TEST(Gemma2, QueryPreAttnScalarFromTheHfConfigScalesTheScores) {
    CFLOW_REQUIRE_GGML_FIXTURE("gemma2/hf_qscale");
    CFLOW_REQUIRE_GGML_FIXTURE("gemma2/reference_qscale.json");
    const test::FamilyReference ref = test::load_family_reference("gemma2/reference_qscale.json");
    auto source = open_source_model((test::ggml_fixtures_dir() / "gemma2/hf_qscale").string());
    ASSERT_TRUE(source.ok()) << source.error();
    EXPECT_FLOAT_EQ(source->config.query_scale, float(1.0 / std::sqrt(48.0)));
    auto model = test::convert_f32_and_load(*source, test::temp_dir("gemma2-qscale") / "m.cflow");
    ASSERT_TRUE(model.ok()) << model.error();
    EXPECT_FLOAT_EQ((*model)->query_scale(), float(1.0 / std::sqrt(48.0)));
    test::expect_family_reference(*model, ref, "gemma2 HF folder, query_pre_attn_scalar 48");
}

// Quantised to Q8_0 on the machine's best kernels: a prefill of the whole prompt (per-layer rope
// tables, windows and post-norms in the batched path) gives the logits of decoding it token by
// token, and the greedy continuation stays close to the f32 reference's.
TEST_P(GemmaFamily, Q8PrefillEqualsDecodeOnTheBestKernels) {
    const GemmaCase& c = GetParam();
    const std::string gguf = std::string(c.name) + "/model.gguf", reference = std::string(c.name) + "/reference.json";
    CFLOW_REQUIRE_GGML_FIXTURE(gguf);
    CFLOW_REQUIRE_GGML_FIXTURE(reference);
    const test::FamilyReference ref = test::load_family_reference(reference);
    auto source = read_gguf_model((test::ggml_fixtures_dir() / gguf).string());
    ASSERT_TRUE(source.ok()) << source.error();
    ConvertOptions options;
    options.weight_quant = DType::Q8_0;
    options.threads = 2;
    const auto out = test::temp_dir(std::string("gemma-q8-") + c.name) / "m.cflow";
    auto report = convert_to_cflow(*source, out.string(), options);
    ASSERT_TRUE(report.ok()) << report.error();
    auto model = Model::load(out.string());
    ASSERT_TRUE(model.ok()) << model.error();
    std::vector<float> stepped;
    const double gap = test::prefill_vs_decode_rel_l2(*model, ref.tokens, stepped);
    EXPECT_GE(gap, 0.0);
    EXPECT_LE(gap, 1e-5) << c.name << ": prefill and decode disagree at the last of " << ref.tokens.size() << " positions";
    // Q8_0 stays near the float64 reference's last logits.
    EXPECT_LE(test::family_rel_l2(stepped, ref.logits.back()), 0.05) << c.name;
}

// The stage-major .vflow container carries the post-norms (attention and dense stages) and the
// extended fields the same way: its logits are the reference's too.
TEST(GemmaVflow, TheVflowContainerGivesTheReferenceLogits) {
    CFLOW_REQUIRE_GGML_FIXTURE("gemma3/model.gguf");
    CFLOW_REQUIRE_GGML_FIXTURE("gemma3/reference.json");
    const test::FamilyReference ref = test::load_family_reference("gemma3/reference.json");
    auto source = read_gguf_model((test::ggml_fixtures_dir() / "gemma3/model.gguf").string());
    ASSERT_TRUE(source.ok()) << source.error();
    ConvertOptions options;
    options.weight_quant = DType::F32;
    options.embedding_quant = DType::F32;
    options.format = ContainerFormat::Vflow;
    options.threads = 2;
    const auto out = test::temp_dir("gemma-vflow") / "m.vflow";
    auto report = convert_to_cflow(*source, out.string(), options);
    ASSERT_TRUE(report.ok()) << report.error();
    auto model = Model::load(out.string());
    ASSERT_TRUE(model.ok()) << model.error();
    EXPECT_EQ((*model)->file().container(), ContainerFormat::Vflow);
    test::expect_family_reference(*model, ref, "gemma3 .vflow");
}

// Gemma 3 4B/12B/27B are published as Gemma3ForConditionalGeneration: a text_config that lists only
// what differs from Gemma3TextConfig's defaults (here rope_theta, rope_local_base_freq,
// sliding_window_pattern and rms_norm_eps come from them), the text model under
// language_model.model.*, a vision tower beside it. The text model runs and gives the reference's
// logits; the vision tensors are left out and the conversion report says so.
TEST(Gemma3Multimodal, TheTextModelOfAConditionalGenerationCheckpointRuns) {
    CFLOW_REQUIRE_GGML_FIXTURE("gemma3/hf_multimodal");
    CFLOW_REQUIRE_GGML_FIXTURE("gemma3/reference.json");
    const test::FamilyReference ref = test::load_family_reference("gemma3/reference.json");
    auto source = open_source_model((test::ggml_fixtures_dir() / "gemma3/hf_multimodal").string());
    ASSERT_TRUE(source.ok()) << source.error();
    const ModelConfig& c = source->config;
    EXPECT_EQ(c.architecture, "gemma3");
    EXPECT_FLOAT_EQ(c.rope_theta, 1000000.0f) << "Gemma3TextConfig's default";
    EXPECT_FLOAT_EQ(c.rope_local_theta, 10000.0f) << "Gemma3TextConfig's default";
    EXPECT_FLOAT_EQ(c.norm_eps, 1e-6f);
    EXPECT_EQ(c.sliding_layers, (std::vector<int32_t>{1, 1, 1, 1, 1, 0}))
        << "sliding_window_pattern 6 by default";
    for (const auto& [name, tensor] : source->tensors) EXPECT_EQ(name.find("vision"), std::string::npos) << name;
    ConvertOptions options;
    options.weight_quant = DType::F32;
    options.embedding_quant = DType::F32;
    options.threads = 2;
    const auto out = test::temp_dir("gemma3-multimodal") / "m.cflow";
    auto report = convert_to_cflow(*source, out.string(), options);
    ASSERT_TRUE(report.ok()) << report.error();
    bool vision_noted = false;
    for (const std::string& line : report->ignored_tensors)
        vision_noted = vision_noted || (line.find("4 tensor(s)") != std::string::npos && line.find("vision tower") != std::string::npos);
    EXPECT_TRUE(vision_noted) << "the conversion report does not say the vision tower was left out";
    auto model = Model::load(out.string());
    ASSERT_TRUE(model.ok()) << model.error();
    test::expect_family_reference(*model, ref, "gemma3 as Gemma3ForConditionalGeneration");
}

TEST(Gemma3Multimodal, AConfigWithoutTextConfigIsRefusedByName) {
    CFLOW_REQUIRE_GGML_FIXTURE("gemma3/hf_multimodal");
    const fs::path src = test::ggml_fixtures_dir() / "gemma3/hf_multimodal";
    const fs::path dir = test::temp_dir("gemma3-multimodal-hostile");
    for (const char* f : {"model.safetensors", "tokenizer.json", "tokenizer_config.json"})
        fs::copy_file(src / f, dir / f, fs::copy_options::overwrite_existing);
    std::ofstream(dir / "config.json") << R"({"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3"})";
    auto r = open_source_model(dir.string());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find("'text_config'"), std::string::npos) << r.error();
}

// What `cflow inspect` and the model card say about each architecture.
TEST_P(GemmaFamily, FeaturesDescribeWhatTheEngineDoes) {
    const GemmaCase& c = GetParam();
    const std::string gguf = std::string(c.name) + "/model.gguf";
    CFLOW_REQUIRE_GGML_FIXTURE(gguf);
    auto source = read_gguf_model((test::ggml_fixtures_dir() / gguf).string());
    ASSERT_TRUE(source.ok()) << source.error();
    auto model = test::convert_f32_and_load(*source, test::temp_dir(std::string("gemma-features-") + c.name) / "m.cflow");
    ASSERT_TRUE(model.ok()) << model.error();
    std::map<std::string, std::string> features;
    for (const ModelFeature& f : describe_features((*model)->file())) features[f.name] = f.detail;
    const std::string sliding = std::string(c.name) == "gemma2" ? "8 positions on 2 of 4 layers" : "8 positions on 5 of 6 layers";
    EXPECT_NE(features["sliding window"].find(sliding), std::string::npos) << features["sliding window"];
    EXPECT_TRUE(features.count("sandwich norms"));
    EXPECT_TRUE(features.count("GELU gate"));
    EXPECT_TRUE(features.count("tied embeddings"));
    EXPECT_NE(features["embedding scale"].find("sqrt(d_model)"), std::string::npos);
    if (std::string(c.name) == "gemma2") {
        EXPECT_NE(features["attention soft-cap"].find("c = 5"), std::string::npos) << features["attention soft-cap"];
        EXPECT_NE(features["logit soft-cap"].find("c = 2"), std::string::npos) << features["logit soft-cap"];
    } else {
        EXPECT_NE(features["local rope"].find("base 10000"), std::string::npos) << features["local rope"];
        EXPECT_NE(features["rope scaling"].find("linear: every rotary frequency divided by 8 on the full-attention layers"),
                  std::string::npos)
            << features["rope scaling"];
        EXPECT_TRUE(features.count("Q/K norm"));
    }
}

// Hostile variants: each a clear error naming what is wrong, never a crash or a silent model.
TEST(GemmaHostile, AMissingPostNormIsRefusedByName) {
    CFLOW_REQUIRE_GGML_FIXTURE("gemma3/model.gguf");
    auto read = read_gguf_model((test::ggml_fixtures_dir() / "gemma3/model.gguf").string());
    ASSERT_TRUE(read.ok()) << read.error();
    SourceModel bad = *read;
    ASSERT_EQ(bad.tensors.erase("blk.2.post_ffw_norm.weight"), 1u);
    auto r = convert_to_cflow(bad, (test::temp_dir("gemma-hostile-norm") / "m.cflow").string(), {});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find("blk.2.post_ffw_norm.weight"), std::string::npos) << r.error();
}

TEST(GemmaHostile, BadWindowsAndRopeBasesAreRefused) {
    CFLOW_REQUIRE_GGML_FIXTURE("gemma3/model.gguf");
    auto read = read_gguf_model((test::ggml_fixtures_dir() / "gemma3/model.gguf").string());
    ASSERT_TRUE(read.ok()) << read.error();
    struct Case {
        const char* what;
        void (*mutate)(ModelConfig&);
        const char* expected;
    };
    const Case cases[] = {
        {"window > context", [](ModelConfig& c) { c.sliding_window = c.max_seq_len + 1; }, "exceeds the context length"},
        {"sliding list too short", [](ModelConfig& c) { c.sliding_layers.pop_back(); }, "sliding layers: 5 entries for 6 layers"},
        {"sliding entry 2", [](ModelConfig& c) { c.sliding_layers[1] = 2; }, "sliding layer entry 1 must be 0 or 1"},
        {"NaN local rope base", [](ModelConfig& c) { c.rope_local_theta = std::nanf(""); }, "local rope base"},
        {"NaN rope factor", [](ModelConfig& c) { c.rope_freq_factors[3] = std::nanf(""); }, "rope frequency factor 3"},
        {"negative query scale", [](ModelConfig& c) { c.query_scale = -1.0f; }, "query scale"},
        {"heads not a multiple", [](ModelConfig& c) { c.n_kv_heads = 3; }, "not divisible by n_kv_heads 3"},
    };
    for (const Case& c : cases) {
        SourceModel bad = *read;
        c.mutate(bad.config);
        auto r = convert_to_cflow(bad, (test::temp_dir("gemma-hostile-config") / "m.cflow").string(), {});
        ASSERT_FALSE(r.ok()) << c.what;
        EXPECT_NE(r.error().find(c.expected), std::string::npos) << c.what << ": " << r.error();
    }
}

// The converted file refuses damage to the new fields: an unknown extended bit, extended fields
// without feature bit 7, a local-rope bit without a base.
TEST(GemmaHostile, DamagedExtendedFieldsAreRefusedAtOpen) {
    CFLOW_REQUIRE_GGML_FIXTURE("gemma3/model.gguf");
    auto source = read_gguf_model((test::ggml_fixtures_dir() / "gemma3/model.gguf").string());
    ASSERT_TRUE(source.ok()) << source.error();
    const auto path = test::temp_dir("gemma-hostile-file") / "m.cflow";
    auto model = test::convert_f32_and_load(*source, path);
    ASSERT_TRUE(model.ok()) << model.error();
    std::vector<char> bytes;
    {
        std::ifstream in(path, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    const size_t params = sizeof(GlobalHeader);
    struct Case {
        const char* what;
        void (*mutate)(std::vector<char>&, size_t);
        const char* expected;
    };
    const Case cases[] = {
        {"unknown extended bit",
         [](std::vector<char>& b, size_t at) { b[at + offsetof(ModelParams, extended_features)] |= char(0x80); },
         "unknown extended feature bits 128"},
        {"feature bit 7 cleared",
         [](std::vector<char>& b, size_t) { b[offsetof(GlobalHeader, feature_flags)] &= char(0x7F); },
         "lacks the extended bit (128)"},
        {"local rope base 0",
         [](std::vector<char>& b, size_t at) { std::memset(&b[at + offsetof(ModelParams, rope_local_theta)], 0, 4); },
         "ModelParams.rope_local_theta"},
        {"sliding bit without the list",
         [](std::vector<char>& b, size_t at) { b[at + offsetof(ModelParams, extended_features)] &= char(~kExtSlidingLayers); },
         "is present but ModelParams.extended_features bit 2 (sliding-window layers) is not set"},
    };
    for (const Case& c : cases) {
        std::vector<char> damaged = bytes;
        c.mutate(damaged, params);
        const auto bad = test::temp_dir("gemma-hostile-file") / "bad.cflow";
        std::ofstream(bad, std::ios::binary).write(damaged.data(), std::streamsize(damaged.size()));
        auto opened = Model::load(bad.string());
        ASSERT_FALSE(opened.ok()) << c.what;
        EXPECT_NE(opened.error().find(c.expected), std::string::npos) << c.what << ": " << opened.error();
    }
}

} // namespace
} // namespace cflow

namespace cflow {
namespace {

// The sliding layers keep a ring of window + one prefill chunk positions (8 + 63 here) instead of
// the whole context: past the ring's length the logits are still those of the reference (above),
// a short step back keeps the cache, and a step back past what the rings hold starts over.
TEST(GemmaKvRing, TruncateKeepsWhatTheRingsHoldAndOtherwiseStartsOver) {
    CFLOW_REQUIRE_GGML_FIXTURE("gemma3/model.gguf");
    CFLOW_REQUIRE_GGML_FIXTURE("gemma3/reference.json");
    const test::FamilyReference ref = test::load_family_reference("gemma3/reference.json");
    auto source = read_gguf_model((test::ggml_fixtures_dir() / "gemma3/model.gguf").string());
    ASSERT_TRUE(source.ok()) << source.error();
    auto model = test::convert_f32_and_load(*source, test::temp_dir("gemma-ring") / "m.cflow");
    ASSERT_TRUE(model.ok()) << model.error();
    const size_t n = ref.tokens.size();
    ASSERT_GE(n, 80u) << "the fixture's sequence must outrun the 71-position rings";
    auto session = test::scalar_f32_session(*model);
    ASSERT_NE(session, nullptr);
    for (size_t p = 0; p < n; ++p) ASSERT_TRUE(session->step(ref.tokens[p]).ok());
    // Back 4 positions: the rings still hold everything the next token attends to.
    EXPECT_EQ(session->truncate(uint32_t(n - 4)), n - 4);
    for (size_t p = n - 4; p < n; ++p) {
        auto logits = session->step(ref.tokens[p]);
        ASSERT_TRUE(logits.ok()) << logits.error();
        EXPECT_LE(test::family_rel_l2(*logits, ref.logits[p]), test::kFamilyLogitRelTolerance) << "position " << p;
    }
    // Back to position 10: positions 3..9 were overwritten in the rings long ago.
    EXPECT_EQ(session->truncate(10), 0u);
    EXPECT_EQ(session->position(), 0u);
    for (size_t p = 0; p < 12; ++p) {
        auto logits = session->step(ref.tokens[p]);
        ASSERT_TRUE(logits.ok()) << logits.error();
        EXPECT_LE(test::family_rel_l2(*logits, ref.logits[p]), test::kFamilyLogitRelTolerance) << "position " << p;
    }
}

} // namespace
} // namespace cflow
