#include "cflow/engine/chat/reasoning_split.h"

#include <algorithm>

namespace cflow {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

size_t skip_space(std::string_view text, size_t at) {
    while (at < text.size() && is_space(text[at])) ++at;
    return at;
}

constexpr std::string_view kAnalysis = "<|channel|>analysis<|message|>";
constexpr std::string_view kFinal = "<|channel|>final<|message|>";

// A harmony reply, from its first non-space byte `first`: reasoning until the analysis message
// ends (<|end|>, or the next message's <|start|> where <|end|> was not printed), the answer after
// the final channel's header.
ReasoningSplit split_harmony(std::string_view reply, size_t first) {
    ReasoningSplit split;
    split.harmony = true;
    size_t after_reasoning = first;
    if (reply.substr(first, kAnalysis.size()) == kAnalysis) {
        split.has_reasoning = true;
        split.reasoning_begin = first + kAnalysis.size();
        const size_t end = std::min(reply.find("<|end|>", split.reasoning_begin), reply.find("<|start|>", split.reasoning_begin));
        split.closed = end != std::string_view::npos;
        split.reasoning_end = split.closed ? end : reply.size();
        after_reasoning = split.reasoning_end;
    }
    const size_t final_at = reply.find(kFinal, after_reasoning);
    split.answer_begin = final_at == std::string_view::npos ? reply.size() : final_at + kFinal.size();
    return split;
}

} // namespace

ReasoningSplit split_reasoning(std::string_view reply) {
    ReasoningSplit split;
    const size_t first = skip_space(reply, 0);
    if (reply.substr(first, kAnalysis.size()) == kAnalysis || reply.substr(first, kFinal.size()) == kFinal)
        return split_harmony(reply, first);
    const std::string_view rest = reply.substr(first);
    if (!rest.empty() && (kAnalysis.starts_with(rest) || kFinal.starts_with(rest))) {
        split.harmony = true;  // a channel header still streaming: nothing to show yet
        split.answer_begin = reply.size();
        return split;
    }
    size_t begin = 0;
    if (reply.substr(first, kOpen.size()) == kOpen) {
        begin = first + kOpen.size();
    } else {
        // The prompt opened the block (DeepSeek-R1): reasoning up to a </think> with no <think> before it.
        const size_t close = reply.find(kClose);
        if (close == std::string_view::npos || reply.substr(0, close).find(kOpen) != std::string_view::npos) return split;
    }
    split.has_reasoning = true;
    split.reasoning_begin = begin;
    const size_t close = reply.find(kClose, begin);
    if (close == std::string_view::npos) {
        split.reasoning_end = split.answer_begin = reply.size();
        return split;
    }
    split.closed = true;
    split.reasoning_end = close;
    split.answer_begin = skip_space(reply, close + kClose.size());
    return split;
}

} // namespace cflow
