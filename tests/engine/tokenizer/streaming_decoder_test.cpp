// StreamingDecoder: multi-byte characters split over byte tokens are held back until complete, and the
// concatenated stream equals Tokenizer::decode.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cflow/engine/tokenizer/tokenizer.h"

namespace cflow {
namespace {

// SPM vocabulary: <unk> <s> </s>, byte tokens for E2 9C 93 (U+2713 "✓") and C3 A9 ("é"), and pieces.
std::unique_ptr<Tokenizer> make_tokenizer() {
    Metadata metadata;
    metadata.set("tokenizer.ggml.model", std::string("llama"));
    metadata.set("tokenizer.ggml.tokens",
                 std::vector<std::string>{"<unk>", "<s>", "</s>", "<0xE2>", "<0x9C>", "<0x93>", "<0xC3>", "<0xA9>",
                                          "\xE2\x96\x81ok", "\xE2\x96\x81", "hi", "<0xFF>"});
    metadata.set("tokenizer.ggml.scores", std::vector<float>(12, 0.0f));
    metadata.set("tokenizer.ggml.token_type", std::vector<int32_t>{2, 3, 3, 6, 6, 6, 6, 6, 1, 1, 1, 6});
    auto made = Tokenizer::from_metadata(metadata);
    EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.error());
    return made.ok() ? std::move(made).value() : nullptr;
}

TEST(StreamingDecoder, HoldsSplitCharacterUntilComplete) {
    auto tokenizer = make_tokenizer();
    ASSERT_TRUE(tokenizer);
    StreamingDecoder decoder(*tokenizer);
    EXPECT_EQ(decoder.push(1), "");     // BOS: control, skipped
    EXPECT_EQ(decoder.push(8), "ok");   // first content token loses the dummy-prefix space
    EXPECT_EQ(decoder.push(9), " ");
    EXPECT_EQ(decoder.push(3), "");     // E2: incomplete
    EXPECT_EQ(decoder.push(4), "");     // E2 9C: incomplete
    EXPECT_EQ(decoder.push(5), "\xE2\x9C\x93");
    EXPECT_EQ(decoder.push(6), "");
    EXPECT_EQ(decoder.push(7), "\xC3\xA9");
    EXPECT_EQ(decoder.flush(), "");
}

TEST(StreamingDecoder, ConcatenationEqualsDecode) {
    auto tokenizer = make_tokenizer();
    ASSERT_TRUE(tokenizer);
    const std::vector<int32_t> ids = {1, 8, 3, 4, 5, 9, 10, 6, 7, 8, 2};
    StreamingDecoder decoder(*tokenizer);
    std::string streamed;
    for (int32_t id : ids) streamed += decoder.push(id);
    streamed += decoder.flush();
    EXPECT_EQ(streamed, tokenizer->decode(ids));
    EXPECT_EQ(streamed, "ok\xE2\x9C\x93 hi\xC3\xA9 ok");
}

TEST(StreamingDecoder, ContextKeepsTheSpaceOfGeneratedTokens) {
    auto tokenizer = make_tokenizer();
    ASSERT_TRUE(tokenizer);
    StreamingDecoder decoder(*tokenizer);
    decoder.set_context({1, 8});
    EXPECT_EQ(decoder.push(8), " ok");
    StreamingDecoder only_bos(*tokenizer);
    only_bos.set_context({1});
    EXPECT_EQ(only_bos.push(8), "ok");
}

TEST(StreamingDecoder, InvalidAndTruncatedBytesBecomeReplacementCharacters) {
    auto tokenizer = make_tokenizer();
    ASSERT_TRUE(tokenizer);
    StreamingDecoder decoder(*tokenizer);
    EXPECT_EQ(decoder.push(11), "\xEF\xBF\xBD");  // FF can never start a character
    EXPECT_EQ(decoder.push(3), "");               // E2 ...
    EXPECT_EQ(decoder.push(10), "\xEF\xBF\xBDhi");  // ... broken by ASCII: E2 -> U+FFFD, then "hi"
    EXPECT_EQ(decoder.push(6), "");
    EXPECT_EQ(decoder.flush(), "\xEF\xBF\xBD");     // dangling C3 at the end
    EXPECT_EQ(decoder.flush(), "");
}

TEST(StreamingDecoder, ControlTokensPrintWhenNotSkipped) {
    auto tokenizer = make_tokenizer();
    ASSERT_TRUE(tokenizer);
    StreamingDecoder decoder(*tokenizer, /*skip_control=*/false);
    EXPECT_EQ(decoder.push(1), "<s>");
    EXPECT_EQ(decoder.push(8), "ok");
    EXPECT_EQ(decoder.push(2), "</s>");
}

} // namespace
} // namespace cflow
