// GGUF reader: real files (stories260K, tiny-random F16, vocab-only) and written fixtures.
#include <cstring>

#include <gtest/gtest.h>

#include "cflow/formats/gguf.h"
#include "cflow/formats/gguf_writer.h"
#include "cflow/formats/source_model.h"
#include "source_writers.h"
#include "test_support.h"

namespace cflow {
namespace {

using test::GgufWriter;

TEST(GgufReader, Stories260KGeometryAndMetadata) {
    CFLOW_REQUIRE_ASSET(path, "assets/models/llama2c-stories260K/stories260K.gguf");
    auto m = read_gguf_model(path.string());
    ASSERT_TRUE(m.ok()) << m.error();
    const ModelConfig& c = m->config;
    EXPECT_EQ(c.architecture, "llama");
    EXPECT_EQ(c.d_model, 64u);
    EXPECT_EQ(c.d_ff, 172u);
    EXPECT_EQ(c.n_layers, 5u);
    EXPECT_EQ(c.n_heads, 8u);
    EXPECT_EQ(c.n_kv_heads, 4u);
    EXPECT_EQ(c.head_dim, 8u);
    EXPECT_EQ(c.vocab_size, 512u);
    EXPECT_EQ(c.max_seq_len, 2048u);  // the converter's default, per the asset README
    EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
    EXPECT_FLOAT_EQ(c.rope_fraction, 1.0f);
    EXPECT_TRUE(c.rope_interleaved);
    EXPECT_EQ(c.feature_flags & kFeatureTiedEmbeddings, 0);  // output.weight stored as a copy
    EXPECT_EQ(c.n_experts, 0u);
    EXPECT_EQ(m->tensors.size(), 48u);

    const TensorView* embd = m->find("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    EXPECT_EQ(embd->shape, (std::vector<uint64_t>{512, 64}));
    EXPECT_EQ(embd->bytes, 512u * 64 * 4);
    const TensorView* k = m->find("blk.4.attn_k.weight");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->shape, (std::vector<uint64_t>{32, 64}));
    const TensorView* down = m->find("blk.0.ffn_down.weight");
    ASSERT_NE(down, nullptr);
    EXPECT_EQ(down->shape, (std::vector<uint64_t>{64, 172}));
    const TensorView* out = m->find("output.weight");
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(std::memcmp(out->data, embd->data, embd->bytes), 0);

    ASSERT_NE(m->metadata.get_strings("tokenizer.ggml.tokens"), nullptr);
    EXPECT_EQ(m->metadata.get_strings("tokenizer.ggml.tokens")->size(), 512u);
    ASSERT_NE(m->metadata.get_floats("tokenizer.ggml.scores"), nullptr);
    ASSERT_NE(m->metadata.get_ints("tokenizer.ggml.token_type"), nullptr);
    EXPECT_EQ(m->metadata.get_ints("tokenizer.ggml.token_type")->at(0), 2);
    EXPECT_EQ(m->metadata.get_int("tokenizer.ggml.bos_token_id"), 1);
    EXPECT_EQ(m->metadata.get_int("tokenizer.ggml.eos_token_id"), 2);
    // u32 0xFFFFFFFF carries over as an Int, not truncated.
    EXPECT_EQ(m->metadata.get_int("tokenizer.ggml.padding_token_id"), 4294967295LL);
    EXPECT_EQ(m->metadata.get_string("general.architecture"), "llama");
}

TEST(GgufReader, TinyRandomF16) {
    CFLOW_REQUIRE_ASSET(path, "assets/models-random/ollama-llama-2-tiny-random/llama-2-tiny-random.gguf");
    auto m = read_gguf_model(path.string());
    ASSERT_TRUE(m.ok()) << m.error();
    const ModelConfig& c = m->config;
    EXPECT_EQ(c.d_model, 8u);
    EXPECT_EQ(c.n_layers, 1u);
    EXPECT_EQ(c.n_heads, 2u);
    EXPECT_EQ(c.head_dim, 4u);
    EXPECT_EQ(c.d_ff, 32u);
    EXPECT_EQ(c.vocab_size, 32000u);
    EXPECT_EQ(c.max_seq_len, 4096u);
    const TensorView* embd = m->find("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    EXPECT_EQ(embd->dtype, DType::F16);
    EXPECT_EQ(embd->shape, (std::vector<uint64_t>{32000, 8}));
    EXPECT_EQ(embd->bytes, 32000u * 8 * 2);
    const TensorView* gate = m->find("blk.0.ffn_gate.weight");
    ASSERT_NE(gate, nullptr);
    EXPECT_EQ(gate->shape, (std::vector<uint64_t>{32, 8}));
    EXPECT_EQ(m->find("blk.0.attn_norm.weight")->dtype, DType::F32);
    // The data section starts aligned and the last tensor ends exactly at the file end.
    auto g = read_gguf(path.string());
    ASSERT_TRUE(g.ok()) << g.error();
    EXPECT_EQ(g->data_offset % 32, 0u);
    const auto& last = g->tensors.back();
    EXPECT_EQ(g->data_offset + last.offset + last.bytes, std::filesystem::file_size(path));
}

TEST(GgufReader, VocabOnlyFilesParseMetadata) {
    CFLOW_REQUIRE_ASSET(gpt2, "assets/tokenizer-vocab-gguf/llama.cpp/ggml-vocab-gpt-2.gguf");
    auto g = read_gguf(gpt2.string());
    ASSERT_TRUE(g.ok()) << g.error();
    EXPECT_EQ(g->version, 3u);
    EXPECT_TRUE(g->tensors.empty());
    EXPECT_EQ(g->metadata.get_string("tokenizer.ggml.model"), "gpt2");
    ASSERT_NE(g->metadata.get_strings("tokenizer.ggml.tokens"), nullptr);
    EXPECT_EQ(g->metadata.get_strings("tokenizer.ggml.tokens")->size(), 50257u);
    ASSERT_NE(g->metadata.get_strings("tokenizer.ggml.merges"), nullptr);
    EXPECT_EQ(g->metadata.get_strings("tokenizer.ggml.merges")->size(), 50000u);
    EXPECT_TRUE(g->metadata.get_string("general.name").has_value());

    auto spm = read_gguf((gpt2.parent_path() / "ggml-vocab-llama-spm.gguf").string());
    ASSERT_TRUE(spm.ok()) << spm.error();
    EXPECT_EQ(spm->metadata.get_strings("tokenizer.ggml.tokens")->size(), 32000u);
    EXPECT_EQ(spm->metadata.get_floats("tokenizer.ggml.scores")->size(), 32000u);
    auto bert = read_gguf((gpt2.parent_path() / "ggml-vocab-bert-bge.gguf").string());
    ASSERT_TRUE(bert.ok()) << bert.error();
    EXPECT_EQ(bert->metadata.get_string("tokenizer.ggml.model"), "bert");
    EXPECT_EQ(bert->metadata.get_strings("tokenizer.ggml.tokens")->size(), 30522u);

    auto m = read_gguf_model(gpt2.string());
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.kind(), ErrorKind::InvalidInput) << m.error();  // a fine file, the wrong input for a model
    EXPECT_NE(m.error().find("has no tensors (vocab-only GGUF)"), std::string::npos) << m.error();
}

TEST(GgufReader, EveryVocabOnlyFileParses) {
    CFLOW_REQUIRE_ASSET(dir, "assets/tokenizer-vocab-gguf/llama.cpp");
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        if (e.path().extension() != ".gguf") continue;
        auto g = read_gguf(e.path().string());
        ASSERT_TRUE(g.ok()) << g.error();
        const auto* tokens = g->metadata.get_strings("tokenizer.ggml.tokens");
        ASSERT_NE(tokens, nullptr) << e.path();
        EXPECT_GT(tokens->size(), 1000u) << e.path();
        if (const auto* types = g->metadata.get_ints("tokenizer.ggml.token_type")) {
            EXPECT_EQ(types->size(), tokens->size());
        }
        ++files;
    }
    EXPECT_EQ(files, 12);
}

// A qwen2-style GGUF v2 with quantized tensors, biases, no output.weight (tied), and every
// metadata value type.
std::vector<uint8_t> qwen2_fixture(uint32_t version) {
    const uint64_t d = 64, ff = 96, vocab = 40, heads = 4, kv = 2, dk = 16;
    GgufWriter w(version);
    w.str("general.architecture", "qwen2");
    w.str("general.name", "tiny-qwen");
    w.u32("qwen2.embedding_length", d);
    w.u32("qwen2.block_count", 1);
    w.u32("qwen2.feed_forward_length", ff);
    w.u32("qwen2.attention.head_count", heads);
    w.u32("qwen2.attention.head_count_kv", kv);
    w.f32("qwen2.attention.layer_norm_rms_epsilon", 1e-6f);
    w.f32("qwen2.rope.freq_base", 1000000.0f);
    w.u32("qwen2.context_length", 32768);
    w.u32("qwen2.rope.dimension_count", 8);  // half of dk rotates
    w.raw("test.u8", 0, {200});
    w.raw("test.i8", 1, {0xFE});
    w.raw("test.i16", 3, {0x00, 0x80});
    w.raw("test.u64", 10, {1, 0, 0, 0, 0, 0, 0, 0});
    w.raw("test.i64", 11, {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF});
    w.raw("test.f64", 12, {0, 0, 0, 0, 0, 0, 0xF8, 0x3F});  // 1.5
    w.boolean("test.bool", true);
    std::vector<std::string> tokens;
    for (uint64_t i = 0; i < vocab; ++i) tokens.push_back(std::string("t").append(std::to_string(i)));
    w.strings("tokenizer.ggml.tokens", tokens);
    w.floats("tokenizer.ggml.scores", std::vector<float>(vocab, -1.0f));
    w.ints("tokenizer.ggml.token_type", std::vector<int32_t>(vocab, 1));
    w.str("tokenizer.chat_template", "{{ messages }}");
    // nested array: [[1, 2]] of u8
    w.raw("test.nested", 9, {9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 2});

    auto f32 = [](uint64_t n, uint32_t seed) { return test::f32_bytes(test::test_floats(n, seed)); };
    w.tensor("token_embd.weight", kGgmlQ8_0, {d, vocab}, std::vector<uint8_t>(vocab * d / 32 * 34, 7));
    w.tensor("output_norm.weight", kGgmlF32, {d}, f32(d, 1));
    w.tensor("blk.0.attn_norm.weight", kGgmlF32, {d}, f32(d, 2));
    w.tensor("blk.0.attn_q.weight", kGgmlQ4_0, {d, heads * dk}, std::vector<uint8_t>(heads * dk * d / 32 * 18, 3));
    w.tensor("blk.0.attn_k.weight", kGgmlF16, {d, kv * dk}, std::vector<uint8_t>(kv * dk * d * 2, 4));
    w.tensor("blk.0.attn_v.weight", kGgmlBF16, {d, kv * dk}, std::vector<uint8_t>(kv * dk * d * 2, 5));
    w.tensor("blk.0.attn_q.bias", kGgmlF32, {heads * dk}, f32(heads * dk, 3));
    w.tensor("blk.0.attn_k.bias", kGgmlF32, {kv * dk}, f32(kv * dk, 4));
    w.tensor("blk.0.attn_v.bias", kGgmlF32, {kv * dk}, f32(kv * dk, 5));
    w.tensor("blk.0.attn_output.weight", kGgmlF32, {heads * dk, d}, f32(d * heads * dk, 6));
    w.tensor("blk.0.ffn_norm.weight", kGgmlF32, {d}, f32(d, 7));
    w.tensor("blk.0.ffn_gate.weight", kGgmlF32, {d, ff}, f32(d * ff, 8));
    w.tensor("blk.0.ffn_up.weight", kGgmlF32, {d, ff}, f32(d * ff, 9));
    w.tensor("blk.0.ffn_down.weight", kGgmlF32, {ff, d}, f32(d * ff, 10));
    return w.bytes();
}

TEST(GgufReader, WrittenQwen2FixtureV2AndV3) {
    for (uint32_t version : {2u, 3u}) {
        auto dir = test::temp_dir("qwen2");
        auto path = dir / "tiny.gguf";
        test::write_bytes(path, qwen2_fixture(version));
        auto m = read_gguf_model(path.string());
        ASSERT_TRUE(m.ok()) << m.error();
        const ModelConfig& c = m->config;
        EXPECT_EQ(c.architecture, "qwen2");
        EXPECT_FALSE(c.rope_interleaved);
        EXPECT_NE(c.feature_flags & kFeatureQkvBias, 0);
        EXPECT_NE(c.feature_flags & kFeatureTiedEmbeddings, 0);
        EXPECT_EQ(c.head_dim, 16u);
        EXPECT_FLOAT_EQ(c.rope_fraction, 0.5f);
        EXPECT_FLOAT_EQ(c.rope_theta, 1000000.0f);
        EXPECT_FLOAT_EQ(c.norm_eps, 1e-6f);
        EXPECT_EQ(c.vocab_size, 40u);
        EXPECT_EQ(c.d_ff, 96u);

        const TensorView* q = m->find("blk.0.attn_q.weight");
        ASSERT_NE(q, nullptr);
        EXPECT_EQ(q->dtype, DType::Q4_0);
        EXPECT_EQ(q->shape, (std::vector<uint64_t>{64, 64}));
        EXPECT_EQ(q->bytes, 64u * 64 / 32 * 18);
        EXPECT_EQ(q->data[0], 3);
        EXPECT_EQ(m->find("token_embd.weight")->dtype, DType::Q8_0);
        EXPECT_EQ(m->find("token_embd.weight")->bytes, 40u * 64 / 32 * 34);
        EXPECT_EQ(m->find("blk.0.attn_k.weight")->dtype, DType::F16);
        EXPECT_EQ(m->find("blk.0.attn_v.weight")->dtype, DType::BF16);
        EXPECT_EQ(m->find("blk.0.attn_v.weight")->data[0], 5);
        auto expect_down = test::test_floats(96 * 64, 10);
        EXPECT_EQ(std::memcmp(m->find("blk.0.ffn_down.weight")->data, expect_down.data(), expect_down.size() * 4), 0);

        const Metadata& md = m->metadata;
        EXPECT_EQ(md.get_int("test.u8"), 200);
        EXPECT_EQ(md.get_int("test.i8"), -2);
        EXPECT_EQ(md.get_int("test.i16"), -32768);
        EXPECT_EQ(md.get_int("test.u64"), 1);
        EXPECT_EQ(md.get_int("test.i64"), -1);
        EXPECT_DOUBLE_EQ(md.get_float("test.f64").value_or(0), 1.5);
        EXPECT_EQ(md.get_bool("test.bool"), true);
        EXPECT_EQ(md.get_string("tokenizer.chat_template"), "{{ messages }}");
        EXPECT_FALSE(md.contains("test.nested"));
        auto g = read_gguf(path.string());
        ASSERT_TRUE(g.ok());
        ASSERT_EQ(g->skipped_keys.size(), 1u);
        EXPECT_EQ(g->skipped_keys[0], "test.nested (nested array)");
    }
}

// Every block type is sized from its blocks and surfaces with its exact ggml type: Q4_0 / Q8_0 as
// their own DType (they can be re-tiled), the others as GgmlBlock.
TEST(GgufReader, BlockTypesAreSizedAndKeepTheirGgmlType) {
    const uint64_t d = 256, vocab = 8;
    GgufWriter w;
    w.str("general.architecture", "llama");
    w.u32("llama.embedding_length", d);
    w.u32("llama.block_count", 1);
    w.u32("llama.feed_forward_length", 512);
    w.u32("llama.attention.head_count", 4);
    w.strings("tokenizer.ggml.tokens", std::vector<std::string>(vocab, "t"));
    w.tensor("token_embd.weight", kGgmlF32, {d, vocab}, std::vector<uint8_t>(vocab * d * 4, 0));
    std::vector<std::pair<std::string, const GgmlBlockType*>> written;
    for (const GgmlBlockType& t : ggml_block_types()) {
        const std::string name = "test." + std::string(t.name);
        w.tensor(name, t.ggml_type, {d, 3}, std::vector<uint8_t>(3 * d / t.block_elements * t.block_bytes, 1));
        written.emplace_back(name, &t);
    }
    auto dir = test::temp_dir("gguf-blocks");
    test::write_bytes(dir / "b.gguf", w.bytes());
    auto m = read_gguf_model((dir / "b.gguf").string());
    ASSERT_TRUE(m.ok()) << m.error();
    for (const auto& [name, t] : written) {
        const TensorView* v = m->find(name);
        ASSERT_NE(v, nullptr) << name;
        EXPECT_EQ(v->ggml_type, t->ggml_type) << name;
        EXPECT_EQ(v->bytes, 3 * d / t->block_elements * t->block_bytes) << name;
        EXPECT_EQ(v->shape, (std::vector<uint64_t>{3, d})) << name;
        const DType want = t->ggml_type == kGgmlF32    ? DType::F32
                           : t->ggml_type == kGgmlF16  ? DType::F16
                           : t->ggml_type == kGgmlBF16 ? DType::BF16
                           : t->ggml_type == kGgmlQ4_0 ? DType::Q4_0
                           : t->ggml_type == kGgmlQ8_0 ? DType::Q8_0
                                                       : DType::GgmlBlock;
        EXPECT_EQ(v->dtype, want) << name;
        EXPECT_EQ(gguf_tensor(*v).ggml_type, t->ggml_type) << name << ": the writer keeps the exact type";
    }
}

TEST(GgufReader, MoeArchitectures) {
    const uint64_t d = 32, eff = 64, E = 4, vocab = 16;
    auto f32 = [](uint64_t n) { return std::vector<uint8_t>(n * 4, 0); };
    for (std::string arch : {"olmoe", "qwen2moe", "llama"}) {
        GgufWriter w;
        w.str("general.architecture", arch);
        w.u32(arch + ".embedding_length", d);
        w.u32(arch + ".block_count", 1);
        w.u32(arch + ".attention.head_count", 2);
        w.u32(arch + ".expert_count", E);
        w.u32(arch + ".expert_used_count", 2);
        if (arch == "llama") w.u32("llama.feed_forward_length", eff);
        else w.u32(arch + ".expert_feed_forward_length", eff);
        if (arch == "qwen2moe") w.u32("qwen2moe.expert_shared_feed_forward_length", 48);
        w.tensor("token_embd.weight", kGgmlF32, {d, vocab}, f32(d * vocab));
        w.tensor("output.weight", kGgmlF32, {d, vocab}, f32(d * vocab));
        w.tensor("blk.0.ffn_gate_inp.weight", kGgmlF32, {d, E}, f32(d * E));
        w.tensor("blk.0.ffn_gate_exps.weight", kGgmlF32, {d, eff, E}, f32(d * eff * E));
        w.tensor("blk.0.ffn_down_exps.weight", kGgmlF32, {eff, d, E}, f32(d * eff * E));
        auto dir = test::temp_dir("moe-" + arch);
        test::write_bytes(dir / "moe.gguf", w.bytes());
        auto m = read_gguf_model((dir / "moe.gguf").string());
        ASSERT_TRUE(m.ok()) << m.error();
        EXPECT_EQ(m->config.n_experts, 4u) << arch;
        EXPECT_EQ(m->config.top_k, 2u) << arch;
        EXPECT_EQ(m->config.expert_d_ff, 64u) << arch;
        EXPECT_EQ(m->config.d_ff, 0u) << arch;
        EXPECT_EQ(m->config.shared_expert_d_ff, arch == "qwen2moe" ? 48u : 0u);
        EXPECT_EQ(m->config.router_mode, arch == "llama" ? RouterMode::SoftmaxTopK : RouterMode::SoftmaxAllNoRenorm) << arch;
        EXPECT_EQ(m->find("blk.0.ffn_gate_exps.weight")->shape, (std::vector<uint64_t>{4, 64, 32}));
        EXPECT_EQ(m->find("blk.0.ffn_down_exps.weight")->shape, (std::vector<uint64_t>{4, 32, 64}));
    }
}

TEST(GgufReader, UnknownArchitectureNamesSupportedOnes) {
    GgufWriter w;
    w.str("general.architecture", "mamba");
    w.tensor("token_embd.weight", kGgmlF32, {4, 4}, std::vector<uint8_t>(64, 0));
    auto dir = test::temp_dir("arch");
    test::write_bytes(dir / "m.gguf", w.bytes());
    auto m = read_gguf_model((dir / "m.gguf").string());
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.kind(), ErrorKind::Unsupported) << m.error();
    EXPECT_NE(m.error().find("'mamba' (general.architecture)"), std::string::npos) << m.error();
    EXPECT_NE(m.error().find("qwen2"), std::string::npos) << m.error();
}

TEST(GgufReader, TypeNames) {
    EXPECT_EQ(ggml_type_name(12), "Q4_K");
    EXPECT_EQ(ggml_type_name(30), "BF16");
    EXPECT_EQ(ggml_type_name(4), "type 4");
    EXPECT_EQ(ggml_type_name(1000), "type 1000");
}

} // namespace
} // namespace cflow
