#pragma once
// The chat core's choices as command-line options, for every command that drives it (chat, serve):
//   --template model|chatml|llama2|llama3|gemma|plain|FILE.jinja   which template renders turns
//   --context-policy stop|drop-oldest|sliding-window               what a too-long conversation loses
//   --thinking on|off                                              enable_thinking for templates that read it (Qwen3, SmolLM3)
//   --template-time "YYYY-MM-DD[ HH:MM:SS]"                         the clock strftime_now() reads (reproducible prompts)
// and the structured-output options of chat and generate:
//   --json-schema FILE                                             every reply is JSON valid under the schema in FILE
//   --json-string-max-chars N, --json-array-max-items N,           caps for what the schema leaves unbounded
//   --json-recursion-max-depth N
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "cflow/engine/chat/chat_session.h"
#include "cflow/engine/generation/grammar.h"

namespace CLI {
class App;
} // namespace CLI

namespace cflow::cli {

inline constexpr const char* kTemplateOption = "--template";
inline constexpr const char* kContextPolicyOption = "--context-policy";
inline constexpr const char* kThinkingOption = "--thinking";
inline constexpr const char* kTemplateTimeOption = "--template-time";
inline constexpr const char* kJsonSchemaOption = "--json-schema";

struct ChatArgs {
    std::optional<std::string> template_name;  // absent: the model's own
    ContextPolicy context_policy = ContextPolicy::Stop;
    std::optional<bool> thinking;              // absent: the template's own default
    std::optional<TemplateTime> template_time; // absent: the local time at each render
};

// `cflow chat --endpoint URL`: the replies come from an OpenAI-compatible server (issue 34).
inline constexpr const char* kEndpointOption = "--endpoint";
struct RemoteChatArgs {
    std::optional<std::string> endpoint;  // the base URL, e.g. http://10.0.0.2:8080/v1; absent: the local engine
    std::string api_key_env;              // --api-key-env VAR: the key is in that environment variable
    std::string model;                    // --model NAME; empty: the endpoint's first listed model
    std::string ca_file;                  // --ca-file PEM: trust this CA for https
    int timeout_s = 120;                  // --timeout: the longest silence of the server
    bool server_metrics = false;          // --server-metrics: print the server's /metrics line after each reply
};

// --endpoint, --api-key-env, --model, --ca-file, --timeout, --server-metrics (chat).
void add_remote_chat_options(CLI::App& app, RemoteChatArgs& args);

struct JsonSchemaArgs {
    std::string file;             // --json-schema: a JSON Schema every reply must validate against; empty: none
    size_t string_max_chars = 0;  // --json-string-max-chars: JsonSchemaLimits::max_string_chars (0: unbounded)
    size_t array_max_items = 0;   // --json-array-max-items: JsonSchemaLimits::max_array_items (0: unbounded)
    size_t recursion_max_depth = 0;  // --json-recursion-max-depth: JsonSchemaLimits::max_recursion_depth (0: unbounded)
};

// --json-schema FILE and its caps (chat, generate).
void add_json_schema_options(CLI::App& app, JsonSchemaArgs& args);

// The grammar of args.file's schema; null when no file was given. Errors name the option, the
// file and, for a schema the converter refuses, the JSON pointer: "--json-schema F: JSON schema #/p: what".
Result<std::shared_ptr<const Grammar>> load_json_schema_grammar(const JsonSchemaArgs& args);

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
