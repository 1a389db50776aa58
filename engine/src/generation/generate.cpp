#include "cflow/engine/generation/generate.h"

#include <algorithm>
#include <chrono>
#include <new>

namespace cflow {

std::string_view stop_reason_name(StopReason reason) {
    switch (reason) {
    case StopReason::MaxTokens: return "max_tokens";
    case StopReason::EndOfGeneration: return "end_of_generation";
    case StopReason::StopToken: return "stop_token";
    case StopReason::ContextFull: return "context_full";
    case StopReason::CallbackStopped: return "callback_stopped";
    case StopReason::StopSequence: return "stop_sequence";
    }
    return "unknown";
}

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

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

    const auto t_start = Clock::now();
    std::vector<int32_t> history = request.prompt;  // for the repetition penalty
    std::span<const float> logits;
    // The prompt in chunks (batched through the layers where the model allows): cancellation
    // takes effect between chunks, and on_step sees one record per chunk.
    const std::span<const int32_t> prompt(request.prompt);
    for (size_t i = 0; i < prompt.size();) {
        if (cancel && cancel->is_cancelled()) return cancelled_error("generation");
        const size_t n = std::min<size_t>(session.batched_prefill() ? Session::kPrefillChunk : 1, prompt.size() - i);
        const bool last = i + n == prompt.size();
        auto r = session.prefill(prompt.subspan(i, n), last);
        if (!r) return r.take_error();
        logits = r.value();
        i += n;
        stats.prompt_tokens += uint32_t(n);
        stats.prompt_ms = ms_since(t_start);
        if (request.on_step) request.on_step(session.telemetry());
    }

    auto is_end = [&](int32_t id) {
        if (std::find(request.stop_tokens.begin(), request.stop_tokens.end(), id) != request.stop_tokens.end())
            return StopReason::StopToken;
        if (request.stop_at_end_of_generation && (id == tokenizer.eos_id() || id == tokenizer.bos_id()))
            return StopReason::EndOfGeneration;
        return StopReason::MaxTokens;  // "not an end"
    };

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
        const int32_t next = sampler.sample(logits, history);
        if (stats.generated_tokens == 0) {
            t_first = Clock::now();
            stats.time_to_first_token_ms = ms_since(t_start);
        }
        if (auto end = is_end(next); end != StopReason::MaxTokens) {
            stats.stop_reason = end;
            break;
        }
        ++stats.generated_tokens;
        history.push_back(next);
        const std::string text = decoder.push(next);
        if (on_token && !on_token(next, text)) {
            stats.stop_reason = StopReason::CallbackStopped;
            break;
        }
        stats.decode_ms = ms_since(t_first);
        // The emitted token enters the context even when it is the last one, so a chat can
        // continue from exactly what the user saw.
        if (session.position() >= session.context_length()) {
            stats.stop_reason = StopReason::ContextFull;
            break;
        }
        auto r = session.step(next, n + 1 < request.max_tokens);
        if (!r) return r.take_error();
        logits = r.value();
        if (request.on_step) request.on_step(session.telemetry());
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
