#pragma once
// The chat core's choices as command-line options, for every command that drives it (chat, serve):
//   --template model|chatml|llama2|llama3|gemma|plain|FILE.jinja   which template renders turns
//   --context-policy stop|drop-oldest|sliding-window               what a too-long conversation loses
//   --thinking on|off                                              enable_thinking for templates that read it (Qwen3, SmolLM3)
//   --template-time "YYYY-MM-DD[ HH:MM:SS]"                         the clock strftime_now() reads (reproducible prompts)
#include <optional>
#include <string>

#include "cflow/engine/chat/chat_session.h"

namespace CLI {
class App;
} // namespace CLI

namespace cflow::cli {

inline constexpr const char* kTemplateOption = "--template";
inline constexpr const char* kContextPolicyOption = "--context-policy";
inline constexpr const char* kThinkingOption = "--thinking";
inline constexpr const char* kTemplateTimeOption = "--template-time";

struct ChatArgs {
    std::optional<std::string> template_name;  // absent: the model's own
    ContextPolicy context_policy = ContextPolicy::Stop;
    std::optional<bool> thinking;              // absent: the template's own default
    std::optional<TemplateTime> template_time; // absent: the local time at each render
};

// --context-policy stop|drop-oldest|sliding-window into `policy` (chat, serve, generate).
void add_context_policy_option(CLI::App& app, ContextPolicy& policy);

// --template and --context-policy, and --thinking and --template-time when `with_thinking`
// (the interactive chat).
void add_chat_options(CLI::App& app, ChatArgs& args, bool with_thinking);

// Absent or "model": the model's own. A name that is not a built-in is read as a Jinja file
// (errors name the option and the file).
Result<TemplateChoice> parse_template_arg(const std::optional<std::string>& value);

// "YYYY-MM-DD", "YYYY-MM-DD HH:MM:SS" or "YYYY-MM-DDTHH:MM:SS", each field in its calendar range.
std::optional<TemplateTime> parse_template_time(const std::string& text);

} // namespace cflow::cli
