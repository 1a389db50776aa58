// split_reasoning: the <think> block of a thinking model's reply, whole or still streaming.
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "cflow/engine/chat/reasoning_split.h"

namespace cflow {
namespace {

std::string_view reasoning(std::string_view text, const ReasoningSplit& s) {
    return text.substr(s.reasoning_begin, s.reasoning_end - s.reasoning_begin);
}

TEST(ReasoningSplit, AClosedBlockSplitsReasoningFromTheAnswer) {
    const std::string text = "<think>\nThe user greets me.\n</think>\n\nHello!";
    const ReasoningSplit s = split_reasoning(text);
    EXPECT_TRUE(s.has_reasoning);
    EXPECT_TRUE(s.closed);
    EXPECT_EQ(reasoning(text, s), "\nThe user greets me.\n");
    EXPECT_EQ(text.substr(s.answer_begin), "Hello!");
}

TEST(ReasoningSplit, AnOpenBlockIsReasoningSoFar) {
    const std::string text = "  <think>Let me count: 1, 2";
    const ReasoningSplit s = split_reasoning(text);
    EXPECT_TRUE(s.has_reasoning);
    EXPECT_FALSE(s.closed);
    EXPECT_EQ(reasoning(text, s), "Let me count: 1, 2");
    EXPECT_EQ(s.answer_begin, text.size());
}

TEST(ReasoningSplit, APromptOpenedBlockEndsAtTheFirstClosingTag) {  // DeepSeek-R1's template writes <think> itself
    const std::string text = "Two plus two.\n</think>\nIt is 4. Say </think> again.";
    const ReasoningSplit s = split_reasoning(text);
    EXPECT_TRUE(s.has_reasoning);
    EXPECT_EQ(reasoning(text, s), "Two plus two.\n");
    EXPECT_EQ(text.substr(s.answer_begin), "It is 4. Say </think> again.");
}

TEST(ReasoningSplit, TextWithoutABlockAtTheStartIsAllAnswer) {
    for (const std::string text : {"Hello!", "", "Use <think> tags like <think>x</think>.", "<thin"}) {
        const ReasoningSplit s = split_reasoning(text);
        EXPECT_FALSE(s.has_reasoning) << text;
        EXPECT_EQ(s.answer_begin, 0u) << text;
    }
    // An empty block (Qwen3 with enable_thinking false writes it into the prompt; a model may echo it).
    const std::string empty = "<think>\n\n</think>\n\nHi";
    const ReasoningSplit s = split_reasoning(empty);
    EXPECT_TRUE(s.has_reasoning);
    EXPECT_EQ(reasoning(empty, s), "\n\n");
    EXPECT_EQ(empty.substr(s.answer_begin), "Hi");
}

} // namespace
} // namespace cflow
