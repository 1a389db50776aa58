#pragma once
// Chat templates: a sandboxed Jinja interpreter (Python/jinja2 semantics, as Hugging Face
// transformers renders `chat_template`) bound to the chat variables `messages`,
// `add_generation_prompt`, `bos_token`, `eos_token`, `tools` and extra kwargs. Hostile
// templates are bounded by a step budget, an output cap and a recursion limit; every error
// names the template line and column.
//
// Thread safety: a compiled ChatTemplate is immutable (copies share the compiled program);
// render() may run on any number of threads at once, each rendering with its own state.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cflow/base/result.h"

namespace cflow {

struct ChatMessage {
    std::string role;
    std::string content;
    // Optional extra fields as a JSON object text ("" = none), merged into the message object,
    // e.g. {"tool_calls": [...]} or {"reasoning_content": "..."}.
    std::string extra_json;
};

// A local date and time for strftime_now() (month 1-12, day 1-31, hour 0-23, minute 0-59,
// second 0-60).
struct TemplateTime {
    int year = 1970;
    int month = 1;
    int day = 1;
    int hour = 0;
    int minute = 0;
    int second = 0;
};

struct TemplateOptions {
    bool add_generation_prompt = true;
    std::string bos_token;
    std::string eos_token;
    std::string tools_json;         // "" = no `tools` variable; else a JSON array
    std::string extra_kwargs_json;  // "" or a JSON object, each key becomes a variable, e.g. {"enable_thinking": false}
    // The clock of strftime_now(format): unset = the local time at render (transformers'
    // datetime.now()); set = this date and time, for reproducible prompts (tests, replays).
    std::optional<TemplateTime> now;
    // As transformers' ImmutableSandboxedEnvironment (jinja2 3.1.5 and later): the list methods
    // append/clear/extend/insert/pop/remove/reverse/sort and the dict methods clear/pop/popitem/
    // setdefault/update are unsafe: undefined, and calling one fails with "access to attribute
    // 'append' of 'list' object is unsafe.". false: they work, as in a plain jinja2 Environment
    // and llama.cpp's minja (templates written for those, e.g. Kimi-K2's tool-call queue).
    bool immutable_sandbox = true;
    bool trim_blocks = true;        // as transformers configures its jinja environment
    bool lstrip_blocks = true;
    // The sandbox's budget. Running out of any of them fails the render with
    // ErrorKind::OverBudget; real templates use a few thousand steps and well under 1 MiB.
    uint64_t max_steps = 5'000'000;
    uint64_t max_output_bytes = 4 << 20;
    uint64_t max_allocated_bytes = 256ull << 20;  // strings, lists and dicts built or copied, summed
    uint32_t time_limit_ms = 10'000;              // 0: none
};

class ChatTemplate {
public:
    // Syntax errors name the line and column ("line 3, column 14: syntax error: ...").
    static Result<ChatTemplate> compile(std::string source);

    // messages_json: a JSON array of message objects (role, content, and anything else:
    // tool_calls, reasoning_content, ...). Errors name line/column; raise_exception(msg) in
    // the template becomes an error carrying msg.
    Result<std::string> render(const std::string& messages_json, const TemplateOptions& options) const;
    Result<std::string> render(const std::vector<ChatMessage>& messages, const TemplateOptions& options) const;

    const std::string& source() const;

private:
    struct Compiled;
    explicit ChatTemplate(std::shared_ptr<const Compiled> compiled);
    std::shared_ptr<const Compiled> compiled_;
};

// Used when a model has no template: "role: content" lines, explicit and visible to the user.
std::string render_fallback_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt);

// Small conversations every template is tried on: with a system message and without one, so a
// template that rejects a system message or needs strict alternation still renders one.
const std::vector<std::vector<ChatMessage>>& chat_template_probes();

// The load-time budget: a chat template that cannot render the probes within it is hostile or
// broken, and a front end that waited on it would hang at "Loading".
inline constexpr uint32_t kTemplateProbeTimeLimitMs = 2000;
inline constexpr uint64_t kTemplateProbeMaxAllocatedBytes = 64ull << 20;

// Renders the probes under the load-time budget (options' bos/eos and kwargs are used, its limits
// tightened to the budget). Fails with ErrorKind::OverBudget and the reason when a probe runs out
// of steps, memory, time or output; a probe the template rejects on purpose (raise_exception for
// an unsupported role) is not a failure.
Status probe_chat_template(const ChatTemplate& chat_template, TemplateOptions options);

} // namespace cflow
