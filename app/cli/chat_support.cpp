#include "chat_support.h"

#include <algorithm>

namespace cflow::cli {

std::vector<int32_t> end_of_turn_tokens(const Tokenizer& tokenizer, const std::string& template_source) {
    std::vector<int32_t> ids;
    const auto vocab = static_cast<int32_t>(tokenizer.vocab_size());
    for (int32_t id = 0; id < vocab; ++id) {
        if (!tokenizer.is_control(id) || id == tokenizer.eos_id() || id == tokenizer.bos_id()) continue;
        const std::string& piece = tokenizer.piece(id);
        if (!piece.empty() && template_source.find(piece) != std::string::npos) ids.push_back(id);
    }
    return ids;
}

std::vector<int32_t> encode_chat_prompt(const Tokenizer& tokenizer, const std::string& prompt) {
    std::vector<int32_t> ids = tokenizer.encode(prompt, /*add_special=*/false, /*parse_special=*/true);
    const int32_t bos = tokenizer.bos_id();
    // The vocabulary's own rule decides whether BOS belongs at the start (add_bos_token).
    const std::vector<int32_t> specials = tokenizer.encode("", /*add_special=*/true);
    const bool wants_bos = bos >= 0 && !specials.empty() && specials.front() == bos;
    if (wants_bos && (ids.empty() || ids.front() != bos)) ids.insert(ids.begin(), bos);
    return ids;
}

PrefillPlan plan_prefill(const std::vector<int32_t>& cached, const std::vector<int32_t>& prompt) {
    PrefillPlan plan;
    const bool extends = !cached.empty() && cached.size() < prompt.size() &&
                         std::equal(cached.begin(), cached.end(), prompt.begin());
    if (extends) {
        plan.reused_tokens = cached.size();
        plan.feed.assign(prompt.begin() + static_cast<std::ptrdiff_t>(cached.size()), prompt.end());
    } else {
        plan.reset = !cached.empty();
        plan.feed = prompt;
    }
    return plan;
}

} // namespace cflow::cli
