#pragma once
// Log probabilities of generated tokens, as OpenAI's API reports them (`logprobs`,
// `top_logprobs`). Which distribution: the log-softmax of the raw logits row the token was
// sampled from (the model's output after its final soft-cap; with a response_format grammar,
// the tokens it forbids are -inf), before repetition penalty, temperature and top-k/p/min-p, as
// OpenAI and llama.cpp's server report them. The model spec (model-semantics.md) defines the
// logits and says nothing of sampling, so nothing there decides otherwise.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cflow/engine/tokenizer/tokenizer.h"

namespace cflow::server {

// OpenAI's stand-in for the log probability of a token that cannot be sampled (-inf): JSON has no
// infinity, and OpenAI sends this number.
inline constexpr double kUnsampleableLogprob = -9999.0;

struct LogprobCandidate {
    int32_t id = -1;
    std::string token;   // the token's bytes as valid UTF-8 (ill-formed bytes as U+FFFD)
    std::string bytes;   // the token's raw bytes (Tokenizer::token_bytes), sent as an array of ints
    double logprob = 0;  // natural log; kUnsampleableLogprob for a -inf logit
};

struct TokenLogprob {
    LogprobCandidate chosen;
    std::vector<LogprobCandidate> top;  // the top_n most likely, most likely first (ties: lower id)
    size_t text_offset = 0;             // bytes of reply text before this token's text (legacy completions)
};

// The chosen token's entry and the top_n alternatives from one logits row [vocab]. NaN logits
// count as -inf; top lists only tokens with a finite logit.
TokenLogprob token_logprob(const Tokenizer& tokenizer, int32_t token, std::span<const float> logits, uint32_t top_n);

} // namespace cflow::server
