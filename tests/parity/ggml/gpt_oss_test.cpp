// gpt-oss end to end from the GGUF llama.cpp's converter writes (architecture gpt-oss, experts
// in MXFP4 as in the released files, and an all-F32 twin), against the independent float64 numpy
// forward written from transformers' modeling_gpt_oss.py (tests/reference/hf_gpt_oss_reference.py;
// fixture gpt_oss/ of make_ggml_fixtures.py): q/k/v/o biases, a learned sink logit per head in
// every softmax, sliding-window layers (window 8 under a 48-token prompt) beside full ones, NEOX
// RoPE with YaRN (factor 4 over an original context of 32, attention factor 1 + 0.1 ln 4), a
// biased router whose top-2 logits are softmaxed, experts with gate/up/down biases and the
// clamped SwiGLU (alpha 1.702, limit 7). A GGUF runs as llama.cpp runs it: YaRN's correction
// range rounded outward (the reference's logits_truncated_yarn; transformers' truncate=false
// rule differs by 0.21 relative L2 on this model, reference.json's truncated_yarn_rel_l2).
// Logits at every position within 1e-4 relative L2 on the scalar f32 path, the 32-token greedy
// continuation token for token — from an F32 conversion, from the MXFP4 experts kept block for
// block, with experts streamed by staged direct reads — then prefill equals decode on the best
// kernels, and hostile variants. The fixture script checks that dropping any one feature (sinks,
// biases, clamp, YaRN, sliding layers) moves the logits by more than 1e-2.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cflow/engine/kernels/kernels.h"
#include "cflow/formats/cflow_layout.h"
#include "cflow/formats/ggml_blocks.h"
#include "cflow/formats/model_features.h"
#include "cflow/formats/source_model.h"
#include "family_reference.h"
#include "test_support.h"

namespace cflow {
namespace {

namespace fs = std::filesystem;

constexpr const char* kGptOssGguf = "gpt_oss/model.gguf";        // experts MXFP4, the rest F32
constexpr const char* kGptOssGgufF32 = "gpt_oss/model_f32.gguf";  // every tensor F32 (the MXFP4 values)
constexpr const char* kGptOssReference = "gpt_oss/reference.json";
constexpr const char* kGptOssHf = "gpt_oss/hf";              // HF folder, experts as F32 parameters
constexpr const char* kGptOssHfMxfp4 = "gpt_oss/hf_mxfp4";   // HF folder, experts as *_blocks / *_scales

// The reference under llama.cpp's YaRN rule, the one a GGUF is run with.
test::FamilyReference llama_cpp_reference() {
    test::FamilyReference ref = test::load_family_reference(kGptOssReference);
    ref.logits = ref.json.at("logits_truncated_yarn").get<std::vector<std::vector<double>>>();
    ref.greedy = ref.json.at("greedy_truncated_yarn").get<std::vector<int32_t>>();
    return ref;
}

void expect_gpt_oss_layout(const Model& model, const std::string& label) {
    const GlobalHeader& h = model.header();
    const ModelParams& p = model.params();
    EXPECT_EQ(h.n_layers, 4u) << label;
    EXPECT_EQ(h.head_dim, 64u) << label;
    EXPECT_EQ(h.n_experts, 8u) << label;
    EXPECT_EQ(h.top_k, 2u) << label;
    EXPECT_EQ(h.sliding_window, 8u) << label;
    EXPECT_TRUE(h.feature_flags & kFeatureQkvBias) << label;
    EXPECT_TRUE(h.feature_flags & kFeatureExtended) << label;
    EXPECT_EQ(p.ffn_activation, static_cast<uint8_t>(FfnActivation::ClampedSwiGLU)) << label;
    EXPECT_FLOAT_EQ(p.ffn_alpha, 1.702f) << label;
    EXPECT_FLOAT_EQ(p.ffn_limit, 7.0f) << label;
    EXPECT_EQ(static_cast<RouterMode>(p.router_mode), RouterMode::SoftmaxTopK) << label;
    EXPECT_TRUE(p.extended_features & kExtAttnSinks) << label;
    EXPECT_TRUE(p.extended_features & kExtAttnOutBias) << label;
    EXPECT_TRUE(p.extended_features & kExtMoeBiases) << label;
    EXPECT_NEAR(p.rope_attn_factor, 1.0 + 0.1 * std::log(4.0), 1e-6) << label;
    const std::vector<int32_t> sliding(model.file().sliding_layers().begin(), model.file().sliding_layers().end());
    EXPECT_EQ(sliding, (std::vector<int32_t>{1, 0, 1, 0})) << label << ": layer 0 slides, then every other";
    for (uint32_t l = 0; l < h.n_layers; ++l) {
        const LayerWeights& w = model.layers()[l];
        EXPECT_NE(w.attn_sinks, nullptr) << label << " layer " << l;
        EXPECT_NE(w.attn_out_bias, nullptr) << label << " layer " << l;
        EXPECT_NE(w.router_bias, nullptr) << label << " layer " << l;
        EXPECT_NE(w.expert_bias, nullptr) << label << " layer " << l;
    }
}

Result<SourceModel> read_gpt_oss_fixture(const char* relative) {
    return read_gguf_model((test::ggml_fixtures_dir() / relative).string());
}

TEST(GptOss, GgufReadsAsLlamaCppWritesIt) {
    CFLOW_REQUIRE_GGML_FIXTURE(kGptOssGguf);
    auto source = read_gpt_oss_fixture(kGptOssGguf);
    ASSERT_TRUE(source.ok()) << source.error();
    const ModelConfig& c = source->config;
    EXPECT_EQ(c.architecture, "gpt-oss");
    EXPECT_FALSE(c.rope_interleaved) << "gpt-oss rotates split halves (NEOX)";
    EXPECT_EQ(c.expert_d_ff, 96u);
    // The pre-MoE norm arrives as post_attention_norm and is the FFN input norm, not a sandwich norm.
    EXPECT_NE(source->find("blk.3.ffn_norm.weight"), nullptr);
    EXPECT_EQ(source->find("blk.3.post_attention_norm.weight"), nullptr);
    const TensorView* gate = source->find("blk.0.ffn_gate_exps.weight");
    ASSERT_NE(gate, nullptr);
    EXPECT_EQ(gate->ggml_type, kGgmlMXFP4);
}

TEST(GptOss, F32GgufMatchesTheFloat64Reference) {
    CFLOW_REQUIRE_GGML_FIXTURE(kGptOssGgufF32);
    CFLOW_REQUIRE_GGML_FIXTURE(kGptOssReference);
    const test::FamilyReference ref = llama_cpp_reference();
    auto source = read_gpt_oss_fixture(kGptOssGgufF32);
    ASSERT_TRUE(source.ok()) << source.error();
    auto model = test::convert_f32_and_load(*source, test::temp_dir("gpt-oss-f32") / "m.cflow");
    ASSERT_TRUE(model.ok()) << model.error();
    expect_gpt_oss_layout(**model, "F32 GGUF");
    test::expect_family_reference(*model, ref, "gpt-oss F32 GGUF");
    test::expect_family_reference(*model, ref, "gpt-oss F32 GGUF, staged experts", ExpertFetch::Staged);
}

// The MXFP4 experts dequantised to F32 (exact: E2M1 times a power of two) give the same logits.
TEST(GptOss, Mxfp4GgufConvertedToF32MatchesTheReference) {
    CFLOW_REQUIRE_GGML_FIXTURE(kGptOssGguf);
    CFLOW_REQUIRE_GGML_FIXTURE(kGptOssReference);
    const test::FamilyReference ref = llama_cpp_reference();
    auto source = read_gpt_oss_fixture(kGptOssGguf);
    ASSERT_TRUE(source.ok()) << source.error();
    auto model = test::convert_f32_and_load(*source, test::temp_dir("gpt-oss-mxfp4-f32") / "m.cflow");
    ASSERT_TRUE(model.ok()) << model.error();
    test::expect_family_reference(*model, ref, "gpt-oss MXFP4 GGUF as F32");
}

// The issue-32 path: the MXFP4 blocks copied into MXFP4 tiles, nothing re-quantised; the scalar
// kernel decodes exactly the weights the reference used.
TEST(GptOss, Mxfp4ExpertsKeptBlockForBlockMatchTheReference) {
    CFLOW_REQUIRE_GGML_FIXTURE(kGptOssGguf);
    CFLOW_REQUIRE_GGML_FIXTURE(kGptOssReference);
    const test::FamilyReference ref = llama_cpp_reference();
    auto source = read_gpt_oss_fixture(kGptOssGguf);
    ASSERT_TRUE(source.ok()) << source.error();
    ConvertOptions options;
    options.keep_source_types = true;  // keep_dtype_mask 0: every tile type (--keep-every-type)
    options.threads = 2;
    const fs::path out = test::temp_dir("gpt-oss-mxfp4-kept") / "m.cflow";
    auto report = convert_to_cflow(*source, out.string(), options);
    ASSERT_TRUE(report.ok()) << report.error();
    EXPECT_TRUE(report->requantised_tensors.empty()) << report->requantised_tensors.front();
    EXPECT_EQ(report->retiled_exact_tensors, 3u * 4u) << "gate, up and down expert banks of 4 layers";
    auto model = Model::load(out.string());
    ASSERT_TRUE(model.ok()) << model.error();
    expect_gpt_oss_layout(**model, "MXFP4 kept");
    test::expect_family_reference(*model, ref, "gpt-oss MXFP4 tiles");
    test::expect_family_reference(*model, ref, "gpt-oss MXFP4 tiles, staged experts", ExpertFetch::Staged);

    // The front ends' default (kNativeSpeedTileDtypes) keeps MXFP4 too: Q8_0 would double the bytes.
    options.keep_dtype_mask = kNativeSpeedTileDtypes;
    const fs::path fast = test::temp_dir("gpt-oss-mxfp4-default") / "m.cflow";
    auto fast_report = convert_to_cflow(*source, fast.string(), options);
    ASSERT_TRUE(fast_report.ok()) << fast_report.error();
    EXPECT_TRUE(fast_report->requantised_tensors.empty()) << fast_report->requantised_tensors.front();
    EXPECT_EQ(fast_report->retiled_exact_tensors, 3u * 4u);
    EXPECT_LE(fs::file_size(fast), fs::file_size(out));
}

// Prefill (batched, chunked, with the sinks, biases and clamp in the batched path) equals decoding
// token by token on the machine's best kernels, and Q8_0 stays near the reference.
TEST(GptOss, Q8PrefillEqualsDecodeOnTheBestKernels) {
    CFLOW_REQUIRE_GGML_FIXTURE(kGptOssGgufF32);
    CFLOW_REQUIRE_GGML_FIXTURE(kGptOssReference);
    const test::FamilyReference ref = llama_cpp_reference();
    auto source = read_gpt_oss_fixture(kGptOssGgufF32);
    ASSERT_TRUE(source.ok()) << source.error();
    ConvertOptions options;
    options.weight_quant = DType::Q8_0;
    options.threads = 2;
    const auto out = test::temp_dir("gpt-oss-q8") / "m.cflow";
    auto report = convert_to_cflow(*source, out.string(), options);
    ASSERT_TRUE(report.ok()) << report.error();
    auto model = Model::load(out.string());
    ASSERT_TRUE(model.ok()) << model.error();
    std::vector<float> stepped;
    const double gap = test::prefill_vs_decode_rel_l2(*model, ref.tokens, stepped);
    EXPECT_GE(gap, 0.0);
    EXPECT_LE(gap, 1e-5) << "prefill and decode disagree at the last of " << ref.tokens.size() << " positions";
    EXPECT_LE(test::family_rel_l2(stepped, ref.logits.back()), 0.05);
}

TEST(GptOss, FeaturesDescribeWhatTheEngineDoes) {
    CFLOW_REQUIRE_GGML_FIXTURE(kGptOssGgufF32);
    auto source = read_gpt_oss_fixture(kGptOssGgufF32);
    ASSERT_TRUE(source.ok()) << source.error();
    auto model = test::convert_f32_and_load(*source, test::temp_dir("gpt-oss-features") / "m.cflow");
    ASSERT_TRUE(model.ok()) << model.error();
    std::map<std::string, std::string> features;
    for (const ModelFeature& f : describe_features((*model)->file())) features[f.name] = f.detail;
    EXPECT_TRUE(features.count("attention sinks"));
    EXPECT_TRUE(features.count("output bias"));
    EXPECT_TRUE(features.count("MoE biases"));
    EXPECT_NE(features["clamped SwiGLU"].find("1.702"), std::string::npos) << features["clamped SwiGLU"];
    EXPECT_NE(features["sliding window"].find("8 positions on 2 of 4 layers"), std::string::npos) << features["sliding window"];
    EXPECT_NE(features["rope scaling"].find("YaRN"), std::string::npos) << features["rope scaling"];
}

// A Hugging Face folder runs as transformers runs it: YaRN's correction range kept fractional
// (the config's truncate: false), the reference's own logits.
TEST(GptOssHf, FoldersMatchTheFloat64Reference) {
    CFLOW_REQUIRE_GGML_FIXTURE(kGptOssHf);
    CFLOW_REQUIRE_GGML_FIXTURE(kGptOssHfMxfp4);
    CFLOW_REQUIRE_GGML_FIXTURE(kGptOssReference);
    const test::FamilyReference ref = test::load_family_reference(kGptOssReference);
    for (const char* folder : {kGptOssHf, kGptOssHfMxfp4}) {
        auto source = open_source_model((test::ggml_fixtures_dir() / folder).string());
        ASSERT_TRUE(source.ok()) << folder << ": " << source.error();
        EXPECT_EQ(source->config.architecture, "gpt-oss") << folder;
        EXPECT_NE(source->find("blk.2.ffn_norm.weight"), nullptr) << folder << ": post_attention_layernorm is the pre-MoE norm";
        auto model = test::convert_f32_and_load(*source, test::temp_dir("gpt-oss-hf-f32") / "m.cflow");
        ASSERT_TRUE(model.ok()) << folder << ": " << model.error();
        expect_gpt_oss_layout(**model, folder);
        test::expect_family_reference(*model, ref, std::string("gpt-oss HF ") + folder);
    }
}

// The released layout's nibble order, scale bytes and gate/up interleave, repacked: the same ggml
// MXFP4 blocks llama.cpp's converter writes into the GGUF, kept block for block in MXFP4 tiles.
TEST(GptOssHf, Mxfp4BlocksRepackToTheGgufBytes) {
    CFLOW_REQUIRE_GGML_FIXTURE(kGptOssHfMxfp4);
    CFLOW_REQUIRE_GGML_FIXTURE(kGptOssGguf);
    CFLOW_REQUIRE_GGML_FIXTURE(kGptOssReference);
    auto hf = open_source_model((test::ggml_fixtures_dir() / kGptOssHfMxfp4).string());
    ASSERT_TRUE(hf.ok()) << hf.error();
    auto gguf = read_gpt_oss_fixture(kGptOssGguf);
    ASSERT_TRUE(gguf.ok()) << gguf.error();
    for (uint32_t l = 0; l < 4; ++l) {
        for (const char* part : {"ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight", "ffn_gate_exps.bias",
                                 "ffn_up_exps.bias", "ffn_down_exps.bias"}) {
            const std::string name = "blk." + std::to_string(l) + "." + part;
            const TensorView* a = hf->find(name);
            const TensorView* b = gguf->find(name);
            ASSERT_NE(a, nullptr) << name;
            ASSERT_NE(b, nullptr) << name;
            EXPECT_EQ(a->shape, b->shape) << name;
            EXPECT_EQ(a->ggml_type, b->ggml_type) << name;
            ASSERT_EQ(a->bytes, b->bytes) << name;
            EXPECT_EQ(std::memcmp(a->data, b->data, a->bytes), 0) << name << " differs from the GGUF's";
        }
    }
    ConvertOptions options;
    options.keep_dtype_mask = kNativeSpeedTileDtypes;
    options.keep_source_types = true;
    options.threads = 2;
    const fs::path out = test::temp_dir("gpt-oss-hf-mxfp4-kept") / "m.cflow";
    auto report = convert_to_cflow(*hf, out.string(), options);
    ASSERT_TRUE(report.ok()) << report.error();
    EXPECT_EQ(report->retiled_exact_tensors, 3u * 4u) << "gate, up and down expert banks of 4 layers";
    auto model = Model::load(out.string());
    ASSERT_TRUE(model.ok()) << model.error();
    test::expect_family_reference(*model, test::load_family_reference(kGptOssReference), "gpt-oss HF MXFP4 tiles");
}

// A copy of the MXFP4 folder with config.json edited or one header byte of the weights changed.
fs::path hostile_gpt_oss_folder(const std::string& name, const std::string& config_from, const std::string& config_to,
                                const std::string& tensor_from = "", const std::string& tensor_to = "") {
    const fs::path src = test::ggml_fixtures_dir() / kGptOssHfMxfp4;
    const fs::path dir = test::temp_dir(name);
    for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}) {
        std::ifstream in(src / f, std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const std::string& from = std::string(f) == "config.json" ? config_from : std::string(f) == "model.safetensors" ? tensor_from : std::string();
        const std::string& to = std::string(f) == "config.json" ? config_to : tensor_to;
        if (!from.empty()) {
            const size_t at = bytes.find(from);
            EXPECT_NE(at, std::string::npos) << f << " has no '" << from << "'";
            if (at != std::string::npos) bytes.replace(at, from.size(), to);
        }
        std::ofstream(dir / f, std::ios::binary) << bytes;
    }
    return dir;
}

TEST(GptOssHfHostile, WhatTheReaderCannotHonourIsRefusedByName) {
    CFLOW_REQUIRE_GGML_FIXTURE(kGptOssHfMxfp4);
    struct Case {
        const char* what;
        std::string config_from, config_to, tensor_from, tensor_to;
        const char* expected;
    };
    const Case cases[] = {
        {"another quantization", "\"quant_method\": \"mxfp4\"", "\"quant_method\": \"gptq\"", "", "", "quant_method 'gptq'"},
        {"expert count off", "\"num_local_experts\": 8", "\"num_local_experts\": 7", "", "", "expected [7"},
        {"zero clamp", "\"swiglu_limit\": 7.0", "\"swiglu_limit\": 0.0", "", "", "swiglu_limit"},
        {"YaRN factor below 1", "\"factor\": 4.0", "\"factor\": 0.5", "", "", "factor"},
        {"unknown expert tensor", "", "", "layers.1.mlp.experts.down_proj_scales", "layers.1.mlp.experts.down_proj_scalez",
         "down_proj_scalez' is not a gpt-oss expert tensor"},
        {"a layer past the config", "", "", "layers.3.mlp.experts.down_proj_bias", "layers.7.mlp.experts.down_proj_bias",
         "past num_hidden_layers"},
    };
    int n = 0;
    for (const Case& c : cases) {
        const fs::path dir = hostile_gpt_oss_folder("gpt-oss-hf-hostile-" + std::to_string(n++), c.config_from, c.config_to,
                                                    c.tensor_from, c.tensor_to);
        auto r = open_source_model(dir.string());
        ASSERT_FALSE(r.ok()) << c.what;
        EXPECT_NE(r.error().find(c.expected), std::string::npos) << c.what << ": " << r.error();
    }
}

// Hostile variants: each a clear error naming what is wrong, never a crash or a silent model.
TEST(GptOssHostile, AMissingSinkOrBiasIsRefusedByName) {
    CFLOW_REQUIRE_GGML_FIXTURE(kGptOssGgufF32);
    auto read = read_gpt_oss_fixture(kGptOssGgufF32);
    ASSERT_TRUE(read.ok()) << read.error();
    for (const char* name : {"blk.2.attn_sinks.weight", "blk.1.attn_output.bias", "blk.3.ffn_gate_inp.bias",
                             "blk.2.ffn_down_exps.bias"}) {
        SourceModel bad = *read;
        ASSERT_EQ(bad.tensors.erase(name), 1u) << name;
        auto r = convert_to_cflow(bad, (test::temp_dir("gpt-oss-hostile") / "m.cflow").string(), {});
        ASSERT_FALSE(r.ok()) << name;
        EXPECT_NE(r.error().find(name), std::string::npos) << r.error();
    }
}

TEST(GptOssHostile, BadClampAndRopeFactorsAreRefused) {
    CFLOW_REQUIRE_GGML_FIXTURE(kGptOssGgufF32);
    auto read = read_gpt_oss_fixture(kGptOssGgufF32);
    ASSERT_TRUE(read.ok()) << read.error();
    struct Case {
        const char* what;
        void (*mutate)(ModelConfig&);
        const char* expected;
    };
    const Case cases[] = {
        {"zero limit", [](ModelConfig& c) { c.ffn_limit = 0.0f; }, "clamped SwiGLU"},
        {"NaN alpha", [](ModelConfig& c) { c.ffn_alpha = std::nanf(""); }, "clamped SwiGLU"},
        {"NaN YaRN divisor", [](ModelConfig& c) { c.rope_freq_factors[5] = std::nanf(""); }, "rope frequency factor 5"},
    };
    for (const Case& c : cases) {
        SourceModel bad = *read;
        c.mutate(bad.config);
        auto r = convert_to_cflow(bad, (test::temp_dir("gpt-oss-hostile-config") / "m.cflow").string(), {});
        ASSERT_FALSE(r.ok()) << c.what;
        EXPECT_NE(r.error().find(c.expected), std::string::npos) << c.what << ": " << r.error();
    }
}

} // namespace
} // namespace cflow
