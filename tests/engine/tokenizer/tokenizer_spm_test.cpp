// SPM tokenizer against llama2.c's stories260K vocabulary (tok512.bin, rebuilt as the GGUF keys that
// llama.cpp's convert-llama2c-to-ggml writes) and a small hand-made vocabulary for the edge rules.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cflow/engine/tokenizer/tokenizer.h"
#include "test_support.h"

namespace cflow {
namespace {

// tok512.bin: int32 max_token_length, then per token {f32 score, int32 len, bytes}.
Result<Metadata> tok512_metadata(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t offset = 4;  // skip max_token_length
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
    for (int i = 0; i < 512; ++i) {
        float score = 0;
        int32_t len = 0;
        if (offset + 8 > data.size()) return make_error("tok512.bin: truncated at token " + std::to_string(i));
        std::memcpy(&score, data.data() + offset, 4);
        std::memcpy(&len, data.data() + offset + 4, 4);
        offset += 8;
        if (len < 0 || static_cast<size_t>(len) > data.size() - offset)
            return make_error("tok512.bin: bad length at token " + std::to_string(i));
        std::string text(data.data() + offset, static_cast<size_t>(len));
        offset += static_cast<size_t>(len);
        int32_t type = 1;
        if (i == 0) {
            type = 2;
        } else if (i <= 2) {
            type = 3;
            text = i == 1 ? "<s>" : "</s>";  // llama2.c stores "\n<s>\n"
        } else if (text.size() == 6 && text.rfind("<0x", 0) == 0) {
            type = 6;
        }
        // llama2.c writes spaces; SentencePiece / GGUF write U+2581.
        std::string escaped;
        for (char c : text) {
            if (c == ' ')
                escaped += "\xE2\x96\x81";
            else
                escaped.push_back(c);
        }
        tokens.push_back(escaped);
        scores.push_back(score);
        types.push_back(type);
    }
    Metadata metadata;
    metadata.set("tokenizer.ggml.model", std::string("llama"));
    metadata.set("tokenizer.ggml.tokens", tokens);
    metadata.set("tokenizer.ggml.scores", scores);
    metadata.set("tokenizer.ggml.token_type", types);
    metadata.set("tokenizer.ggml.bos_token_id", int64_t{1});
    metadata.set("tokenizer.ggml.eos_token_id", int64_t{2});
    metadata.set("tokenizer.ggml.unknown_token_id", int64_t{0});
    metadata.set("tokenizer.ggml.add_bos_token", true);
    metadata.set("tokenizer.ggml.add_space_prefix", true);
    return metadata;
}

class Stories260KTokenizer : public ::testing::Test {
protected:
    void SetUp() override {
        CFLOW_REQUIRE_ASSET(path, "assets/models/llama2c-stories260K/tok512.bin");
        auto metadata = tok512_metadata(path);
        ASSERT_TRUE(metadata.ok()) << metadata.error();
        auto made = Tokenizer::from_metadata(*metadata);
        ASSERT_TRUE(made.ok()) << made.error();
        tokenizer_ = std::move(made).value();
    }
    std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(Stories260KTokenizer, OnceUponATimeMatchesLlama2c) {
    EXPECT_EQ(tokenizer_->kind(), TokenizerKind::Spm);
    EXPECT_EQ(tokenizer_->vocab_size(), 512u);
    EXPECT_EQ(tokenizer_->bos_id(), 1);
    EXPECT_EQ(tokenizer_->eos_id(), 2);
    EXPECT_EQ(tokenizer_->encode("Once upon a time", true), (std::vector<int32_t>{1, 403, 407, 261, 378}));
    EXPECT_EQ(tokenizer_->encode("Once upon a time", false), (std::vector<int32_t>{403, 407, 261, 378}));
}

TEST_F(Stories260KTokenizer, DecodeStripsTheDummyPrefixAfterBos) {
    EXPECT_EQ(tokenizer_->decode({1, 403, 407, 261, 378}), "Once upon a time");
    EXPECT_EQ(tokenizer_->decode({403, 407}), "Once upon");
    EXPECT_EQ(tokenizer_->token_bytes(403), " Once");
    EXPECT_EQ(tokenizer_->piece(403), "\xE2\x96\x81Once");
    EXPECT_TRUE(tokenizer_->is_control(1));
    EXPECT_TRUE(tokenizer_->is_control(2));
    EXPECT_FALSE(tokenizer_->is_control(403));
}

TEST_F(Stories260KTokenizer, RoundTripsStoryTextAndFallsBackToBytes) {
    const std::string story = "One day, she saw a big, red ball.\nIt was 42 \xC3\xA9t\xC3\xA9 \xE2\x9C\x93!";
    const auto ids = tokenizer_->encode(story, true);
    EXPECT_EQ(ids.front(), 1);
    EXPECT_EQ(tokenizer_->decode(ids), story);
    // "✓" (E2 9C 93) is not a piece of this 512-token vocabulary: it must come out as three byte tokens.
    const auto check = tokenizer_->encode("\xE2\x9C\x93", false);
    ASSERT_EQ(check.size(), 4u);  // dummy-prefix "▁", then the bytes
    EXPECT_EQ(tokenizer_->piece(check[1]), "<0xE2>");
    EXPECT_EQ(tokenizer_->piece(check[2]), "<0x9C>");
    EXPECT_EQ(tokenizer_->piece(check[3]), "<0x93>");
    EXPECT_EQ(tokenizer_->token_bytes(check[3]), "\x93");
}

TEST_F(Stories260KTokenizer, SpecialTextIsOrdinaryUnlessParseSpecial) {
    const auto plain = tokenizer_->encode("<s>", false, false);
    EXPECT_TRUE(std::find(plain.begin(), plain.end(), 1) == plain.end());
    EXPECT_EQ(tokenizer_->decode(plain), "<s>");
    EXPECT_EQ(tokenizer_->encode("<s>Once", false, true), (std::vector<int32_t>{1, 403}));
    EXPECT_TRUE(tokenizer_->encode("", false).empty());
    EXPECT_EQ(tokenizer_->encode("", true), (std::vector<int32_t>{1}));
}

// A hand-made vocabulary where the merge order matters: "ab" outscores "bc", so "abc" -> "ab" + "c".
TEST(SpmTokenizer, MergesHighestScoreFirstAndTiesGoLeft) {
    Metadata metadata;
    metadata.set("tokenizer.ggml.model", std::string("llama"));
    metadata.set("tokenizer.ggml.tokens", std::vector<std::string>{"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b",
                                                                     "c", "ab", "bc", "\xE2\x96\x81" "a", "aa"});
    metadata.set("tokenizer.ggml.scores", std::vector<float>{0, 0, 0, -1, -1, -1, -1, -2, -3, -10, -2});
    metadata.set("tokenizer.ggml.token_type", std::vector<int32_t>{2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1});
    metadata.set("tokenizer.ggml.add_space_prefix", false);
    auto made = Tokenizer::from_metadata(metadata);
    ASSERT_TRUE(made.ok()) << made.error();
    const auto& tokenizer = **made;
    EXPECT_EQ(tokenizer.encode("abc", false), (std::vector<int32_t>{7, 6}));
    EXPECT_EQ(tokenizer.encode("bbc", false), (std::vector<int32_t>{5, 8}));
    EXPECT_EQ(tokenizer.encode("abab", false), (std::vector<int32_t>{7, 7}));
    // Equal scores: the leftmost pair merges first, so "aaa" -> "aa" + "a", not "a" + "aa".
    EXPECT_EQ(tokenizer.encode("aaa", false), (std::vector<int32_t>{10, 4}));
    // No byte tokens in this vocabulary: an unknown character becomes <unk>.
    EXPECT_EQ(tokenizer.encode("z", false), (std::vector<int32_t>{0}));
    // Without add_space_prefix no dummy prefix is added, and decode keeps a leading space.
    EXPECT_EQ(tokenizer.encode(" a", false), (std::vector<int32_t>{9}));
    EXPECT_EQ(tokenizer.decode({9}), " a");
}

// Special-token splitting follows llama.cpp: longer special strings claim text first, even when a shorter
// one starts earlier; user-defined tokens match always, control tokens only with parse_special.
TEST(SpmTokenizer, SpecialTokensSplitLongestFirst) {
    Metadata metadata;
    metadata.set("tokenizer.ggml.model", std::string("llama"));
    metadata.set("tokenizer.ggml.tokens", std::vector<std::string>{"<unk>", "<s>", "</s>", "a", "b", "c", "d", "x",
                                                                     "ab", "bcd", "<ctl>", "aa"});
    metadata.set("tokenizer.ggml.scores", std::vector<float>(12, 0.0f));
    metadata.set("tokenizer.ggml.token_type", std::vector<int32_t>{2, 3, 3, 1, 1, 1, 1, 1, 4, 4, 3, 4});
    metadata.set("tokenizer.ggml.add_space_prefix", false);
    auto made = Tokenizer::from_metadata(metadata);
    ASSERT_TRUE(made.ok()) << made.error();
    const auto& tokenizer = **made;
    EXPECT_EQ(tokenizer.encode("abcd", false), (std::vector<int32_t>{3, 9}));
    EXPECT_EQ(tokenizer.encode("abxab", false), (std::vector<int32_t>{8, 7, 8}));
    // Non-overlapping, left to right: "aaa" -> "aa" + "a".
    EXPECT_EQ(tokenizer.encode("aaa", false), (std::vector<int32_t>{11, 3}));
    EXPECT_EQ(tokenizer.encode("x<ctl>", false, true), (std::vector<int32_t>{7, 10}));
    const auto plain = tokenizer.encode("x<ctl>", false, false);
    EXPECT_TRUE(std::find(plain.begin(), plain.end(), 10) == plain.end());
}

TEST(TokenizerFactory, RejectsMissingOrUnknownModels) {
    Metadata metadata;
    auto missing = Tokenizer::from_metadata(metadata);
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.kind(), ErrorKind::InvalidInput) << missing.error();
    EXPECT_NE(missing.error().find("tokenizer.ggml.model"), std::string::npos);
    metadata.set("tokenizer.ggml.model", std::string("rwkv"));
    auto unknown = Tokenizer::from_metadata(metadata);
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.kind(), ErrorKind::Unsupported) << unknown.error();  // a real family, just not one we implement
    EXPECT_NE(unknown.error().find("rwkv"), std::string::npos);
    metadata.set("tokenizer.ggml.model", std::string("llama"));
    metadata.set("tokenizer.ggml.tokens", std::vector<std::string>{"a", "b"});
    metadata.set("tokenizer.ggml.scores", std::vector<float>{0});
    auto mismatched = Tokenizer::from_metadata(metadata);
    ASSERT_FALSE(mismatched.ok());
    EXPECT_EQ(mismatched.kind(), ErrorKind::InvalidInput) << mismatched.error();
    EXPECT_NE(mismatched.error().find("tokenizer.ggml.scores"), std::string::npos);
}

} // namespace
} // namespace cflow
