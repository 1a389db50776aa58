#pragma once
// The generation loop: prompt prefill, sampling, streaming text, stop conditions, timings.
// Runs on the caller's thread (the engine worker); never throws.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cflow/engine/generation/grammar.h"
#include "cflow/engine/generation/grammar_vocabulary.h"
#include "cflow/engine/generation/sampler.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/forward/telemetry.h"
#include "cflow/base/cancel.h"
#include "cflow/base/result.h"

namespace cflow {

// Why a generation that succeeded ended. Cancellation is not a stop reason: like every job,
// a cancelled generation returns ErrorKind::Cancelled (its tokens were already streamed).
// StopSequence: a stop string of ReplyOptions matched (set by the chat core, never by generate()).
// GrammarComplete: the request's grammar matched a whole string and allows no more text.
enum class StopReason : uint8_t {
    MaxTokens,
    EndOfGeneration,
    StopToken,
    ContextFull,
    CallbackStopped,
    StopSequence,
    GrammarComplete
};
std::string_view stop_reason_name(StopReason reason);

// llama.cpp's context shift, for a generation that fills the context: the first `keep` tokens stay
// (BOS, the system prompt), half of the rest after them is dropped, the kept tail is fed again (a
// re-prefill, so every RoPE position is exact) and the same reply goes on.
struct ContextShift {
    std::vector<int32_t> held;  // [tokens] what the session holds before the request's prompt, in order
    uint32_t keep = 0;          // leading tokens of held + prompt never dropped
};

// Tokens one shift drops from a full context of `context_length` keeping `keep`: half of the rest
// (at least one); 0 when nothing can be dropped (keep leaves no room).
uint32_t context_shift_discard(uint32_t context_length, uint32_t keep);

struct GenerateRequest {
    std::vector<int32_t> prompt;          // already tokenized (BOS included when wanted)
    SamplingParams sampling;
    int32_t max_tokens = 256;             // generated tokens, not counting the prompt
    std::vector<int32_t> stop_tokens;     // extra ids that end generation (not emitted)
    bool stop_at_end_of_generation = true;  // EOS, and BOS which llama2.c-style story models emit between stories
    // Called on the generating thread after every forward step (prompt and generated tokens).
    std::function<void(const TokenTelemetry&)> on_step;
    // Called for each generated token that is emitted, right before on_token, with the logits row
    // it was sampled from: the model's output (after its final soft-cap), with the grammar's -inf
    // mask when one is set, before repetition penalty, temperature and top-k/p (for log
    // probabilities as OpenAI's API reports them). The span is valid during the call only.
    std::function<void(int32_t token, std::span<const float> logits)> on_sampled;
    // Set: a full context shifts (ContextShift) and the reply goes on; unset: it stops (ContextFull).
    std::optional<ContextShift> context_shift;
    // Set: every sampled token keeps the output inside this grammar's language (the logits of the
    // others are -inf before sampling, so top-k/p see only allowed tokens). The end tokens (EOS and
    // BOS when stop_at_end_of_generation, stop_tokens) are allowed only where the grammar is
    // complete; once it is complete and allows no more text, generation ends (GrammarComplete).
    std::shared_ptr<const Grammar> grammar;
    // The session's vocabulary as the grammar walks it; built for this request when unset (a few
    // ms at 32k tokens: keep one per model to share it).
    std::shared_ptr<const GrammarVocabulary> grammar_vocabulary;
};

struct GenerateStats {
    uint32_t prompt_tokens = 0;
    uint32_t generated_tokens = 0;
    double prompt_ms = 0;                 // prefill wall time
    double decode_ms = 0;                 // wall time of the generated tokens after the first
    double time_to_first_token_ms = 0;    // from start to the first generated token
    StopReason stop_reason = StopReason::MaxTokens;
    uint32_t context_shifts = 0;          // times the full context was shifted (ContextShift)
    uint32_t shift_dropped_tokens = 0;    // tokens those shifts dropped, all right after `keep`
    uint32_t shift_refed_tokens = 0;      // tokens fed again after a shift (not in prompt_tokens)
    double prompt_tokens_per_s() const { return prompt_ms > 0 ? prompt_tokens * 1000.0 / prompt_ms : 0; }
    double decode_tokens_per_s() const {
        return decode_ms > 0 && generated_tokens > 1 ? (generated_tokens - 1) * 1000.0 / decode_ms : 0;
    }
};

// Called for each generated token with the newly completed UTF-8 text (may be empty while a
// multi-byte character is incomplete). Return false to stop.
using TokenCallback = std::function<bool(int32_t token, std::string_view text)>;

// Continues the session's context with request.prompt, then samples up to max_tokens.
// Errors: ContextFull when the prompt does not fit, InvalidInput when no token can continue the
// grammar (a vocabulary without the characters it needs), OverBudget past the grammar's limits, Cancelled when `cancel` was set (within one
// token), OutOfMemory, or the step's own error. `stats_so_far`, when given, holds the counts and
// timings of whatever ran, on every return (a cancelled reply's speed is still worth showing).
// Thread safety: runs on the caller's thread; only `cancel` may be touched from other threads.
Result<GenerateStats> generate(Session& session, const GenerateRequest& request, const TokenCallback& on_token,
                               const CancelToken* cancel = nullptr, GenerateStats* stats_so_far = nullptr);

} // namespace cflow
