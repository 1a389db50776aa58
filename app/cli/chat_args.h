#pragma once
// The chat core's choices as command-line options, for every command that drives it (chat, serve):
//   --template model|chatml|llama2|llama3|gemma|plain|FILE.jinja   which template renders turns
//   --context-policy stop|drop-oldest|sliding-window               what a too-long conversation loses
//   --thinking on|off                                              enable_thinking for templates that read it (Qwen3, SmolLM3)
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

struct ChatArgs {
    std::optional<std::string> template_name;  // absent: the model's own
    ContextPolicy context_policy = ContextPolicy::Stop;
    std::optional<bool> thinking;              // absent: the template's own default
};

// --template and --context-policy, and --thinking when `with_thinking`.
void add_chat_options(CLI::App& app, ChatArgs& args, bool with_thinking);

// Absent or "model": the model's own. A name that is not a built-in is read as a Jinja file
// (errors name the option and the file).
Result<TemplateChoice> parse_template_arg(const std::optional<std::string>& value);

} // namespace cflow::cli
