#include "cflow/engine/generation/generate.h"

#include <algorithm>
#include <chrono>
#include <new>
#include <span>

#include "cflow/engine/generation/grammar_matcher.h"

namespace cflow {

std::string_view stop_reason_name(StopReason reason) {
    switch (reason) {
    case StopReason::MaxTokens: return "max_tokens";
    case StopReason::EndOfGeneration: return "end_of_generation";
    case StopReason::StopToken: return "stop_token";
    case StopReason::ContextFull: return "context_full";
    case StopReason::CallbackStopped: return "callback_stopped";
    case StopReason::StopSequence: return "stop_sequence";
    case StopReason::GrammarComplete: return "grammar_complete";
    }
    return "unknown";
}

uint32_t context_shift_discard(uint32_t context_length, uint32_t keep) {
    if (keep + 1 >= context_length) return 0;
    return std::max<uint32_t>(1, (context_length - keep) / 2);
}

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Feeds tokens in prefill chunks (batched through the layers where the model allows);
// cancellation takes effect between chunks, on_step sees one record per chunk.
Result<std::span<const float>> feed_chunks(Session& session, std::span<const int32_t> tokens, const GenerateRequest& request,
                                           const CancelToken* cancel, const std::function<void(size_t)>& after_chunk) {
    std::span<const float> logits;
    for (size_t i = 0; i < tokens.size();) {
        if (cancel && cancel->is_cancelled()) return cancelled_error("generation");
        const size_t n = std::min<size_t>(session.batched_prefill() ? Session::kPrefillChunk : 1, tokens.size() - i);
        const bool last = i + n == tokens.size();
        auto r = session.prefill(tokens.subspan(i, n), last);
        if (!r) return r.take_error();
        logits = r.value();
        i += n;
        if (after_chunk) after_chunk(n);
        if (request.on_step) request.on_step(session.telemetry());
    }
    return logits;
}

// The context is full and `next` must go in: drop the tokens after `keep` that context_shift_discard
// says, feed the kept tail again (from where the session could keep its cache) and then `next`.
Result<std::span<const float>> shift_context(Session& session, std::vector<int32_t>& content, uint32_t keep, int32_t next,
                                             const GenerateRequest& request, const CancelToken* cancel, GenerateStats& stats) {
    const uint32_t discard = context_shift_discard(session.context_length(), keep);
    content.erase(content.begin() + keep, content.begin() + keep + discard);
    content.push_back(next);
    // A sliding-window model may keep less than asked (its rings no longer hold the head).
    const uint32_t kept = session.truncate(keep);
    ++stats.context_shifts;
    stats.shift_dropped_tokens += discard;
    const std::span<const int32_t> tail = std::span<const int32_t>(content).subspan(kept);
    return feed_chunks(session, tail, request, cancel, [&](size_t n) { stats.shift_refed_tokens += uint32_t(n); });
}

Result<GenerateStats> generate_unguarded(Session& session, const GenerateRequest& request, const TokenCallback& on_token,
                                         const CancelToken* cancel, GenerateStats& stats) {
    const Tokenizer& tokenizer = session.model().tokenizer();
    if (request.prompt.empty())
        return make_error(session.position() == 0 ? "generate: empty prompt and empty context: nothing to continue from"
                                                  : "generate: continuing without a new prompt is not supported");
    if (session.position() + request.prompt.size() > session.context_length())
        return make_error(ErrorKind::ContextFull,
                          "prompt of " + std::to_string(request.prompt.size()) + " tokens does not fit: context holds " +
                              std::to_string(session.context_length()) + " tokens and " +
                              std::to_string(session.position()) + " are used");

    // The session's whole content, kept only when a full context may shift.
    std::vector<int32_t> content;
    uint32_t keep = 0;
    if (const auto& shift = request.context_shift) {
        if (shift->held.size() != session.position())
            return make_error("generate: the context shift holds " + std::to_string(shift->held.size()) +
                              " tokens but the session holds " + std::to_string(session.position()));
        content = shift->held;
        content.insert(content.end(), request.prompt.begin(), request.prompt.end());
        keep = uint32_t(std::min<size_t>(shift->keep, content.size()));
    }

    const auto t_start = Clock::now();
    std::vector<int32_t> history = request.prompt;  // for the repetition penalty
    auto fed = feed_chunks(session, request.prompt, request, cancel, [&](size_t n) {
        stats.prompt_tokens += uint32_t(n);
        stats.prompt_ms = ms_since(t_start);
    });
    if (!fed) return fed.take_error();
    std::span<const float> logits = fed.value();

    auto is_end = [&](int32_t id) {
        if (std::find(request.stop_tokens.begin(), request.stop_tokens.end(), id) != request.stop_tokens.end())
            return StopReason::StopToken;
        if (request.stop_at_end_of_generation && (id == tokenizer.eos_id() || id == tokenizer.bos_id()))
            return StopReason::EndOfGeneration;
        return StopReason::MaxTokens;  // "not an end"
    };

    // The grammar sees the bytes the decoder emits, the first token's dropped dummy space included.
    std::optional<GrammarMatcher> grammar;
    std::vector<int32_t> grammar_end_ids = request.stop_tokens;
    std::vector<float> masked;  // [vocab] f32: the logits with the grammar's -inf
    // The step's telemetry with the grammar's mask size added (on_step's record for the token the
    // mask chose); kept across steps so the copy reuses its layer storage.
    TokenTelemetry masked_step;
    uint32_t grammar_allowed = 0;
    if (request.grammar) {
        auto vocabulary = request.grammar_vocabulary ? request.grammar_vocabulary : GrammarVocabulary::from_tokenizer(tokenizer);
        auto matcher = GrammarMatcher::create(request.grammar, std::move(vocabulary));
        if (!matcher) return matcher.take_error();
        grammar.emplace(std::move(matcher.value()));
        const bool has_text = std::any_of(request.prompt.begin(), request.prompt.end(),
                                          [&](int32_t id) { return !tokenizer.is_control(id); });
        grammar->set_strip_first_space(tokenizer.strips_first_space() && !has_text);
        if (request.stop_at_end_of_generation) {
            if (tokenizer.eos_id() >= 0) grammar_end_ids.push_back(tokenizer.eos_id());
            if (tokenizer.bos_id() >= 0) grammar_end_ids.push_back(tokenizer.bos_id());
        }
    }

    Sampler sampler(request.sampling);
    StreamingDecoder decoder(tokenizer);
    decoder.set_context(request.prompt);
    Clock::time_point t_first{};
    stats.stop_reason = StopReason::MaxTokens;
    bool cancelled = false;
    for (int32_t n = 0; n < request.max_tokens; ++n) {
        if (cancel && cancel->is_cancelled()) {
            cancelled = true;
            break;
        }
        std::span<const float> candidates = logits;
        if (grammar) {
            masked.assign(logits.begin(), logits.end());
            auto allowed = grammar->mask(masked, grammar_end_ids);
            if (!allowed) return allowed.take_error();
            if (*allowed == 0) {
                if (grammar->is_complete()) {
                    stats.stop_reason = StopReason::GrammarComplete;
                    break;
                }
                return make_error("generate: no token of the vocabulary continues the grammar after " +
                                  std::to_string(stats.generated_tokens) + " generated tokens");
            }
            candidates = masked;
            grammar_allowed = uint32_t(*allowed);
        }
        const int32_t next = sampler.sample(candidates, history);
        if (stats.generated_tokens == 0) {
            t_first = Clock::now();
            stats.time_to_first_token_ms = ms_since(t_start);
        }
        if (auto end = is_end(next); end != StopReason::MaxTokens) {
            stats.stop_reason = end;
            break;
        }
        if (grammar) {
            if (Status advanced = grammar->accept_token(next); !advanced) return advanced.take_error();
        }
        ++stats.generated_tokens;
        history.push_back(next);
        const std::string text = decoder.push(next);
        if (request.on_sampled) request.on_sampled(next, candidates);
        if (on_token && !on_token(next, text)) {
            stats.stop_reason = StopReason::CallbackStopped;
            break;
        }
        stats.decode_ms = ms_since(t_first);
        // The emitted token enters the context even when it is the last one, so a chat can
        // continue from exactly what the user saw.
        if (session.position() >= session.context_length()) {
            if (!request.context_shift || context_shift_discard(session.context_length(), keep) == 0) {
                stats.stop_reason = StopReason::ContextFull;
                break;
            }
            auto shifted = shift_context(session, content, keep, next, request, cancel, stats);
            if (!shifted) {
                if (shifted.kind() == ErrorKind::Cancelled) {
                    cancelled = true;
                    break;
                }
                return shifted.take_error();
            }
            logits = shifted.value();
            continue;
        }
        auto r = session.step(next, n + 1 < request.max_tokens);
        if (!r) return r.take_error();
        logits = r.value();
        if (request.context_shift) content.push_back(next);
        if (request.on_step && grammar) {
            masked_step = session.telemetry();
            masked_step.grammarAllowedTokens = grammar_allowed;
            masked_step.grammarVocabTokens = uint32_t(masked.size());
            request.on_step(masked_step);
        } else if (request.on_step) {
            request.on_step(session.telemetry());
        }
    }
    if (const std::string tail = decoder.flush(); !tail.empty() && on_token) on_token(-1, tail);
    if (cancelled) return cancelled_error("generation");
    return stats;
}

} // namespace

Result<GenerateStats> generate(Session& session, const GenerateRequest& request, const TokenCallback& on_token,
                               const CancelToken* cancel, GenerateStats* stats_so_far) {
    GenerateStats stats;
    Result<GenerateStats> result = GenerateStats{};
    try {
        result = generate_unguarded(session, request, on_token, cancel, stats);
    } catch (const std::bad_alloc&) {
        result = out_of_memory_error("generation");
    }
    if (stats_so_far) *stats_so_far = stats;
    return result;
}

} // namespace cflow
