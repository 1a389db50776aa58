#pragma once
// The chat core's choices as command-line options, for every command that drives it:
//   --template model|chatml|llama2|llama3|gemma|plain|FILE.jinja   which template renders turns
//   --context-policy stop|drop-oldest|sliding-window               what a too-long conversation loses
//   --thinking on|off                                              enable_thinking for templates that read it (Qwen3, SmolLM3)
#include "cflow/engine/chat/chat_session.h"
#include "cli_args.h"

namespace cflow::cli {

inline constexpr const char* kTemplateOption = "--template";
inline constexpr const char* kContextPolicyOption = "--context-policy";
inline constexpr const char* kThinkingOption = "--thinking";

// Absent: the model's own. A name that is not a built-in is read as a Jinja file (errors name
// the option and the file).
Result<TemplateChoice> parse_template_arg(const Args& args);
// Absent: fallback (each command picks its default).
Result<ContextPolicy> parse_context_policy_arg(const Args& args, ContextPolicy fallback);
// Absent: nullopt (the template's own default).
Result<std::optional<bool>> parse_thinking_arg(const Args& args);

} // namespace cflow::cli
