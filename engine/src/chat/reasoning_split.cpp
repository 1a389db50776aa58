#include "cflow/engine/chat/reasoning_split.h"

namespace cflow {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

size_t skip_space(std::string_view text, size_t at) {
    while (at < text.size() && is_space(text[at])) ++at;
    return at;
}

} // namespace

ReasoningSplit split_reasoning(std::string_view reply) {
    ReasoningSplit split;
    const size_t first = skip_space(reply, 0);
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
