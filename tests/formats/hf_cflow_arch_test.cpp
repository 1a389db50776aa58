// HF folders of this project's own pipeline-native checkpoints (CflowForCausalLM, the
// layout tests/reference/make_reference_models.py writes): config keys, the moe.* /
// pre_moe_layernorm tensor names, and conversion of per-expert tensors for every combine style.
#include <cstring>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cflow/formats/cflow_reader.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/source_model.h"
#include "source_writers.h"
#include "test_support.h"

namespace cflow {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::StTensor;

struct CflowGeometry {
    uint64_t d = 32, layers = 2, heads = 2, kv = 1, dk = 16, ff = 64, experts = 4, top_k = 2, eff = 32, sff = 48, vocab = 40;
    bool moe_norm = true;
};

// The tensors make_reference_models.py writes for one Cflow checkpoint (ff / experts / sff 0 = absent).
std::vector<StTensor> cflow_tensors(const CflowGeometry& g) {
    std::vector<StTensor> out;
    uint32_t seed = 11;
    auto f32 = [&](const std::string& name, std::vector<uint64_t> shape) {
        uint64_t n = 1;
        for (auto s : shape) n *= s;
        out.push_back({name, "F32", shape, test::f32_bytes(test::test_floats(n, seed++))});
    };
    f32("model.embed_tokens.weight", {g.vocab, g.d});
    f32("model.norm.weight", {g.d});
    f32("lm_head.weight", {g.vocab, g.d});
    for (uint64_t l = 0; l < g.layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        f32(p + "input_layernorm.weight", {g.d});
        f32(p + "post_attention_layernorm.weight", {g.d});
        f32(p + "self_attn.q_proj.weight", {g.heads * g.dk, g.d});
        f32(p + "self_attn.k_proj.weight", {g.kv * g.dk, g.d});
        f32(p + "self_attn.v_proj.weight", {g.kv * g.dk, g.d});
        f32(p + "self_attn.o_proj.weight", {g.d, g.heads * g.dk});
        if (g.ff > 0) {
            f32(p + "mlp.gate_proj.weight", {g.ff, g.d});
            f32(p + "mlp.up_proj.weight", {g.ff, g.d});
            f32(p + "mlp.down_proj.weight", {g.d, g.ff});
        }
        if (g.experts == 0) continue;
        if (g.moe_norm) f32(p + "pre_moe_layernorm.weight", {g.d});
        f32(p + "moe.gate.weight", {g.experts, g.d});
        for (uint64_t e = 0; e < g.experts; ++e) {
            const std::string ep = p + "moe.experts." + std::to_string(e) + ".";
            f32(ep + "gate_proj.weight", {g.eff, g.d});
            f32(ep + "up_proj.weight", {g.eff, g.d});
            f32(ep + "down_proj.weight", {g.d, g.eff});
        }
        if (g.sff > 0) {
            f32(p + "moe.shared_expert.gate_proj.weight", {g.sff, g.d});
            f32(p + "moe.shared_expert.up_proj.weight", {g.sff, g.d});
            f32(p + "moe.shared_expert.down_proj.weight", {g.d, g.sff});
            f32(p + "moe.shared_expert_gate.weight", {1, g.d});
        }
    }
    return out;
}

json cflow_config(const CflowGeometry& g, int combine_style) {
    return {{"architectures", {"CflowForCausalLM"}},
            {"model_type", "cflow"},
            {"hidden_size", g.d},
            {"num_hidden_layers", g.layers},
            {"num_attention_heads", g.heads},
            {"num_key_value_heads", g.kv},
            {"head_dim", g.dk},
            {"intermediate_size", g.ff},
            {"num_experts", g.experts},
            {"num_experts_per_tok", g.experts ? g.top_k : 0},
            {"moe_intermediate_size", g.experts ? g.eff : 0},
            {"shared_expert_intermediate_size", g.sff},
            {"vocab_size", g.vocab},
            {"max_position_embeddings", 128},
            {"rms_norm_eps", 1e-5},
            {"rope_theta", 10000.0},
            {"tie_word_embeddings", false},
            {"combine_style", combine_style},
            {"dense_delay", 0},
            {"expert_delay", 0},
            {"merge_interval", 3},
            {"n_blocks", 0},
            {"n_iter", 0},
            {"ffn_activation", "geglu_tanh"},
            {"hidden_act", "gelu_pytorch_tanh"},
            {"router_mode", "softmax_all_no_renorm"},
            {"norm_topk_prob", false},
            {"final_logit_softcap", 0.0}};
}

fs::path write_cflow_folder(const std::string& name, const json& config, const std::vector<StTensor>& tensors) {
    auto dir = test::temp_dir(name);
    test::write_text(dir / "config.json", config.dump(2));
    test::write_bytes(dir / "model.safetensors", test::safetensors_bytes(tensors));
    return dir;
}

TEST(HfCflowArch, SourceIsTheFolderNameNotThePathAsTyped) {
    // general.source travels inside every converted model: the user's directory layout must not.
    CflowGeometry g;
    const fs::path dir = write_cflow_folder("cflow-source", cflow_config(g, 3), cflow_tensors(g));
    for (const std::string& typed : {dir.string(), dir.string() + "/"}) {
        auto m = read_safetensors_model(typed);
        ASSERT_TRUE(m.ok()) << m.error();
        EXPECT_EQ(m->metadata.get_string("general.source"), dir.filename().string()) << typed;
    }
}

TEST(HfCflowArch, ReadsEveryConfigKey) {
    CflowGeometry g;
    json cfg = cflow_config(g, 6);
    cfg["n_blocks"] = 2;
    cfg["n_iter"] = 3;
    cfg["merge_interval"] = 2;
    cfg["final_logit_softcap"] = 30.0;
    auto m = read_safetensors_model(write_cflow_folder("cflow-keys", cfg, cflow_tensors(g)).string());
    ASSERT_TRUE(m.ok()) << m.error();
    const ModelConfig& c = m->config;
    EXPECT_EQ(c.architecture, "cflow");
    EXPECT_EQ(c.d_model, 32u);
    EXPECT_EQ(c.n_layers, 2u);
    EXPECT_EQ(c.n_heads, 2u);
    EXPECT_EQ(c.n_kv_heads, 1u);
    EXPECT_EQ(c.head_dim, 16u);
    EXPECT_EQ(c.d_ff, 64u);
    EXPECT_EQ(c.n_experts, 4u);
    EXPECT_EQ(c.top_k, 2u);
    EXPECT_EQ(c.expert_d_ff, 32u);
    EXPECT_EQ(c.shared_expert_d_ff, 48u);
    EXPECT_EQ(c.vocab_size, 40u);
    EXPECT_EQ(c.max_seq_len, 128u);
    EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
    EXPECT_EQ(c.combine_style, CombineStyle::FixedPoint);
    EXPECT_EQ(c.n_blocks, 2);
    EXPECT_EQ(c.n_iter, 3);
    EXPECT_EQ(c.merge_interval, 2);
    EXPECT_EQ(c.ffn_activation, FfnActivation::GeGLUTanh);
    EXPECT_EQ(c.router_mode, RouterMode::SoftmaxAllNoRenorm);
    EXPECT_FLOAT_EQ(c.final_logit_softcap, 30.0f);
    EXPECT_EQ(c.feature_flags & kFeatureTiedEmbeddings, 0);

    cfg = cflow_config(g, 1);
    cfg["dense_delay"] = 1;
    cfg["expert_delay"] = 1;
    cfg["ffn_activation"] = "swiglu";
    cfg["hidden_act"] = "silu";
    cfg["router_mode"] = "softmax_topk";
    auto d = read_safetensors_model(write_cflow_folder("cflow-delayed", cfg, cflow_tensors(g)).string());
    ASSERT_TRUE(d.ok()) << d.error();
    EXPECT_EQ(d->config.combine_style, CombineStyle::DelayedSum);
    EXPECT_EQ(d->config.dense_delay, 1);
    EXPECT_EQ(d->config.expert_delay, 1);
    EXPECT_EQ(d->config.ffn_activation, FfnActivation::SwiGLU);
    EXPECT_EQ(d->config.router_mode, RouterMode::SoftmaxTopK);
}

TEST(HfCflowArch, MapsMoeTensorNamesWithoutClashingWithTheDenseGate) {
    CflowGeometry g;
    auto tensors = cflow_tensors(g);
    auto m = read_safetensors_model(write_cflow_folder("cflow-names", cflow_config(g, 3), tensors).string());
    ASSERT_TRUE(m.ok()) << m.error();
    EXPECT_EQ(m->tensors.size(), tensors.size());  // every tensor mapped, none dropped
    auto expect_same_data = [&](const std::string& hf, const std::string& canonical, std::vector<uint64_t> shape) {
        const TensorView* v = m->find(canonical);
        ASSERT_NE(v, nullptr) << canonical;
        EXPECT_EQ(v->shape, shape) << canonical;
        const StTensor* src = nullptr;
        for (const auto& t : tensors)
            if (t.name == hf) src = &t;
        ASSERT_NE(src, nullptr) << hf;
        ASSERT_EQ(v->bytes, src->data.size()) << canonical;
        EXPECT_EQ(std::memcmp(v->data, src->data.data(), v->bytes), 0) << hf << " -> " << canonical;
    };
    const std::string p = "model.layers.1.";
    expect_same_data(p + "mlp.gate_proj.weight", "blk.1.ffn_gate.weight", {64, 32});  // dense gate, not the router
    expect_same_data(p + "moe.gate.weight", "blk.1.ffn_gate_inp.weight", {4, 32});   // router
    expect_same_data(p + "pre_moe_layernorm.weight", "blk.1.moe_norm.weight", {32});
    expect_same_data(p + "post_attention_layernorm.weight", "blk.1.ffn_norm.weight", {32});
    expect_same_data(p + "moe.experts.3.gate_proj.weight", "blk.1.ffn_gate.3.weight", {32, 32});
    expect_same_data(p + "moe.experts.0.up_proj.weight", "blk.1.ffn_up.0.weight", {32, 32});
    expect_same_data(p + "moe.experts.2.down_proj.weight", "blk.1.ffn_down.2.weight", {32, 32});
    expect_same_data(p + "moe.shared_expert.gate_proj.weight", "blk.1.ffn_gate_shexp.weight", {48, 32});
    expect_same_data(p + "moe.shared_expert.up_proj.weight", "blk.1.ffn_up_shexp.weight", {48, 32});
    expect_same_data(p + "moe.shared_expert.down_proj.weight", "blk.1.ffn_down_shexp.weight", {32, 48});
    expect_same_data(p + "moe.shared_expert_gate.weight", "blk.1.ffn_gate_inp_shexp.weight", {32});  // [1 x d] -> [d]

    // A name outside the known set is still rejected, naming the tensor.
    tensors.push_back({p + "moe.experts.0.w1.weight", "F32", {32, 32}, test::f32_bytes(test::test_floats(32 * 32, 99))});
    auto bad = read_safetensors_model(write_cflow_folder("cflow-unknown", cflow_config(g, 3), tensors).string());
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.kind(), ErrorKind::Unsupported) << bad.error();  // a tensor this build cannot place
    EXPECT_NE(bad.error().find("moe.experts.0.w1.weight"), std::string::npos) << bad.error();
}

TEST(HfCflowArch, IntermediateSizeZeroMeansNoDenseFfn) {
    CflowGeometry g;
    g.ff = 0;
    g.sff = 0;
    g.moe_norm = false;
    auto m = read_safetensors_model(write_cflow_folder("cflow-moe-only", cflow_config(g, 3), cflow_tensors(g)).string());
    ASSERT_TRUE(m.ok()) << m.error();
    EXPECT_EQ(m->config.d_ff, 0u);
    EXPECT_EQ(m->config.n_experts, 4u);
    EXPECT_EQ(m->find("blk.0.ffn_gate.weight"), nullptr);

    CflowGeometry dense;
    dense.experts = 0;
    dense.sff = 0;
    auto dm = read_safetensors_model(write_cflow_folder("cflow-dense", cflow_config(dense, 0), cflow_tensors(dense)).string());
    ASSERT_TRUE(dm.ok()) << dm.error();
    EXPECT_EQ(dm->config.n_experts, 0u);
    EXPECT_EQ(dm->config.top_k, 0u);
}

TEST(HfCflowArch, RejectsInconsistentConfigs) {
    CflowGeometry g;
    auto expect_error = [&](const std::string& name, const json& cfg, const std::string& field) {
        auto m = read_safetensors_model(write_cflow_folder(name, cfg, cflow_tensors(g)).string());
        ASSERT_FALSE(m.ok()) << name;
        EXPECT_EQ(m.kind(), ErrorKind::InvalidInput) << m.error();
        EXPECT_NE(m.error().find("config.json"), std::string::npos) << m.error();
        EXPECT_NE(m.error().find(field), std::string::npos) << m.error();
    };
    json fp = cflow_config(g, 6);
    fp["n_blocks"] = 3;  // != num_hidden_layers
    fp["n_iter"] = 2;
    expect_error("cflow-bad-blocks", fp, "'n_blocks'");

    json none = cflow_config(g, 3);
    none["intermediate_size"] = 0;
    none["num_experts"] = 0;
    none["num_experts_per_tok"] = 0;
    none["shared_expert_intermediate_size"] = 0;
    expect_error("cflow-no-ffn", none, "'intermediate_size'");

    json k_without_experts = cflow_config(g, 3);
    k_without_experts["num_experts"] = 0;
    k_without_experts["shared_expert_intermediate_size"] = 0;
    expect_error("cflow-k-no-experts", k_without_experts, "'num_experts_per_tok'");

    json no_eff = cflow_config(g, 3);
    no_eff["moe_intermediate_size"] = 0;
    expect_error("cflow-no-eff", no_eff, "'moe_intermediate_size'");

    json bad_router = cflow_config(g, 3);
    bad_router["router_mode"] = "sigmoid";
    expect_error("cflow-bad-router", bad_router, "'router_mode'");
}

// The same model with its experts as one stacked [E x rows x cols] tensor per matrix (the GGUF
// form the converter already knew). Buffers live in `storage`.
SourceModel with_stacked_experts(const SourceModel& per_expert, std::vector<std::vector<uint8_t>>& storage) {
    SourceModel out = per_expert;
    const ModelConfig& c = per_expert.config;
    storage.reserve(3 * c.n_layers);
    for (uint32_t l = 0; l < c.n_layers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        for (const char* m : {"ffn_gate", "ffn_up", "ffn_down"}) {
            std::vector<uint8_t>& bank = storage.emplace_back();  // [E x rows x cols] f32
            std::vector<uint64_t> shape;
            for (uint32_t e = 0; e < c.n_experts; ++e) {
                const std::string name = p + m + "." + std::to_string(e) + ".weight";
                const TensorView* t = per_expert.find(name);
                if (!t) return out;  // the caller's comparison then fails on the missing tensor
                shape = t->shape;
                bank.insert(bank.end(), t->data, t->data + t->bytes);
                out.tensors.erase(name);
            }
            TensorView v;
            v.name = p + m + "_exps.weight";
            v.dtype = DType::F32;
            v.shape = {c.n_experts, shape[0], shape[1]};
            v.data = bank.data();
            v.bytes = bank.size();
            v.origin = "stacked " + v.name;
            out.tensors[v.name] = v;
        }
    }
    return out;
}

// Every combine style converts; per-expert tensors give byte-for-byte the file a stacked bank gives.
TEST(HfCflowArch, ConvertsEveryCombineStyleLikeAStackedBank) {
    CflowGeometry g;
    g.layers = 3;
    for (int style = 0; style <= 6; ++style) {
        json cfg = cflow_config(g, style);
        if (style == 1) {
            cfg["dense_delay"] = 1;
            cfg["expert_delay"] = 2;
        } else if (style == 2) {
            cfg["expert_delay"] = 1;
        } else if (style == 6) {
            cfg["n_blocks"] = 3;
            cfg["n_iter"] = 2;
        }
        const std::string name = "cflow-style-" + std::to_string(style);
        auto m = read_safetensors_model(write_cflow_folder(name, cfg, cflow_tensors(g)).string());
        ASSERT_TRUE(m.ok()) << m.error();
        std::vector<std::vector<uint8_t>> storage;
        SourceModel stacked = with_stacked_experts(*m, storage);
        for (DType quant : {DType::F32, DType::Q4_0}) {
            ConvertOptions options;
            options.weight_quant = quant;
            options.threads = 2;
            const auto dir = test::temp_dir(name + "-out-" + std::string(dtype_name(quant)));
            auto a = convert_to_cflow(*m, (dir / "per_expert.cflow").string(), options);
            ASSERT_TRUE(a.ok()) << "style " << style << ": " << a.error();
            auto b = convert_to_cflow(stacked, (dir / "stacked.cflow").string(), options);
            ASSERT_TRUE(b.ok()) << "style " << style << ": " << b.error();
            EXPECT_EQ(a->tensors, b->tensors + 3 * g.layers * (g.experts - 1));  // 3 x E per-expert tensors vs 3 banks
            EXPECT_EQ(test::read_bytes(dir / "per_expert.cflow"), test::read_bytes(dir / "stacked.cflow")) << "style " << style;

            auto file = CflowFile::open((dir / "per_expert.cflow").string());
            ASSERT_TRUE(file.ok()) << file.error();
            const GlobalHeader& h = (*file)->header();
            EXPECT_EQ(h.combine_style, style);
            EXPECT_EQ(h.n_experts, 4);
            EXPECT_EQ(h.top_k, 2);
            EXPECT_EQ(h.d_ff, 64u);
            EXPECT_EQ(h.expert_d_ff, 32u);
            EXPECT_EQ(h.dense_delay, style == 1 ? 1 : 0);
            EXPECT_EQ(h.expert_delay, style == 1 ? 2 : style == 2 ? 1 : 0);
            EXPECT_EQ((*file)->params().shared_expert_d_ff, 48u);
            EXPECT_EQ((*file)->params().n_iter, style == 6 ? 2 : 0);
            EXPECT_EQ((*file)->params().ffn_activation, static_cast<uint8_t>(FfnActivation::GeGLUTanh));
            EXPECT_EQ((*file)->params().router_mode, static_cast<uint8_t>(RouterMode::SoftmaxAllNoRenorm));
        }
    }
}

TEST(HfCflowArch, ConverterNamesAMissingPerExpertTensor) {
    CflowGeometry g;
    auto tensors = cflow_tensors(g);
    std::erase_if(tensors, [](const StTensor& t) { return t.name == "model.layers.1.moe.experts.2.up_proj.weight"; });
    auto m = read_safetensors_model(write_cflow_folder("cflow-missing-expert", cflow_config(g, 3), tensors).string());
    ASSERT_TRUE(m.ok()) << m.error();
    ConvertOptions options;
    options.weight_quant = DType::F32;
    auto r = convert_to_cflow(*m, (test::temp_dir("cflow-missing-expert-out") / "m.cflow").string(), options);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.kind(), ErrorKind::InvalidInput) << r.error();
    EXPECT_NE(r.error().find("blk.1.ffn_up.2.weight"), std::string::npos) << r.error();
}

} // namespace
} // namespace cflow
