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

// gpt-oss's harmony channels: analysis is the reasoning, final the answer; <|end|> is not printed
// (control), so the analysis may end at the next message's <|start|>.
TEST(ReasoningSplit, HarmonyAnalysisIsReasoningAndFinalIsTheAnswer) {
    const std::string text = "<|channel|>analysis<|message|>User asks 2+2.<|start|>assistant<|channel|>final<|message|>It is 4.";
    const ReasoningSplit s = split_reasoning(text);
    EXPECT_TRUE(s.harmony);
    EXPECT_TRUE(s.has_reasoning);
    EXPECT_TRUE(s.closed);
    EXPECT_EQ(reasoning(text, s), "User asks 2+2.");
    EXPECT_EQ(text.substr(s.answer_begin), "It is 4.");

    const std::string with_end = "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>Done";
    const ReasoningSplit e = split_reasoning(with_end);
    EXPECT_EQ(reasoning(with_end, e), "Think.");
    EXPECT_EQ(with_end.substr(e.answer_begin), "Done");
}

TEST(ReasoningSplit, HarmonyWhileStreaming) {
    const std::string thinking = "<|channel|>analysis<|message|>Still going";
    const ReasoningSplit t = split_reasoning(thinking);
    EXPECT_TRUE(t.has_reasoning);
    EXPECT_FALSE(t.closed);
    EXPECT_EQ(reasoning(thinking, t), "Still going");
    EXPECT_EQ(t.answer_begin, thinking.size()) << "no answer yet";

    const std::string between = "<|channel|>analysis<|message|>Done.<|start|>assistant<|channel|>fin";
    const ReasoningSplit b = split_reasoning(between);
    EXPECT_TRUE(b.closed);
    EXPECT_EQ(b.answer_begin, between.size()) << "the final channel's header is not the answer";

    const std::string header = "<|chan";
    const ReasoningSplit h = split_reasoning(header);
    EXPECT_TRUE(h.harmony);
    EXPECT_FALSE(h.has_reasoning);
    EXPECT_EQ(h.answer_begin, header.size());

    const std::string final_only = "<|channel|>final<|message|>Hi!";
    const ReasoningSplit f = split_reasoning(final_only);
    EXPECT_TRUE(f.harmony);
    EXPECT_FALSE(f.has_reasoning);
    EXPECT_EQ(final_only.substr(f.answer_begin), "Hi!");
    EXPECT_FALSE(split_reasoning("<|im_start|>x").harmony) << "another template's tag is plain text";
}

} // namespace
} // namespace cflow
