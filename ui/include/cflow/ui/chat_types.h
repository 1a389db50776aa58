#pragma once
// Plain values that cross from the GUI thread to the engine worker and back through
// queued signals: the conversation to continue, the generation settings and the
// outcome of one reply. Registered as Qt metatypes so they can travel by value.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include <QMetaType>
#include <QString>

#include "cflow/engine/chat/chat_session.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/generation/generate.h"
#include "cflow/engine/generation/sampler.h"
#include "cflow/base/result.h"
#include "cflow/ui/model_card.h"
#include "cflow/ui/model_summary.h"
#include "cflow/ui/reply_format.h"

namespace cflow::ui {

struct ChatTurn {
    QString role;     // "system", "user", "assistant" or "tool"
    QString content;
    // ChatMessage::extra_json: an assistant's {"tool_calls": [...]}, a tool result's
    // {"tool_call_id", "name"}; "" for plain messages.
    QString extraJson;
};
using Conversation = std::vector<ChatTurn>;

// Chat: the conversation through a chat template. Completion: the messages' texts joined
// verbatim and continued (base models, models without a template), as `cflow generate` does.
enum class PromptMode : uint8_t { Chat, Completion };

inline constexpr int kExpertCacheFit = -1;  // GenerationSettings::expertCacheMiB: "fit to free memory"

struct GenerationSettings {
    SamplingParams sampling;
    // Generated tokens per reply; 0 = a quarter of the model's context (resolved by the worker).
    int32_t maxTokens = 0;
    unsigned threads = 0;     // engine threads; 0 = hardware concurrency
    KvCacheType kvCache = KvCacheType::F16;  // half the memory of f32; perplexity within 0.2 % on the zoo and stories260K
    ExpertFetch expertFetch = ExpertFetch::Mapped;  // MoE: experts from the mapping, or direct I/O (sync / staged)
    // Direct-I/O arms: a RAM cache of routed experts, in MiB (0 = none); kExpertCacheFit sizes it
    // to free memory when the session is made (expert_cache_fit_bytes). Mapped ignores it.
    int expertCacheMiB = 0;
    bool ignoreEos = false;   // keep going past end-of-generation (benchmarks, tests)
    PromptMode mode = PromptMode::Chat;
    TemplateChoice templateChoice;                       // Chat mode: which template renders
    ContextPolicy contextPolicy = ContextPolicy::DropOldest;
    std::optional<bool> thinking;  // Chat mode: enable_thinking for templates that read it; unset = theirs
    // Chat mode: the clock strftime_now() reads (gpt-oss writes the date into every prompt); unset =
    // the local time at each render; fixed for reproducible prompts (tests, replays).
    std::optional<TemplateTime> templateClock;
    // Set: the reply is sampled under this grammar (the conversation's reply format, built once
    // per choice by the controller); immutable, so sharing it across threads is safe.
    std::shared_ptr<const Grammar> grammar;
    // The same format as the conversation chose it: what an endpoint is sent (response_format),
    // as the engine samples under `grammar`.
    ReplyFormat replyFormat;
    // Chat mode: the tools offered to the model (the conversation's enabled tools), rendered by
    // its template when the template can call tools (ChatSession::tool_call_format() != None).
    std::vector<ToolDefinition> tools;
    // Required / Named: the reply is sampled under tool_call_grammar in the template's format
    // (it replaces `grammar`); Auto: the model decides. None is expressed by no tools.
    ToolChoice toolChoice;
};

// maxTokens as the worker applies it to a model with this context.
inline int32_t resolved_max_tokens(const GenerationSettings& s, int contextLength) {
    return s.maxTokens > 0 ? s.maxTokens : std::max(1, contextLength / 4);
}

// Which chat template rendered the prompt: the model's own, or the explicit
// "role: content" fallback used when the model has none (or its template failed).
enum class TemplateKind : uint8_t { Model, Fallback };

struct RenderedPrompt {
    QString text;                          // exactly what was tokenized
    TemplateKind kind = TemplateKind::Model;
    QString templateNote;                  // why the fallback was chosen; empty for the model's template
    int promptTokens = 0;                  // tokens of the whole rendered prompt
    int reusedTokens = 0;                  // of those, already in the KV cache (not recomputed)
    int contextLength = 0;                 // the session's context size in tokens
    int droppedMessages = 0;               // left out by the context policy (oldest turns)
    int droppedTokens = 0;                 // left out by the context policy
    bool systemIgnored = false;            // the template does not write the system prompt
    bool completion = false;               // rendered in completion mode (texts joined, no template)
    // How the template writes tool calls (None: it cannot call tools, or none were offered).
    ToolCallFormat toolFormat = ToolCallFormat::None;
    int toolsOffered = 0;                  // tools rendered into this prompt
    bool toolsUnsupported = false;         // tools were asked for, but the template renders none
    // Written by an endpoint (issue 34): the server renders and counts the prompt; text is the
    // request body sent, and the token counts and context length are unknown (0).
    bool byServer = false;
};

struct ReplyStats {
    int promptTokens = 0;          // tokens fed this turn (after KV reuse)
    int generatedTokens = 0;
    double timeToFirstTokenMs = 0;
    double promptTokensPerS = 0;
    double decodeTokensPerS = 0;
    StopReason stopReason = StopReason::MaxTokens;  // why generation ended, unless it was cancelled
    bool cancelled = false;        // Stop (or leaving the conversation) ended the reply
    QString kvCache;               // how the session's KV cache stores keys and values ("f32", "f16")
    QString expertFetch;           // MoE: how expert tiles were read ("mapped", "sync", "staged"); "" for dense models
    QString ioBackend;             // sync/staged: what read them ("uring", "overlapped", "threads"); "" otherwise
    uint64_t expertCacheBytes = 0; // the session's expert cache budget (0: none)
    uint64_t expertCacheHits = 0;  // this reply's routed experts served from the cache
    uint64_t expertCacheMisses = 0;  // ... and read from storage (both 0 for mapped)
    int contextShifts = 0;         // times the full context shifted during the reply (drop-oldest / sliding-window)
    int shiftDroppedTokens = 0;    // tokens those shifts left out (the oldest after the system prompt)
    int contextUsed = 0;           // tokens in the KV cache after the reply
    int contextLength = 0;
    uint64_t mappedBytes = 0;      // size of the model's file mapping
    uint64_t residentBytes = 0;    // of it, resident in RAM right after the reply
    uint64_t lanesCopyBytes = 0;   // the rearranged copy the matrices are read from (load "lanes"); 0: none

    // Written by an endpoint (issue 34): what the client saw and what the server reported.
    // timeToFirstTokenMs is then from the request's start to the first text; generatedTokens is
    // the server's completion count (or the chunks received when it reports none).
    bool remote = false;
    int attempts = 0;                   // requests made (429/503 retries + 1)
    int chunks = 0;                     // content chunks received
    double receivedChunksPerS = 0;      // between the first chunk and the last, as they arrived
    int usagePromptTokens = -1;         // the server's usage (-1: not reported)
    int usageCompletionTokens = -1;
    bool hasServerTimings = false;      // llama.cpp's `timings` (the fields below)
    int serverPromptTokens = 0;
    double serverPromptMs = 0;
    int serverPredictedTokens = 0;
    double serverPredictedMs = 0;
    double serverPredictedPerS = 0;
    QString cutReason;                  // the reply was cut (server gone, time-out): why; its text is kept
    std::vector<float> chunkArrivalMs;  // each content chunk's arrival, from the request's start
};

// How a reply ended, as one word for the status line and logs: stop_reason_name() ("max_tokens",
// "context_full", ...) or "cancelled".
inline QString reply_end_name(const ReplyStats& stats) {
    const std::string_view name = stats.cancelled ? std::string_view("cancelled") : stop_reason_name(stats.stopReason);
    return QString::fromLatin1(name.data(), static_cast<qsizetype>(name.size()));
}

// A worker's failure as it crossed the thread boundary: the engine's kind (what went wrong, for
// code to act on) and the text the user reads.
struct WorkerError {
    ErrorKind kind = ErrorKind::Internal;
    QString message;
};

inline WorkerError worker_error(const Error& error) {
    return WorkerError{error.kind, QString::fromStdString(error.message)};
}

struct ModelInfo {
    QString path;
    QString name;
    int contextLength = 0;
    bool hasChatTemplate = false;
    QString templateNote;                // why the model's template is not used ("" when it is)
    uint64_t fileBytes = 0;
    std::shared_ptr<const Model> model;  // immutable, shareable with the GUI (the inspector reads its geometry)
    // Read by the worker from the file it loaded (the one open per user open): the Model panel's
    // header rows and card. Empty for an endpoint.
    ModelSummary summary;
    ModelCard card;
};

} // namespace cflow::ui

Q_DECLARE_METATYPE(cflow::ui::Conversation)
Q_DECLARE_METATYPE(cflow::ui::GenerationSettings)
Q_DECLARE_METATYPE(cflow::ui::RenderedPrompt)
Q_DECLARE_METATYPE(cflow::ui::ReplyStats)
Q_DECLARE_METATYPE(cflow::ui::ModelInfo)
Q_DECLARE_METATYPE(cflow::ui::WorkerError)
