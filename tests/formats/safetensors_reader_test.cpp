// safetensors files, HF model folders (config.json + single/sharded weights) and HF
// tokenizer files -> SourceModel.
#include <cstring>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cflow/formats/converter.h"
#include "cflow/formats/gguf.h"
#include "cflow/formats/safetensors.h"
#include "cflow/formats/source_model.h"
#include "source_writers.h"
#include "test_support.h"

namespace cflow {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::StTensor;

TEST(SafetensorsFile, ReadsTheSwiftTransformersFixtures) {
    CFLOW_REQUIRE_ASSET(dir, "assets/safetensors-fixtures/swift-transformers");
    auto f3 = read_safetensors_file((dir / "tensor-3d-float32.safetensors").string());
    ASSERT_TRUE(f3.ok()) << f3.error();
    auto v3 = f3->view("embedding");
    ASSERT_TRUE(v3.ok()) << v3.error();
    EXPECT_EQ(v3->dtype, DType::F32);
    EXPECT_EQ(v3->shape, (std::vector<uint64_t>{2, 2, 3}));
    ASSERT_EQ(v3->bytes, 12u * 4);
    std::vector<float> values(12);  // [2 x 2 x 3] f32
    std::memcpy(values.data(), v3->data, v3->bytes);
    EXPECT_EQ(values, (std::vector<float>{22, 23, 24, 11, 12, 13, 2, 3, 4, 1, 2, 3}));

    auto f4 = read_safetensors_file((dir / "tensor-4d-float32.safetensors").string());
    ASSERT_TRUE(f4.ok()) << f4.error();
    auto v4 = f4->view("embedding");
    ASSERT_TRUE(v4.ok()) << v4.error();
    EXPECT_EQ(v4->shape, (std::vector<uint64_t>{2, 3, 1, 3}));
    float last = 0;
    std::memcpy(&last, v4->data + v4->bytes - 4, 4);
    EXPECT_EQ(last, 19.0f);

    for (auto [file, dtype] : {std::pair{"tensor-1d-int32.safetensors", "I32"}, std::pair{"tensor-2d-float64.safetensors", "F64"}}) {
        auto f = read_safetensors_file((dir / file).string());
        ASSERT_TRUE(f.ok()) << f.error();  // the header itself is valid
        ASSERT_EQ(f->entries.size(), 1u);
        auto v = f->view("embedding");
        ASSERT_FALSE(v.ok());
        EXPECT_EQ(v.kind(), ErrorKind::Unsupported) << v.error();
        EXPECT_NE(v.error().find(std::string("tensor 'embedding' has dtype ") + dtype), std::string::npos) << v.error();
        EXPECT_NE(v.error().find("supported dtypes: F32, F16, BF16"), std::string::npos) << v.error();
    }
    EXPECT_FALSE(f3->view("missing").ok());
}

std::vector<uint8_t> bf16_bytes(const std::vector<float>& v) {
    std::vector<uint8_t> out;
    for (float f : v) {
        uint32_t bits = 0;
        std::memcpy(&bits, &f, 4);
        test::put<uint16_t>(out, static_cast<uint16_t>(bits >> 16));
    }
    return out;
}

struct TinyLlama {
    uint64_t d = 64, layers = 2, heads = 4, kv = 2, ff = 128, vocab = 100;
    bool lm_head = false;
    bool biases = false;
};

// HF Llama-layout tensors for a 2-layer d=64 model: F32, BF16 (attention q/k) and F16 (v; raw bytes).
std::vector<StTensor> llama_tensors(const TinyLlama& t) {
    std::vector<StTensor> out;
    uint32_t seed = 1;
    auto f32 = [&](const std::string& name, std::vector<uint64_t> shape) {
        uint64_t n = 1;
        for (auto s : shape) n *= s;
        out.push_back({name, "F32", shape, test::f32_bytes(test::test_floats(n, seed++))});
    };
    const uint64_t dk = t.d / t.heads;
    f32("model.embed_tokens.weight", {t.vocab, t.d});
    f32("model.norm.weight", {t.d});
    if (t.lm_head) f32("lm_head.weight", {t.vocab, t.d});
    for (uint64_t l = 0; l < t.layers; ++l) {
        std::string p = "model.layers." + std::to_string(l) + ".";
        f32(p + "input_layernorm.weight", {t.d});
        f32(p + "post_attention_layernorm.weight", {t.d});
        out.push_back({p + "self_attn.q_proj.weight", "BF16", {t.heads * dk, t.d}, bf16_bytes(test::test_floats(t.d * t.d, seed++))});
        out.push_back({p + "self_attn.k_proj.weight", "BF16", {t.kv * dk, t.d}, bf16_bytes(test::test_floats(t.kv * dk * t.d, seed++))});
        out.push_back({p + "self_attn.v_proj.weight", "F16", {t.kv * dk, t.d}, std::vector<uint8_t>(t.kv * dk * t.d * 2, 0x3C)});
        f32(p + "self_attn.o_proj.weight", {t.d, t.heads * dk});
        if (t.biases) {
            f32(p + "self_attn.q_proj.bias", {t.heads * dk});
            f32(p + "self_attn.k_proj.bias", {t.kv * dk});
            f32(p + "self_attn.v_proj.bias", {t.kv * dk});
        }
        f32(p + "mlp.gate_proj.weight", {t.ff, t.d});
        f32(p + "mlp.up_proj.weight", {t.ff, t.d});
        f32(p + "mlp.down_proj.weight", {t.d, t.ff});
    }
    return out;
}

json llama_config(const TinyLlama& t) {
    return {{"architectures", {"LlamaForCausalLM"}},
            {"hidden_size", t.d},
            {"num_hidden_layers", t.layers},
            {"num_attention_heads", t.heads},
            {"num_key_value_heads", t.kv},
            {"intermediate_size", t.ff},
            {"vocab_size", t.vocab},
            {"max_position_embeddings", 256},
            {"rms_norm_eps", 1e-5},
            {"rope_theta", 500000.0},
            {"rope_scaling", nullptr},
            {"hidden_act", "silu"},
            {"tie_word_embeddings", false}};
}

fs::path write_folder(const std::string& name, const json& config, const std::vector<StTensor>& tensors) {
    auto dir = test::temp_dir(name);
    test::write_text(dir / "config.json", config.dump(2));
    test::write_bytes(dir / "model.safetensors", test::safetensors_bytes(tensors));
    return dir;
}

TEST(HfFolder, LlamaSingleFile) {
    TinyLlama t;
    auto tensors = llama_tensors(t);
    auto dir = write_folder("llama", llama_config(t), tensors);
    auto m = read_safetensors_model(dir.string());
    ASSERT_TRUE(m.ok()) << m.error();
    const ModelConfig& c = m->config;
    EXPECT_EQ(c.architecture, "llama");
    EXPECT_EQ(c.d_model, 64u);
    EXPECT_EQ(c.n_layers, 2u);
    EXPECT_EQ(c.n_heads, 4u);
    EXPECT_EQ(c.n_kv_heads, 2u);
    EXPECT_EQ(c.head_dim, 16u);
    EXPECT_EQ(c.d_ff, 128u);
    EXPECT_EQ(c.vocab_size, 100u);
    EXPECT_EQ(c.max_seq_len, 256u);
    EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
    EXPECT_FLOAT_EQ(c.rope_theta, 500000.0f);
    EXPECT_FALSE(c.rope_interleaved);
    EXPECT_NE(c.feature_flags & kFeatureTiedEmbeddings, 0);  // no lm_head.weight
    EXPECT_EQ(c.feature_flags & kFeatureQkvBias, 0);
    EXPECT_EQ(m->tensors.size(), tensors.size());
    EXPECT_EQ(m->files.size(), 1u);

    std::map<std::string, std::string> expect = {
        {"model.embed_tokens.weight", "token_embd.weight"},
        {"model.norm.weight", "output_norm.weight"},
        {"model.layers.1.input_layernorm.weight", "blk.1.attn_norm.weight"},
        {"model.layers.1.post_attention_layernorm.weight", "blk.1.ffn_norm.weight"},
        {"model.layers.0.self_attn.q_proj.weight", "blk.0.attn_q.weight"},
        {"model.layers.0.self_attn.k_proj.weight", "blk.0.attn_k.weight"},
        {"model.layers.0.self_attn.v_proj.weight", "blk.0.attn_v.weight"},
        {"model.layers.0.self_attn.o_proj.weight", "blk.0.attn_output.weight"},
        {"model.layers.1.mlp.gate_proj.weight", "blk.1.ffn_gate.weight"},
        {"model.layers.1.mlp.up_proj.weight", "blk.1.ffn_up.weight"},
        {"model.layers.1.mlp.down_proj.weight", "blk.1.ffn_down.weight"}};
    for (const auto& [hf, canonical] : expect) {
        const TensorView* v = m->find(canonical);
        ASSERT_NE(v, nullptr) << canonical;
        auto it = std::find_if(tensors.begin(), tensors.end(), [&](const StTensor& s) { return s.name == hf; });
        ASSERT_NE(it, tensors.end());
        EXPECT_EQ(v->shape, it->shape) << canonical;
        ASSERT_EQ(v->bytes, it->data.size()) << canonical;
        EXPECT_EQ(std::memcmp(v->data, it->data.data(), v->bytes), 0) << canonical;
        EXPECT_NE(v->origin.find(hf), std::string::npos) << v->origin;
    }
    EXPECT_EQ(m->find("blk.0.attn_q.weight")->dtype, DType::BF16);
    EXPECT_EQ(m->find("blk.0.attn_v.weight")->dtype, DType::F16);
    EXPECT_EQ(m->find("blk.0.attn_k.weight")->shape, (std::vector<uint64_t>{32, 64}));
    EXPECT_EQ(m->metadata.get_string("general.name"), dir.filename().string());
    // The single file path (beside its config.json) reads the same model.
    auto by_file = open_source_model((dir / "model.safetensors").string());
    ASSERT_TRUE(by_file.ok()) << by_file.error();
    EXPECT_EQ(by_file->tensors.size(), tensors.size());
    auto by_dir = open_source_model(dir.string());
    ASSERT_TRUE(by_dir.ok()) << by_dir.error();
}

// No input is ever an output (issue 38): the folder's config.json (read into memory, never
// mapped) and any other file in it is refused as -o, the file untouched.
TEST(HfFolder, AFileOfTheFolderIsNeverTheOutput) {
    TinyLlama t;
    auto dir = write_folder("llama_inputs", llama_config(t), llama_tensors(t));
    test::write_text(dir / "notes.txt", "mine");
    auto m = read_safetensors_model(dir.string());
    ASSERT_TRUE(m.ok()) << m.error();
    for (const char* name : {"config.json", "notes.txt", "model.safetensors"}) {
        const std::vector<uint8_t> before = test::read_bytes(dir / name);
        auto r = convert_to_cflow(*m, (dir / name).string(), {});
        ASSERT_FALSE(r.ok()) << name;
        EXPECT_NE(r.error().find("the output is"), std::string::npos) << r.error();
        EXPECT_EQ(test::read_bytes(dir / name), before) << name;
    }
    auto fine = convert_to_cflow(*m, (dir / "model.cflow").string(), {});
    EXPECT_TRUE(fine.ok()) << fine.error();
}

TEST(HfFolder, ShardedWithIndex) {
    TinyLlama t;
    t.lm_head = true;
    auto tensors = llama_tensors(t);
    auto dir = test::temp_dir("sharded");
    test::write_text(dir / "config.json", llama_config(t).dump());
    std::vector<StTensor> a(tensors.begin(), tensors.begin() + 10), b(tensors.begin() + 10, tensors.end());
    test::write_bytes(dir / "model-00001-of-00002.safetensors", test::safetensors_bytes(a));
    test::write_bytes(dir / "model-00002-of-00002.safetensors", test::safetensors_bytes(b));
    json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", json::object()}};
    for (const auto& s : a) index["weight_map"][s.name] = "model-00001-of-00002.safetensors";
    for (const auto& s : b) index["weight_map"][s.name] = "model-00002-of-00002.safetensors";
    test::write_text(dir / "model.safetensors.index.json", index.dump());
    auto m = read_safetensors_model(dir.string());
    ASSERT_TRUE(m.ok()) << m.error();
    EXPECT_EQ(m->files.size(), 2u);  // each shard mapped once
    EXPECT_EQ(m->tensors.size(), tensors.size());
    EXPECT_EQ(m->config.feature_flags & kFeatureTiedEmbeddings, 0);
    const TensorView* out = m->find("output.weight");
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(std::memcmp(out->data, tensors[2].data.data(), out->bytes), 0);
    const TensorView* down = m->find("blk.1.ffn_down.weight");
    ASSERT_NE(down, nullptr);
    EXPECT_EQ(std::memcmp(down->data, tensors.back().data.data(), down->bytes), 0);

    // An index that names a tensor its shard lacks is an error naming both.
    index["weight_map"]["model.layers.0.mlp.extra.weight"] = "model-00001-of-00002.safetensors";
    test::write_text(dir / "model.safetensors.index.json", index.dump());
    auto bad = read_safetensors_model(dir.string());
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.kind(), ErrorKind::InvalidInput) << bad.error();
    EXPECT_NE(bad.error().find("'model.layers.0.mlp.extra.weight' listed in model.safetensors.index.json"), std::string::npos) << bad.error();
}

TEST(HfFolder, Qwen2BiasesSlidingWindowAndTying) {
    TinyLlama t;
    t.biases = true;
    t.lm_head = true;
    json cfg = llama_config(t);
    cfg["architectures"] = {"Qwen2ForCausalLM"};
    cfg["use_sliding_window"] = true;
    cfg["sliding_window"] = 4096;
    cfg["tie_word_embeddings"] = true;
    auto m = read_safetensors_model(write_folder("qwen2", cfg, llama_tensors(t)).string());
    ASSERT_TRUE(m.ok()) << m.error();
    EXPECT_EQ(m->config.architecture, "qwen2");
    EXPECT_NE(m->config.feature_flags & kFeatureQkvBias, 0);
    EXPECT_NE(m->config.feature_flags & kFeatureTiedEmbeddings, 0);
    EXPECT_EQ(m->find("output.weight"), nullptr);  // tied: lm_head ignored like HF does
    EXPECT_EQ(m->find("blk.1.attn_k.bias")->shape, (std::vector<uint64_t>{32}));
    EXPECT_EQ(m->config.sliding_window, 4096u);

    cfg["use_sliding_window"] = false;
    auto off = read_safetensors_model(write_folder("qwen2-nosw", cfg, llama_tensors(t)).string());
    ASSERT_TRUE(off.ok()) << off.error();
    EXPECT_EQ(off->config.sliding_window, 0u);

    cfg["architectures"] = {"MistralForCausalLM"};
    cfg["sliding_window"] = 2048;
    t.biases = false;
    auto mistral = read_safetensors_model(write_folder("mistral", cfg, llama_tensors(t)).string());
    ASSERT_TRUE(mistral.ok()) << mistral.error();
    EXPECT_EQ(mistral->config.architecture, "mistral");
    EXPECT_EQ(mistral->config.sliding_window, 2048u);
}

std::vector<StTensor> moe_tensors(const std::string& style, uint64_t d, uint64_t eff, uint64_t E, bool shared) {
    std::vector<StTensor> out;
    auto zeros = [](std::vector<uint64_t> shape) {
        uint64_t n = 1;
        for (auto s : shape) n *= s;
        return std::vector<uint8_t>(n * 4, 0);
    };
    auto add = [&](std::string name, std::vector<uint64_t> shape) { out.push_back({name, "F32", shape, zeros(shape)}); };
    add("model.embed_tokens.weight", {16, d});
    add("model.norm.weight", {d});
    const std::string p = "model.layers.0.";
    add(p + "input_layernorm.weight", {d});
    add(p + "post_attention_layernorm.weight", {d});
    for (const char* m : {"q", "k", "v", "o"}) add(p + "self_attn." + m + "_proj.weight", {d, d});
    add(p + (style == "mixtral" ? "block_sparse_moe.gate.weight" : "mlp.gate.weight"), {E, d});
    for (uint64_t e = 0; e < E; ++e) {
        std::string ep = p + (style == "mixtral" ? "block_sparse_moe.experts." : "mlp.experts.") + std::to_string(e) + ".";
        add(ep + (style == "mixtral" ? "w1.weight" : "gate_proj.weight"), {eff, d});
        add(ep + (style == "mixtral" ? "w3.weight" : "up_proj.weight"), {eff, d});
        add(ep + (style == "mixtral" ? "w2.weight" : "down_proj.weight"), {d, eff});
    }
    if (shared) {
        add(p + "mlp.shared_expert.gate_proj.weight", {48, d});
        add(p + "mlp.shared_expert.up_proj.weight", {48, d});
        add(p + "mlp.shared_expert.down_proj.weight", {d, 48});
        add(p + "mlp.shared_expert_gate.weight", {1, d});
    }
    return out;
}

TEST(HfFolder, MoeFamilies) {
    json base = {{"hidden_size", 32}, {"num_hidden_layers", 1}, {"num_attention_heads", 2}, {"vocab_size", 16},
                 {"num_experts_per_tok", 2}};
    json mixtral = base;
    mixtral["architectures"] = {"MixtralForCausalLM"};
    mixtral["num_local_experts"] = 4;
    mixtral["intermediate_size"] = 64;
    auto m = read_safetensors_model(write_folder("mixtral", mixtral, moe_tensors("mixtral", 32, 64, 4, false)).string());
    ASSERT_TRUE(m.ok()) << m.error();
    EXPECT_EQ(m->config.n_experts, 4u);
    EXPECT_EQ(m->config.top_k, 2u);
    EXPECT_EQ(m->config.expert_d_ff, 64u);
    EXPECT_EQ(m->config.d_ff, 0u);
    EXPECT_EQ(m->config.router_mode, RouterMode::SoftmaxTopK);
    EXPECT_EQ(m->find("blk.0.ffn_gate_inp.weight")->shape, (std::vector<uint64_t>{4, 32}));
    EXPECT_EQ(m->find("blk.0.ffn_gate.3.weight")->shape, (std::vector<uint64_t>{64, 32}));  // w1
    EXPECT_EQ(m->find("blk.0.ffn_up.3.weight")->shape, (std::vector<uint64_t>{64, 32}));    // w3
    EXPECT_EQ(m->find("blk.0.ffn_down.0.weight")->shape, (std::vector<uint64_t>{32, 64}));  // w2

    json qwen = base;
    qwen["architectures"] = {"Qwen2MoeForCausalLM"};
    qwen["num_experts"] = 4;
    qwen["moe_intermediate_size"] = 64;
    qwen["shared_expert_intermediate_size"] = 48;
    qwen["intermediate_size"] = 999;
    auto q = read_safetensors_model(write_folder("qwenmoe", qwen, moe_tensors("qwen", 32, 64, 4, true)).string());
    ASSERT_TRUE(q.ok()) << q.error();
    EXPECT_EQ(q->config.shared_expert_d_ff, 48u);
    EXPECT_EQ(q->config.expert_d_ff, 64u);
    EXPECT_EQ(q->config.router_mode, RouterMode::SoftmaxAllNoRenorm);  // norm_topk_prob defaults to false
    EXPECT_EQ(q->find("blk.0.ffn_gate_inp_shexp.weight")->shape, (std::vector<uint64_t>{32}));
    EXPECT_EQ(q->find("blk.0.ffn_down_shexp.weight")->shape, (std::vector<uint64_t>{32, 48}));
    EXPECT_NE(q->find("blk.0.ffn_up.2.weight"), nullptr);

    json olmoe = base;
    olmoe["architectures"] = {"OlmoeForCausalLM"};
    olmoe["num_experts"] = 4;
    olmoe["intermediate_size"] = 64;
    olmoe["norm_topk_prob"] = true;
    auto o = read_safetensors_model(write_folder("olmoe", olmoe, moe_tensors("olmoe", 32, 64, 4, false)).string());
    ASSERT_TRUE(o.ok()) << o.error();
    EXPECT_EQ(o->config.architecture, "olmoe");
    EXPECT_EQ(o->config.router_mode, RouterMode::SoftmaxTopK);
}

TEST(HfFolder, PipelineNativeFields) {
    TinyLlama t;
    json cfg = llama_config(t);
    cfg["combine_style"] = "DelayedSum";
    cfg["dense_delay"] = 1;
    cfg["expert_delay"] = 2;
    cfg["merge_interval"] = 4;
    cfg["hidden_act"] = "gelu_pytorch_tanh";
    cfg["router_mode"] = "softmax_all_no_renorm";
    cfg["final_logit_softcap"] = 30.0;
    auto m = read_safetensors_model(write_folder("native", cfg, llama_tensors(t)).string());
    ASSERT_TRUE(m.ok()) << m.error();
    EXPECT_EQ(m->config.combine_style, CombineStyle::DelayedSum);
    EXPECT_EQ(m->config.dense_delay, 1);
    EXPECT_EQ(m->config.expert_delay, 2);
    EXPECT_EQ(m->config.merge_interval, 4);
    EXPECT_EQ(m->config.ffn_activation, FfnActivation::GeGLUTanh);
    EXPECT_EQ(m->config.router_mode, RouterMode::SoftmaxAllNoRenorm);
    EXPECT_FLOAT_EQ(m->config.final_logit_softcap, 30.0f);

    cfg["combine_style"] = 6;
    cfg["n_blocks"] = 2;
    cfg["n_iter"] = 3;
    cfg["ffn_activation"] = "swiglu";
    auto f = read_safetensors_model(write_folder("native2", cfg, llama_tensors(t)).string());
    ASSERT_TRUE(f.ok()) << f.error();
    EXPECT_EQ(f->config.combine_style, CombineStyle::FixedPoint);
    EXPECT_EQ(f->config.n_blocks, 2);
    EXPECT_EQ(f->config.n_iter, 3);
    EXPECT_EQ(f->config.ffn_activation, FfnActivation::SwiGLU);

    cfg["combine_style"] = "Diagonal";
    auto bad = read_safetensors_model(write_folder("native3", cfg, llama_tensors(t)).string());
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.kind(), ErrorKind::InvalidInput) << bad.error();
    EXPECT_NE(bad.error().find("field 'combine_style'"), std::string::npos) << bad.error();
}

TEST(HfFolder, UnsupportedOrIncompleteRopeScalingAndUnknownTensorsAreRefused) {
    TinyLlama t;
    json cfg = llama_config(t);
    cfg["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 8.0}};
    auto m = read_safetensors_model(write_folder("rope", cfg, llama_tensors(t)).string());
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.kind(), ErrorKind::Unsupported) << m.error();
    EXPECT_NE(m.error().find("config.json: field 'rope_scaling' of type 'dynamic'"), std::string::npos) << m.error();

    // Llama 3's scaling is read (tests/parity/ggml/llama3_rope_test.cpp checks its numbers);
    // a block that lacks what it needs, or has a factor below 1, names the field.
    cfg["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
    m = read_safetensors_model(write_folder("rope_llama3_incomplete", cfg, llama_tensors(t)).string());
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.error().find("rope_scaling: required field 'original_max_position_embeddings' is missing"),
              std::string::npos) << m.error();
    cfg["rope_scaling"]["original_max_position_embeddings"] = 64;
    cfg["rope_scaling"]["factor"] = 0.5;
    m = read_safetensors_model(write_folder("rope_llama3_factor", cfg, llama_tensors(t)).string());
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.error().find("rope_scaling: field 'factor' must be a finite number >= 1"), std::string::npos) << m.error();
    cfg["rope_scaling"]["factor"] = 8.0;
    m = read_safetensors_model(write_folder("rope_llama3", cfg, llama_tensors(t)).string());
    ASSERT_TRUE(m.ok()) << m.error();
    EXPECT_EQ(m->config.rope_freq_factors.size(), rotary_dim_count(m->config.head_dim, m->config.rope_fraction) / 2);

    auto tensors = llama_tensors(t);
    tensors.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", "F32", {8}, std::vector<uint8_t>(32, 0)});
    auto ok = read_safetensors_model(write_folder("invfreq", llama_config(t), tensors).string());
    ASSERT_TRUE(ok.ok()) << ok.error();  // rotary buffers are ignored
    tensors.push_back({"model.vision_tower.weight", "F32", {8}, std::vector<uint8_t>(32, 0)});
    auto unknown = read_safetensors_model(write_folder("unknown", llama_config(t), tensors).string());
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.kind(), ErrorKind::Unsupported) << unknown.error();
    EXPECT_NE(unknown.error().find("'model.vision_tower.weight' has no canonical name"), std::string::npos) << unknown.error();
}

// A tiny model folder with the tokenizer files of an asset folder copied in.
fs::path folder_with_tokenizer(const std::string& name, const fs::path& tokenizer_dir) {
    TinyLlama t;
    auto dir = write_folder(name, llama_config(t), llama_tensors(t));
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
        if (fs::exists(tokenizer_dir / f)) fs::copy_file(tokenizer_dir / f, dir / f);
    return dir;
}

TEST(HfTokenizer, Gpt2MatchesLlamaCppVocab) {
    CFLOW_REQUIRE_ASSET(tok, "assets/tokenizers/gpt2-hf");
    CFLOW_REQUIRE_ASSET(ref, "assets/tokenizer-vocab-gguf/llama.cpp/ggml-vocab-gpt-2.gguf");
    auto m = read_safetensors_model(folder_with_tokenizer("gpt2", tok).string());
    ASSERT_TRUE(m.ok()) << m.error();
    auto g = read_gguf(ref.string());
    ASSERT_TRUE(g.ok()) << g.error();
    const Metadata& md = m->metadata;
    EXPECT_EQ(md.get_string("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(md.get_string("tokenizer.ggml.pre"), "gpt2");
    ASSERT_NE(md.get_strings("tokenizer.ggml.tokens"), nullptr);
    EXPECT_EQ(md.get_strings("tokenizer.ggml.tokens")->size(), 50257u);
    EXPECT_EQ(*md.get_strings("tokenizer.ggml.tokens"), *g->metadata.get_strings("tokenizer.ggml.tokens"));
    ASSERT_NE(md.get_strings("tokenizer.ggml.merges"), nullptr);
    EXPECT_EQ(*md.get_strings("tokenizer.ggml.merges"), *g->metadata.get_strings("tokenizer.ggml.merges"));
    EXPECT_EQ(*md.get_ints("tokenizer.ggml.token_type"), *g->metadata.get_ints("tokenizer.ggml.token_type"));
    EXPECT_EQ(md.get_int("tokenizer.ggml.bos_token_id"), 50256);
    EXPECT_EQ(md.get_int("tokenizer.ggml.eos_token_id"), 50256);
    EXPECT_FALSE(md.contains("tokenizer.chat_template"));
}

TEST(HfTokenizer, Llama2MatchesSentencePieceVocab) {
    CFLOW_REQUIRE_ASSET(tok, "assets/tokenizers/llama2-hf-swift-transformers");
    CFLOW_REQUIRE_ASSET(ref, "assets/tokenizer-vocab-gguf/llama.cpp/ggml-vocab-llama-spm.gguf");
    auto m = read_safetensors_model(folder_with_tokenizer("llama2", tok).string());
    ASSERT_TRUE(m.ok()) << m.error();
    auto g = read_gguf(ref.string());
    ASSERT_TRUE(g.ok()) << g.error();
    const Metadata& md = m->metadata;
    EXPECT_EQ(md.get_string("tokenizer.ggml.model"), "llama");
    const auto* tokens = md.get_strings("tokenizer.ggml.tokens");
    ASSERT_NE(tokens, nullptr);
    EXPECT_EQ(tokens->size(), 32000u);
    EXPECT_EQ(*tokens, *g->metadata.get_strings("tokenizer.ggml.tokens"));
    EXPECT_EQ(*md.get_ints("tokenizer.ggml.token_type"), *g->metadata.get_ints("tokenizer.ggml.token_type"));
    EXPECT_EQ(md.get_ints("tokenizer.ggml.token_type")->at(3), 6);    // <0x00>
    EXPECT_EQ(md.get_ints("tokenizer.ggml.token_type")->at(258), 6);  // <0xFF>
    EXPECT_EQ(md.get_int("tokenizer.ggml.bos_token_id"), 1);
    EXPECT_EQ(md.get_int("tokenizer.ggml.eos_token_id"), 2);
    EXPECT_EQ(md.get_int("tokenizer.ggml.unknown_token_id"), 0);
    EXPECT_EQ(md.get_bool("tokenizer.ggml.add_bos_token"), true);
    EXPECT_EQ(md.get_bool("tokenizer.ggml.add_eos_token"), false);
    EXPECT_EQ(md.get_bool("tokenizer.ggml.add_space_prefix"), true);
    // Merge-rank scores order the merged pieces as SentencePiece's own scores do.
    const auto* scores = md.get_floats("tokenizer.ggml.scores");
    const auto* ref_scores = g->metadata.get_floats("tokenizer.ggml.scores");
    ASSERT_TRUE(scores && ref_scores);
    size_t agree = 0, pairs = 0;
    for (size_t i = 259; i + 1 < 32000; ++i) {
        if ((*scores)[i] == 0 || (*scores)[i + 1] == 0) continue;
        ++pairs;
        agree += ((*scores)[i] >= (*scores)[i + 1]) == ((*ref_scores)[i] >= (*ref_scores)[i + 1]);
    }
    EXPECT_GT(pairs, 25000u);
    EXPECT_GE(static_cast<double>(agree) / static_cast<double>(pairs), 0.99) << agree << " of " << pairs;
}

TEST(HfTokenizer, Phi3SpecialTokensAndChatTemplate) {
    CFLOW_REQUIRE_ASSET(tok, "assets/tokenizers/phi-3-mini-hf");
    CFLOW_REQUIRE_ASSET(ref, "assets/tokenizer-vocab-gguf/llama.cpp/ggml-vocab-phi-3.gguf");
    auto m = read_safetensors_model(folder_with_tokenizer("phi3", tok).string());
    ASSERT_TRUE(m.ok()) << m.error();
    const Metadata& md = m->metadata;
    const auto* tokens = md.get_strings("tokenizer.ggml.tokens");
    ASSERT_NE(tokens, nullptr);
    EXPECT_EQ(tokens->size(), 32011u);  // 32000 + added tokens up to <|user|> = 32010
    EXPECT_EQ(tokens->at(32007), "<|end|>");
    EXPECT_EQ(md.get_ints("tokenizer.ggml.token_type")->at(32007), 3);  // control
    EXPECT_EQ(md.get_int("tokenizer.ggml.bos_token_id"), 1);
    EXPECT_EQ(md.get_int("tokenizer.ggml.eos_token_id"), 32000);
    EXPECT_EQ(md.get_int("tokenizer.ggml.padding_token_id"), 32000);
    EXPECT_EQ(md.get_bool("tokenizer.ggml.add_bos_token"), false);
    auto tmpl = md.get_string("tokenizer.chat_template");
    ASSERT_TRUE(tmpl.has_value());
    EXPECT_NE(tmpl->find("<|assistant|>"), std::string::npos);
    auto g = read_gguf(ref.string());
    ASSERT_TRUE(g.ok()) << g.error();
    const auto* ref_tokens = g->metadata.get_strings("tokenizer.ggml.tokens");
    ASSERT_GE(ref_tokens->size(), tokens->size());
    EXPECT_TRUE(std::equal(tokens->begin(), tokens->end(), ref_tokens->begin()));
}

} // namespace
} // namespace cflow
