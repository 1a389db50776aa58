#include "chat_args.h"

#include <cstdio>

#include "cflow/engine/chat/builtin_templates.h"
#include "cflow/engine/generation/json_schema_grammar.h"
#include "cflow/formats/whole_file.h"
#include "cli_options.h"

namespace cflow::cli {

void add_chat_options(CLI::App& app, ChatArgs& args, bool with_thinking) {
    std::string names = "model";
    for (const BuiltinTemplate& t : builtin_chat_templates()) names += "|" + std::string(t.name);
    app.add_option(kTemplateOption, args.template_name,
                   "the chat template: the model's own, a built-in one or a Jinja file")
        ->type_name(names + "|FILE.jinja")
        ->default_str("model");
    add_context_policy_option(app, args.context_policy);
    if (with_thinking)
        app.add_option(kThinkingOption, args.thinking,
                       "enable_thinking for templates that read it (Qwen3, SmolLM3: off answers without reasoning)")
            ->transform(CLI::Validator(
                [](std::string& value) -> std::string {
                    if (value != "on" && value != "off")
                        return std::string(kThinkingOption) + " '" + value + "': expected on or off";
                    value = value == "on" ? "1" : "0";
                    return {};
                },
                ""))
            ->type_name("on|off");
    if (with_thinking)
        app.add_option_function<std::string>(
               kTemplateTimeOption, [&args](const std::string& value) { args.template_time = parse_template_time(value); },
               "the date and time strftime_now() gives the template (default: now): reproducible prompts")
            ->check(CLI::Validator(
                [](std::string& value) -> std::string {
                    if (parse_template_time(value)) return {};
                    return std::string(kTemplateTimeOption) + " '" + value + "': expected YYYY-MM-DD or YYYY-MM-DD HH:MM:SS";
                },
                ""))
            ->type_name("\"YYYY-MM-DD HH:MM:SS\"");
}

void add_remote_chat_options(CLI::App& app, RemoteChatArgs& args) {
    app.add_option(kEndpointOption, args.endpoint,
                   "chat with a model on an OpenAI-compatible server (cflow serve elsewhere, llama.cpp, vLLM, Ollama) "
                   "instead of a local MODEL: its base URL, e.g. http://10.0.0.2:8080/v1")
        ->type_name("URL");
    app.add_option("--api-key-env", args.api_key_env,
                   "with --endpoint: send the API key held in this environment variable (never on the command line)")
        ->type_name("VAR");
    app.add_option("--model", args.model, "with --endpoint: the model's id (default: the endpoint's first listed model)")
        ->type_name("NAME");
    app.add_option("--ca-file", args.ca_file, "with --endpoint https://...: trust the CA certificate(s) in this PEM file")
        ->type_name("PEM");
    app.add_option("--timeout", args.timeout_s, "with --endpoint: seconds the server may stay silent before giving up")
        ->check(integer_in(1, 3600))
        ->type_name("S")
        ->capture_default_str();
    app.add_flag("--server-metrics", args.server_metrics,
                 "with --endpoint: after each reply, print on stderr what the server reports on /metrics (vLLM; "
                 "llama.cpp's server started with --metrics): requests running and waiting, KV cache use, mean "
                 "time to first token");
}

void add_json_schema_options(CLI::App& app, JsonSchemaArgs& args) {
    app.add_option(kJsonSchemaOption, args.file,
                   "every reply is one JSON value valid under the JSON Schema in FILE (grammar-constrained sampling; "
                   "the reply ends where the value does)")
        ->type_name("FILE");
    app.add_option("--json-string-max-chars", args.string_max_chars,
                   "with --json-schema: strings the schema leaves unbounded get at most N characters (0: unbounded; "
                   "for small models that would not close a string)")
        ->check(integer_in(0, 1000000))
        ->type_name("N");
    app.add_option("--json-array-max-items", args.array_max_items,
                   "with --json-schema: arrays the schema leaves unbounded get at most N items, objects at most N extra keys "
                   "(0: unbounded)")
        ->check(integer_in(0, 1000000))
        ->type_name("N");
    app.add_option("--json-recursion-max-depth", args.recursion_max_depth,
                   "with --json-schema: a recursive $ref nests at most N levels (0: unbounded)")
        ->check(integer_in(0, 1000))
        ->type_name("N");
}

Result<std::shared_ptr<const Grammar>> load_json_schema_grammar(const JsonSchemaArgs& args) {
    if (args.file.empty()) return std::shared_ptr<const Grammar>();
    JsonSchemaLimits limits;
    limits.max_string_chars = args.string_max_chars;
    limits.max_array_items = args.array_max_items;
    limits.max_recursion_depth = args.recursion_max_depth;
    auto text = read_whole_file(args.file, limits.max_schema_bytes, "a JSON schema");
    if (!text) return make_error(text.kind(), std::string(kJsonSchemaOption) + " " + args.file + ": " + text.error());
    auto grammar = json_schema_grammar(*text, limits);
    if (!grammar) return make_error(grammar.kind(), std::string(kJsonSchemaOption) + " " + args.file + ": " + grammar.error());
    return grammar;
}

void add_context_policy_option(CLI::App& app, ContextPolicy& policy) {
    app.add_option(kContextPolicyOption, policy,
                   "what a conversation or reply too long for the context loses (stop: the message is refused and a "
                   "reply stops at the limit; drop-oldest: the oldest turns; sliding-window: the oldest tokens; both "
                   "shift a full context during a reply, keeping the system prompt, and go on)")
        ->transform(CLI::Validator(
            [](std::string& value) -> std::string {
                ContextPolicy chosen;
                if (value == "stop") chosen = ContextPolicy::Stop;
                else if (value == "drop-oldest") chosen = ContextPolicy::DropOldest;
                else if (value == "sliding-window") chosen = ContextPolicy::SlidingWindow;
                else return std::string(kContextPolicyOption) + " '" + value + "': expected stop, drop-oldest or sliding-window";
                value = std::to_string(int(chosen));
                return {};
            },
            ""))
        ->type_name("stop|drop-oldest|sliding-window")
        ->default_str("stop");
}

std::optional<TemplateTime> parse_template_time(const std::string& text) {
    TemplateTime t;
    char sep = ' ';
    int consumed = 0;
    if (text.size() == 10) {
        if (std::sscanf(text.c_str(), "%4d-%2d-%2d%n", &t.year, &t.month, &t.day, &consumed) != 3 || consumed != 10)
            return std::nullopt;
    } else if (text.size() == 19) {
        if (std::sscanf(text.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d%n", &t.year, &t.month, &t.day, &sep, &t.hour, &t.minute,
                        &t.second, &consumed) != 7 ||
            consumed != 19 || (sep != ' ' && sep != 'T'))
            return std::nullopt;
    } else {
        return std::nullopt;
    }
    static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (t.year % 4 == 0 && t.year % 100 != 0) || t.year % 400 == 0;
    if (t.year < 1 || t.month < 1 || t.month > 12 || t.day < 1 || t.day > kDays[t.month - 1] ||
        (t.month == 2 && t.day == 29 && !leap) || t.hour < 0 || t.hour > 23 || t.minute < 0 || t.minute > 59 ||
        t.second < 0 || t.second > 60)
        return std::nullopt;
    return t;
}

Result<TemplateChoice> parse_template_arg(const std::optional<std::string>& value) {
    if (!value || *value == "model") return TemplateChoice{};
    if (find_builtin_template(*value)) return TemplateChoice{TemplateChoice::Kind::Builtin, *value};
    auto source = read_whole_file(*value, kMaxChatTemplateBytes, "chat template");
    if (!source) {
        std::string names = "model";
        for (const BuiltinTemplate& t : builtin_chat_templates()) names += ", " + std::string(t.name);
        return make_error(ErrorKind::InvalidInput, std::string(kTemplateOption) + " " + *value +
                                                       ": neither a built-in template (" + names + ") nor a readable file: " +
                                                       source.error());
    }
    return TemplateChoice{TemplateChoice::Kind::Custom, std::move(source).value()};
}

} // namespace cflow::cli
