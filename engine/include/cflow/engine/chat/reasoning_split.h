#pragma once
// Where a reply's reasoning ends and its answer begins. Thinking models write their reasoning
// between <think> and </think> (Qwen3, SmolLM3, QwQ); some templates open the tag in the prompt
// (DeepSeek-R1 distills), so the reply holds only the closing one. gpt-oss writes harmony
// channels instead: '<|channel|>analysis<|message|>' reasoning, then (after <|end|>, which is not
// printed, or '<|start|>assistant') '<|channel|>final<|message|>' and the answer. The desktop chat folds the
// reasoning away; the offsets let it keep mapping rendered characters to the tokens that wrote them.
#include <cstddef>
#include <string_view>

namespace cflow {

struct ReasoningSplit {
    bool has_reasoning = false;  // a <think> opened the reply or a </think> closed one
    bool closed = false;         // the closing tag has been written (false: still thinking)
    size_t reasoning_begin = 0;  // [reasoning_begin, reasoning_end): the reasoning text, tags excluded
    size_t reasoning_end = 0;
    size_t answer_begin = 0;     // the answer: from here to the end, after the whitespace that follows </think>
                                 // (harmony: after the final channel's header; the end while it has not come)
    bool harmony = false;        // the reply is in gpt-oss's harmony channels
};

// Works on a partial (streaming) reply too: an opened, unclosed <think> is reasoning so far.
// Without tags the whole text is the answer (answer_begin 0). A harmony reply that opens with the
// final channel has no reasoning, and its answer starts after the channel header.
ReasoningSplit split_reasoning(std::string_view reply);

} // namespace cflow
