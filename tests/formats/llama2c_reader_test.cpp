// llama2.c reader: stories260K.bin against its GGUF conversion, the v1 export layout,
// the unshared classifier, and open_source_model dispatch.
#include <cstring>

#include <gtest/gtest.h>

#include "cflow/formats/source_model.h"
#include "source_writers.h"
#include "test_support.h"

namespace cflow {
namespace {

constexpr const char* kDir = "assets/models/llama2c-stories260K";

TEST(Llama2cReader, Stories260KGeometry) {
    CFLOW_REQUIRE_ASSET(dir, kDir);
    auto m = read_llama2c_model((dir / "stories260K.bin").string(), (dir / "tok512.bin").string());
    ASSERT_TRUE(m.ok()) << m.error();
    const ModelConfig& c = m->config;
    EXPECT_EQ(c.architecture, "llama2c");
    EXPECT_EQ(c.d_model, 64u);
    EXPECT_EQ(c.d_ff, 172u);
    EXPECT_EQ(c.n_layers, 5u);
    EXPECT_EQ(c.n_heads, 8u);
    EXPECT_EQ(c.n_kv_heads, 4u);
    EXPECT_EQ(c.head_dim, 8u);
    EXPECT_EQ(c.vocab_size, 512u);
    EXPECT_EQ(c.max_seq_len, 512u);
    EXPECT_TRUE(c.rope_interleaved);
    EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
    EXPECT_NE(c.feature_flags & kFeatureTiedEmbeddings, 0);
    // 1 embedding + 5 layers x 9 + final norm; no output.weight (shared classifier).
    EXPECT_EQ(m->tensors.size(), 47u);
    EXPECT_EQ(m->find("output.weight"), nullptr);
    EXPECT_EQ(m->find("blk.3.attn_v.weight")->shape, (std::vector<uint64_t>{32, 64}));
    EXPECT_EQ(m->find("blk.3.ffn_down.weight")->shape, (std::vector<uint64_t>{64, 172}));
    EXPECT_EQ(m->metadata.get_string("general.name"), "stories260K");
    EXPECT_EQ(m->metadata.get_string("general.source"), "stories260K.bin");
    EXPECT_EQ(m->metadata.get_bool("tokenizer.ggml.add_bos_token"), true);
    EXPECT_EQ(m->metadata.get_int("tokenizer.ggml.bos_token_id"), 1);
}

TEST(Llama2cReader, TensorsAndTokenizerEqualTheGguf) {
    CFLOW_REQUIRE_ASSET(dir, kDir);
    auto bin = read_llama2c_model((dir / "stories260K.bin").string(), (dir / "tok512.bin").string());
    ASSERT_TRUE(bin.ok()) << bin.error();
    auto gguf = read_gguf_model((dir / "stories260K.gguf").string());
    ASSERT_TRUE(gguf.ok()) << gguf.error();
    size_t compared = 0;
    for (const auto& [name, t] : bin->tensors) {
        const TensorView* g = gguf->find(name);
        ASSERT_NE(g, nullptr) << name;
        EXPECT_EQ(t.shape, g->shape) << name;
        ASSERT_EQ(t.bytes, g->bytes) << name;
        EXPECT_EQ(std::memcmp(t.data, g->data, t.bytes), 0) << name << " differs from the GGUF";
        ++compared;
    }
    EXPECT_EQ(compared, 47u);
    // The GGUF's output.weight is the converter's copy of the embedding.
    EXPECT_EQ(std::memcmp(gguf->find("output.weight")->data, bin->find("token_embd.weight")->data, 512 * 64 * 4), 0);

    const auto* tokens = bin->metadata.get_strings("tokenizer.ggml.tokens");
    const auto* gtokens = gguf->metadata.get_strings("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens && gtokens);
    EXPECT_EQ(*tokens, *gtokens);
    const auto* scores = bin->metadata.get_floats("tokenizer.ggml.scores");
    const auto* gscores = gguf->metadata.get_floats("tokenizer.ggml.scores");
    ASSERT_TRUE(scores && gscores);
    EXPECT_EQ(*scores, *gscores);
    const auto* types = bin->metadata.get_ints("tokenizer.ggml.token_type");
    const auto* gtypes = gguf->metadata.get_ints("tokenizer.ggml.token_type");
    ASSERT_TRUE(types && gtypes);
    EXPECT_EQ(*types, *gtypes);
}

// Rewrites the legacy stories260K.bin as llama2.c's version-1 export (export.py version1_export).
std::vector<uint8_t> to_v1(const std::vector<uint8_t>& legacy, bool shared) {
    int32_t p[7];
    std::memcpy(p, legacy.data(), 28);
    const uint64_t dim = p[0], hidden = p[1], L = p[2], heads = p[3], kv = p[4], vocab = p[5] < 0 ? -p[5] : p[5];
    const uint64_t kv_dim = dim / heads * kv;
    const uint8_t* w = legacy.data() + 28;
    auto take = [&](uint64_t floats) {
        const uint8_t* at = w;
        w += floats * 4;
        return std::make_pair(at, floats * 4);
    };
    auto embd = take(vocab * dim), att = take(L * dim), wq = take(L * dim * dim), wk = take(L * kv_dim * dim),
         wv = take(L * kv_dim * dim), wo = take(L * dim * dim), ffn = take(L * dim), w1 = take(L * hidden * dim),
         w2 = take(L * dim * hidden), w3 = take(L * hidden * dim), fin = take(dim);
    std::vector<uint8_t> out;
    test::put<uint32_t>(out, 0x616b3432u);
    test::put<int32_t>(out, 1);
    p[5] = static_cast<int32_t>(vocab);
    for (int32_t x : p) test::put(out, x);
    test::put<uint8_t>(out, shared ? 1 : 0);
    out.resize(256, 0);
    for (auto [at, n] : {att, ffn, fin, embd, wq, wk, wv, wo, w1, w2, w3}) out.insert(out.end(), at, at + n);
    if (!shared) out.insert(out.end(), embd.first, embd.first + embd.second);  // a classifier equal to the embedding
    return out;
}

TEST(Llama2cReader, Version1ExportReadsIdentically) {
    CFLOW_REQUIRE_ASSET(dir, kDir);
    auto legacy = read_llama2c_model((dir / "stories260K.bin").string(), (dir / "tok512.bin").string());
    ASSERT_TRUE(legacy.ok()) << legacy.error();
    auto tmp = test::temp_dir("v1");
    auto bytes = test::read_bytes(dir / "stories260K.bin");
    for (bool shared : {true, false}) {
        auto path = tmp / (shared ? "v1_shared.bin" : "v1_unshared.bin");
        test::write_bytes(path, to_v1(bytes, shared));
        auto v1 = read_llama2c_model(path.string(), (dir / "tok512.bin").string());
        ASSERT_TRUE(v1.ok()) << v1.error();
        EXPECT_EQ(v1->config.d_model, legacy->config.d_model);
        EXPECT_EQ(v1->config.n_kv_heads, legacy->config.n_kv_heads);
        EXPECT_EQ(v1->config.vocab_size, legacy->config.vocab_size);
        EXPECT_EQ(v1->tensors.size(), legacy->tensors.size() + (shared ? 0 : 1));
        EXPECT_EQ((v1->config.feature_flags & kFeatureTiedEmbeddings) != 0, shared);
        for (const auto& [name, t] : legacy->tensors) {
            const TensorView* o = v1->find(name);
            ASSERT_NE(o, nullptr) << name;
            ASSERT_EQ(o->bytes, t.bytes) << name;
            EXPECT_EQ(o->shape, t.shape) << name;
            EXPECT_EQ(std::memcmp(o->data, t.data, t.bytes), 0) << name;
        }
        if (!shared) {
            const TensorView* out = v1->find("output.weight");
            ASSERT_NE(out, nullptr);
            EXPECT_EQ(std::memcmp(out->data, legacy->find("token_embd.weight")->data, out->bytes), 0);
        }
    }
    // Version 2 (Q8_0) export is refused by name.
    auto v2 = to_v1(bytes, true);
    v2[4] = 2;
    test::write_bytes(tmp / "v2.bin", v2);
    auto r = read_llama2c_model((tmp / "v2.bin").string(), (dir / "tok512.bin").string());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.kind(), ErrorKind::Unsupported) << r.error();
    EXPECT_NE(r.error().find("header version at offset 4: version 2 (Q8_0 export)"), std::string::npos) << r.error();
}

TEST(Llama2cReader, LegacyUnsharedClassifier) {
    CFLOW_REQUIRE_ASSET(dir, kDir);
    auto bytes = test::read_bytes(dir / "stories260K.bin");
    int32_t vocab = 0;
    std::memcpy(&vocab, bytes.data() + 20, 4);
    int32_t neg = -vocab;
    std::memcpy(bytes.data() + 20, &neg, 4);
    auto cls = test::test_floats(512 * 64, 77);  // [vocab x dim]
    auto cls_bytes = test::f32_bytes(cls);
    bytes.insert(bytes.end(), cls_bytes.begin(), cls_bytes.end());
    auto tmp = test::temp_dir("unshared");
    test::write_bytes(tmp / "m.bin", bytes);
    auto m = read_llama2c_model((tmp / "m.bin").string(), (dir / "tok512.bin").string());
    ASSERT_TRUE(m.ok()) << m.error();
    EXPECT_EQ(m->config.feature_flags & kFeatureTiedEmbeddings, 0);
    EXPECT_EQ(m->config.vocab_size, 512u);
    const TensorView* out = m->find("output.weight");
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(out->shape, (std::vector<uint64_t>{512, 64}));
    EXPECT_EQ(std::memcmp(out->data, cls.data(), cls_bytes.size()), 0);
}

TEST(SourceOpen, DispatchesOnWhatThePathIs) {
    CFLOW_REQUIRE_ASSET(dir, kDir);
    auto g = open_source_model((dir / "stories260K.gguf").string());
    ASSERT_TRUE(g.ok()) << g.error();
    EXPECT_EQ(g->config.architecture, "llama");
    auto b = open_source_model((dir / "stories260K.bin").string(), (dir / "tok512.bin").string());
    ASSERT_TRUE(b.ok()) << b.error();
    EXPECT_EQ(b->config.architecture, "llama2c");
    auto no_tok = open_source_model((dir / "stories260K.bin").string());
    ASSERT_FALSE(no_tok.ok());
    EXPECT_EQ(no_tok.kind(), ErrorKind::InvalidInput) << no_tok.error();
    EXPECT_NE(no_tok.error().find("needs its tokenizer.bin"), std::string::npos) << no_tok.error();
    // A GGUF under another extension is recognised by its magic.
    auto tmp = test::temp_dir("renamed");
    std::filesystem::copy_file(dir / "stories260K.gguf", tmp / "model.weights");
    auto renamed = open_source_model((tmp / "model.weights").string());
    ASSERT_TRUE(renamed.ok()) << renamed.error();
    EXPECT_EQ(renamed->tensors.size(), 48u);
    auto missing = open_source_model((tmp / "nope.gguf").string());
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.kind(), ErrorKind::Io) << missing.error();
    EXPECT_NE(missing.error().find("nope.gguf"), std::string::npos) << missing.error();
}

} // namespace
} // namespace cflow
