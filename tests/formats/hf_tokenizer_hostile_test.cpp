// Hostile tokenizer.json / config.json files through the real readers: ids past what the file
// defines (one id of 16,777,215 padded the vocabulary to 16.7 M entries), one id given to two
// texts, and nesting deep enough to overflow nlohmann's recursive copy (~200k normalizers,
// SIGSEGV) all end in one error naming the file.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "cflow/formats/hf_tokenizer_files.h"
#include "cflow/formats/source_model.h"
#include "source_writers.h"
#include "test_support.h"

namespace cflow {
namespace {

namespace fs = std::filesystem;

std::string tokenizer_file(const std::string& name, const std::string& json) {
    const fs::path dir = test::temp_dir(name);
    test::write_text(dir / "tokenizer.json", json);
    return (dir / "tokenizer.json").string();
}

// A BPE vocabulary of n tokens "t0".."t{n-1}" with ids 0..n-1, then `extra` vocab entries.
std::string bpe_json(size_t n, const std::string& extra = "", const std::string& added_tokens = "[]") {
    std::string vocab;
    for (size_t i = 0; i < n; ++i) {
        if (i) vocab += ',';
        vocab.append("\"t").append(std::to_string(i)).append("\":").append(std::to_string(i));
    }
    if (!extra.empty()) vocab += "," + extra;
    return R"({"model":{"type":"BPE","vocab":{)" + vocab + R"(},"merges":[]},"added_tokens":)" + added_tokens + "}";
}

TEST(HfTokenizerHostile, AnIdFarPastTheFilesTokensIsRefusedNamingIt) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = read_hf_tokenizer(tokenizer_file("far_id", bpe_json(1000, R"("far":16777215)")));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(r.error().find("token 'far' has id 16777215, but the file defines only 1001 tokens"), std::string::npos)
        << r.error();
    EXPECT_LT(seconds, 5.0) << "the id must be refused before any padding is built";
    // The same id as an added token is refused too.
    auto added = read_hf_tokenizer(
        tokenizer_file("far_added", bpe_json(10, "", R"([{"id":16777215,"content":"<x>","special":true}])")));
    ASSERT_FALSE(added.ok());
    EXPECT_NE(added.error().find("'<x>' has id 16777215"), std::string::npos) << added.error();
}

// Issue 38: a 50 MB added token took 3.4 GB and 20 s to build (500 MB: 11 GB); a token, or a
// merge of two, longer than 64 KiB is refused with its id, and the message does not repeat it.
TEST(HfTokenizerHostile, AHugeTokenOrMergeIsRefusedWithoutRepeatingIt) {
    const std::string huge(size_t(1) << 20, 'a');
    auto added = read_hf_tokenizer(
        tokenizer_file("huge_added", bpe_json(10, "", R"([{"id":10,"content":")" + huge + R"(","special":true}])")));
    ASSERT_FALSE(added.ok());
    EXPECT_NE(added.error().find("token id 10 is 1048576 bytes long (a token may have at most 65536)"), std::string::npos)
        << added.error().substr(0, 300);
    EXPECT_LT(added.error().size(), 1000u);
    auto vocab = read_hf_tokenizer(tokenizer_file("huge_vocab", bpe_json(10, "\"" + huge + "\":10")));
    ASSERT_FALSE(vocab.ok());
    EXPECT_NE(vocab.error().find("token id 10 is 1048576 bytes long"), std::string::npos) << vocab.error().substr(0, 300);
    std::string merges_json = bpe_json(10);
    merges_json.replace(merges_json.find(R"("merges":[])"), 11, R"("merges":["t1 )" + huge + R"("])");
    auto merge = read_hf_tokenizer(tokenizer_file("huge_merge", merges_json));
    ASSERT_FALSE(merge.ok());
    EXPECT_NE(merge.error().find("model.merges[0] is 1048579 bytes long"), std::string::npos) << merge.error().substr(0, 300);
    // The longest token a real vocabulary has (a few hundred bytes) still loads.
    EXPECT_TRUE(read_hf_tokenizer(tokenizer_file("long_ok", bpe_json(10, "\"" + std::string(4096, ' ') + "\":10"))).ok());
}

TEST(HfTokenizerHostile, SmallGapsStillLoadAsPadding) {
    // 10 tokens and one added token at id 12: ids 10 and 11 become "[PADn]", as llama.cpp does.
    auto r = read_hf_tokenizer(tokenizer_file("gap", bpe_json(10, "", R"([{"id":12,"content":"<x>","special":true}])")));
    ASSERT_TRUE(r.ok()) << r.error();
    const auto* tokens = r->get_strings("tokenizer.ggml.tokens");
    ASSERT_NE(tokens, nullptr);
    ASSERT_EQ(tokens->size(), 13u);
    EXPECT_EQ((*tokens)[11], "[PAD11]");
    EXPECT_EQ((*tokens)[12], "<x>");
}

TEST(HfTokenizerHostile, OneIdForTwoTextsIsRefused) {
    auto r = read_hf_tokenizer(tokenizer_file("dup", bpe_json(4, R"("other":2)")));
    ASSERT_FALSE(r.ok());
    // nlohmann's object keeps keys sorted, so "other" is read before "t2".
    EXPECT_NE(r.error().find("token id 2 is given to both 'other' and 't2'"), std::string::npos) << r.error();
    // An added token that restates its vocabulary entry (same id, same text) is what real files do.
    auto restated = read_hf_tokenizer(
        tokenizer_file("restated", bpe_json(4, "", R"([{"id":3,"content":"t3","special":true}])")));
    EXPECT_TRUE(restated.ok()) << restated.error();
    auto clash = read_hf_tokenizer(
        tokenizer_file("clash", bpe_json(4, "", R"([{"id":3,"content":"<s>","special":true}])")));
    ASSERT_FALSE(clash.ok());
    EXPECT_NE(clash.error().find("token id 3 is given to both 't3' and '<s>'"), std::string::npos) << clash.error();
}

TEST(HfTokenizerHostile, DeeplyNestedNormalizersAreRefusedNotACrash) {
    // ~200k nested Sequence normalizers: the shape of the file that crashed.
    std::string deep;
    const size_t levels = 200000;
    for (size_t i = 0; i < levels; ++i) deep += R"({"type":"Sequence","normalizers":[)";
    for (size_t i = 0; i < levels; ++i) deep += "]}";
    const std::string json = R"({"normalizer":)" + deep + R"(,"model":{"type":"BPE","vocab":{"a":0},"merges":[]}})";
    const std::string path = tokenizer_file("deep", json);
    auto r = read_hf_tokenizer(path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(r.error().find(path + ": JSON nested 400001 levels deep; at most 256"), std::string::npos) << r.error();
}

TEST(HfTokenizerHostile, DeeplyNestedConfigIsRefusedNotACrash) {
    const fs::path dir = test::temp_dir("deep_config");
    test::write_text(dir / "config.json", R"({"architectures":["LlamaForCausalLM"],"x":)" + std::string(200000, '[') +
                                              std::string(200000, ']') + "}");
    test::write_bytes(dir / "model.safetensors",
                      test::safetensors_bytes({{"model.embed_tokens.weight", "F32", {4, 8}, std::vector<uint8_t>(128, 0)}}));
    auto r = read_safetensors_model(dir.string());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find("config.json: JSON nested 200001 levels deep"), std::string::npos) << r.error();
}

} // namespace
} // namespace cflow
