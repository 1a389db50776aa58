#pragma once
// The model-facing pieces of `cflow chat`, kept apart from the terminal loop: which tokens end
// an assistant turn, how a rendered conversation becomes prompt ids, and how much of the KV
// cache a new turn can keep.
#include <cstdint>
#include <string>
#include <vector>

#include "cflow/engine/tokenizer.h"

namespace cflow::cli {

// Control tokens whose text the template writes literally (e.g. <|im_end|>, <|eot_id|>, </s>):
// a reply that produces one has ended its turn. EOS/BOS are not listed (generate stops there anyway).
std::vector<int32_t> end_of_turn_tokens(const Tokenizer& tokenizer, const std::string& template_source);

// A rendered chat prompt -> ids: control tokens written by the template are parsed as such,
// and BOS is prepended when the vocabulary asks for one and the template did not write it.
std::vector<int32_t> encode_chat_prompt(const Tokenizer& tokenizer, const std::string& prompt);

struct PrefillPlan {
    bool reset = false;            // forget the KV cache first
    size_t reused_tokens = 0;      // ids kept from the cache
    std::vector<int32_t> feed;     // ids to prefill after them
};

// `cached`: the ids now in the session's KV cache, in order. When they are a proper prefix of
// `prompt`, only the rest is fed; otherwise the session resets and the whole prompt is fed.
PrefillPlan plan_prefill(const std::vector<int32_t>& cached, const std::vector<int32_t>& prompt);

} // namespace cflow::cli
