#pragma once
// The chat core: the one implementation of a multi-turn conversation with a model that every
// front end drives (`cflow chat`, the desktop app's engine worker, the local server).
//
//   ChatSession chat(model, std::move(session));
//   auto turn = chat.prepare(messages);          // render with the model's template, encode, plan KV reuse
//   ChatTurnOutcome outcome;
//   Status s = chat.reply(*turn, options, on_piece, &cancel, outcome);   // stream the reply
//
// One rule each for: rendering (the model's template, else the visible "role: content"
// fallback with the reason recorded), prompt encoding (control tokens the template writes are
// parsed; BOS is prepended when the vocabulary asks for it and the prompt does not start with
// it), end of turn (every control token the template writes, besides EOS), and KV-cache reuse
// (the longest common token prefix of the cache and the new prompt is kept, only the rest is fed).
//
// Thread safety: a ChatSession is used by one thread at a time (it owns a Session). The
// CancelToken passed to reply() may be set from any thread; the reply then ends within one
// token with ErrorKind::Cancelled, and the cache keeps exactly what was computed.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cflow/base/cancel.h"
#include "cflow/base/result.h"
#include "cflow/engine/chat/chat_template.h"
#include "cflow/engine/chat/tool_calls.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/generation/generate.h"
#include "cflow/engine/generation/stop_sequences.h"
#include "cflow/engine/tokenizer/tokenizer.h"

namespace cflow {

// Which template rendered a prompt.
enum class PromptSource : uint8_t {
    ModelTemplate,  // the model's own chat template
    Fallback,       // "role: content" lines: the model has no template, or it failed (see note)
    Raw,            // text given verbatim, no template
};

// What to do when a conversation and the reply it asks for do not fit in the context.
enum class ContextPolicy : uint8_t {
    Stop,           // feed it whole; a prompt that does not fit is refused, a reply stops when the cache is full
    DropOldest,     // leave out the oldest turns (never the system prompt or the last message) until it fits
    SlidingWindow,  // keep the system prompt's tokens and the newest tokens, cutting the oldest ones
};
std::string_view context_policy_name(ContextPolicy policy);  // "stop", "drop_oldest", "sliding_window"

struct PrepareOptions {
    ContextPolicy policy = ContextPolicy::Stop;
    // Tokens DropOldest / SlidingWindow keep free for the reply (clamped to half the context).
    uint32_t reserve_tokens = 0;
    // Tools the model may call: rendered by the template as its `tools` variable (tool_calls.h
    // tools_template_json), so they belong to the prompt's head; empty = no `tools` variable.
    std::vector<ToolDefinition> tools;
};

// Which template a ChatSession renders with.
struct TemplateChoice {
    enum class Kind : uint8_t { Model, Builtin, Custom } kind = Kind::Model;
    std::string value;  // Builtin: its name (builtin_templates.h); Custom: the Jinja source
    bool operator==(const TemplateChoice&) const = default;
};

// A prompt ready to be fed: what was rendered, its ids and how much of the KV cache it keeps.
struct PreparedTurn {
    std::string text;                 // exactly what was tokenized (SlidingWindow: ids keep only part of it)
    PromptSource source = PromptSource::ModelTemplate;
    std::string note;                 // why the fallback was used; empty otherwise
    std::vector<int32_t> ids;         // [prompt tokens] the whole prompt as the session will hold it
    size_t reused_tokens = 0;         // of ids, already in the KV cache (planned at prepare time)
    uint32_t context_length = 0;      // the session's context, for messages
    size_t dropped_messages = 0;      // DropOldest: leading messages left out (after the system prompt)
    size_t dropped_tokens = 0;        // SlidingWindow: tokens cut; DropOldest: tokens of the dropped messages
    bool system_ignored = false;      // a non-empty system message does not appear in the rendered text
    // Leading ids a sliding window or a context shift never drops: BOS and the system prompt's
    // tokens (prepare() finds them under DropOldest / SlidingWindow only; under Stop it stays 0).
    size_t kept_head = 0;
    bool fits() const { return ids.size() < context_length; }
};

struct ReplyOptions {
    SamplingParams sampling;
    int32_t max_tokens = 512;         // 0: only feed the prompt
    bool ignore_end_of_turn = false;  // run past EOS and end-of-turn tokens (benchmarks, tests)
    // Strings that end the reply (generation/stop_sequences.h): never streamed, not in outcome.text;
    // the reply then ends with StopReason::StopSequence. Text that could begin one is held back
    // until it cannot (or the reply ends).
    std::vector<std::string> stop_sequences;
    std::function<void(const TokenTelemetry&)> on_step;  // every forward step, on the replying thread
    // Each emitted reply token with the logits row it was sampled from (generate.h
    // GenerateRequest::on_sampled), before its piece reaches on_piece; on the replying thread.
    std::function<void(int32_t token, std::span<const float> logits)> on_sampled;
    // A reply that fills the context: Stop ends it (StopReason::ContextFull); DropOldest and
    // SlidingWindow shift the context (generate.h ContextShift, keeping PreparedTurn::kept_head)
    // and the same reply goes on.
    ContextPolicy context_policy = ContextPolicy::Stop;
    // Set: the reply stays inside this grammar's language (generate.h GenerateRequest::grammar);
    // it ends with StopReason::GrammarComplete once the grammar allows no more text. The walk
    // order of this model's vocabulary is built on the first such reply and kept.
    std::shared_ptr<const Grammar> grammar;
};

// One streamed piece: the token that wrote it (-1 for the decoder's flushed tail) and the
// KV position that token is fed at (its telemetry's position).
struct ChatPiece {
    int32_t token;
    std::string_view text;
    uint32_t position;
};
using PieceCallback = std::function<void(const ChatPiece& piece)>;

// What a reply did; filled on every return of reply(), including errors and cancellation.
struct ChatTurnOutcome {
    std::string text;                 // the reply as streamed (valid UTF-8)
    std::string stop_sequence;        // the stop string that ended it (StopReason::StopSequence)
    std::vector<int32_t> tokens;      // [generated tokens] ids emitted
    GenerateStats stats;              // counts and timings of whatever ran
    uint32_t context_used = 0;        // tokens in the KV cache afterwards
};

class ChatSession {
public:
    ChatSession(std::shared_ptr<const Model> model, std::unique_ptr<Session> session);

    // Renders the conversation (system/user/assistant messages in order) and plans the prefill.
    // Never fails for a template error (that falls back, with the reason in note); fails with
    // InvalidInput when the prompt encodes to no tokens.
    // options.policy decides what is left out when the conversation and reserve_tokens do not fit.
    Result<PreparedTurn> prepare(const std::vector<ChatMessage>& messages, const PrepareOptions& options = {}) const;
    // Raw mode: `text` verbatim, control tokens parsed, the same BOS rule. Both truncating
    // policies keep BOS and the newest tokens (there are no turns to drop).
    Result<PreparedTurn> prepare_raw(const std::string& text, const PrepareOptions& options = {}) const;
    // Raw mode from token ids (no BOS added): InvalidInput names the first id outside the
    // vocabulary; the same truncation rule as prepare_raw.
    Result<PreparedTurn> prepare_ids(std::vector<int32_t> ids, const PrepareOptions& options = {}) const;

    // Renders with another template from now on (end-of-turn tokens follow it). A Custom or
    // Builtin choice that does not compile is refused (the current one stays) with the
    // interpreter's line/column message; an unknown built-in name is InvalidInput.
    Status set_template(const TemplateChoice& choice);
    const TemplateChoice& template_choice() const { return choice_; }
    // Thinking models' templates (Qwen3, SmolLM3) read enable_thinking: true / false is passed
    // to the template from the next prepare() on; nullopt leaves the template's own default.
    void set_thinking(std::optional<bool> enabled);
    std::optional<bool> thinking() const { return thinking_; }
    // The clock strftime_now() reads in the template (gpt-oss and Llama 3.1 write today's date
    // into the prompt): nullopt = the local time at each render; a fixed time makes prompts
    // reproducible (tests, replays).
    void set_template_clock(std::optional<TemplateTime> now) { template_options_.now = now; }
    // Whether the template in use reads enable_thinking (so a thinking switch means something).
    bool template_reads_thinking() const;
    // How the template in use writes tool calls (detect_tool_call_format on its source); None
    // without a template (the "role: content" fallback renders no tools).
    ToolCallFormat tool_call_format() const;

    // Feeds the prepared prompt (reusing the cache when prepare() planned it and the cache is
    // unchanged since) and streams the reply. Errors: ContextFull when the prompt does not fit
    // (nothing is fed), Cancelled, OutOfMemory, or the step's own error (the cache is then
    // forgotten). On success outcome.stats.stop_reason says why the reply ended.
    Status reply(const PreparedTurn& turn, const ReplyOptions& options, const PieceCallback& on_piece,
                 const CancelToken* cancel, ChatTurnOutcome& outcome);

    void forget();                                      // empty the KV cache
    const std::vector<int32_t>& end_of_turn_tokens() const { return end_of_turn_; }
    const std::vector<int32_t>& cached_tokens() const { return cached_; }
    bool has_model_template() const { return template_.has_value(); }
    const std::string& template_note() const { return template_note_; }  // why there is none; "" when there is
    const Session& session() const { return *session_; }
    Session& session() { return *session_; }
    const Model& model() const { return *model_; }

private:
    Result<PreparedTurn> finish_prepare(PreparedTurn turn) const;
    // tools_json: the `tools` variable ("" = none), the same for every rendering of one prepare().
    Result<PreparedTurn> render_and_encode(const std::vector<ChatMessage>& messages, const std::string& tools_json) const;
    Result<PreparedTurn> drop_oldest(const std::vector<ChatMessage>& messages, PreparedTurn whole, uint32_t budget,
                                     const std::string& tools_json) const;
    // Keeps turn.kept_head (or BOS alone when that is over half the budget) and the newest tokens.
    void slide_window(PreparedTurn& turn, uint32_t budget) const;
    // BOS and the tokens the leading system messages render to (the common prefix of their own
    // rendering and ids), else BOS alone.
    size_t system_head(const std::vector<ChatMessage>& messages, const std::vector<int32_t>& ids,
                       const std::string& tools_json = {}) const;
    void plan_reuse(PreparedTurn& turn) const;
    uint32_t prompt_budget(const PrepareOptions& options) const;
    std::optional<std::string> render_with_template(const std::vector<ChatMessage>& messages, std::string& note,
                                                    bool add_generation_prompt, const std::string& tools_json) const;

    std::shared_ptr<const Model> model_;
    std::unique_ptr<Session> session_;
    std::optional<ChatTemplate> template_;
    std::string template_note_;        // why there is no usable template
    TemplateChoice choice_;
    TemplateOptions template_options_;
    std::optional<bool> thinking_;
    std::vector<int32_t> end_of_turn_;
    std::vector<int32_t> cached_;      // [session position] the ids the KV cache holds, in order
    std::shared_ptr<const GrammarVocabulary> grammar_vocabulary_;  // built for the first grammar reply
};

// The one rules, usable on their own (the CLI's `template` and `tokenize` commands, tests).
// Control tokens (not EOS or BOS) whose text the template writes: in its source, or in a probe
// conversation it renders.
std::vector<int32_t> end_of_turn_tokens(const Tokenizer& tokenizer, const ChatTemplate* chat_template);
// A rendered prompt -> ids: control tokens parsed, BOS prepended when the vocabulary adds one
// (add_bos_token) and the ids do not already start with it.
std::vector<int32_t> encode_chat_prompt(const Tokenizer& tokenizer, const std::string& prompt);

} // namespace cflow
