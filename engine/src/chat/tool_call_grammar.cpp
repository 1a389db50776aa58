// The grammar of a reply that must call a tool: each family's call syntax around each tool's
// name and its arguments' JSON Schema (json_schema_grammar.h), so what the model writes under it
// is what parse_tool_calls reads back as a call.
#include <new>
#include <string>

#include "cflow/engine/chat/tool_calls.h"
#include "cflow/engine/generation/json_schema_grammar.h"

namespace cflow {
namespace {

constexpr size_t kGrammarMaxRequiredCalls = 8;  // Required: one call, then up to this many in all
constexpr size_t kGrammarMaxToolNameBytes = 64;

bool grammar_name_ok(std::string_view name) {
    if (name.empty() || name.size() > kGrammarMaxToolNameBytes) return false;
    for (char c : name)
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
            return false;
    return true;
}

// A GBNF string literal of `text` (names are checked to need no JSON escaping).
std::string grammar_literal(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') out.push_back('\\');
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out.push_back(c);
    }
    out.push_back('"');
    return out;
}

// One call of `name` as `format` writes it, `arguments` being the rule of its arguments object.
std::string grammar_call_sequence(ToolCallFormat format, std::string_view name, const std::string& arguments) {
    switch (format) {
    case ToolCallFormat::Hermes:
        return grammar_literal("<tool_call>\n{\"name\": \"" + std::string(name) + "\", \"arguments\": ") + " " + arguments + " " +
               grammar_literal("}\n</tool_call>");
    case ToolCallFormat::Llama31:
        return grammar_literal("{\"name\": \"" + std::string(name) + "\", \"parameters\": ") + " " + arguments + " \"}\"";
    case ToolCallFormat::Mistral:
        // Mistral Nemo's template writes each call's 9-character id after its arguments.
        return grammar_literal("{\"name\": \"" + std::string(name) + "\", \"arguments\": ") + " " + arguments + " " +
               grammar_literal(", \"id\": \"") + " [a-zA-Z0-9]{9} " + grammar_literal("\"}");
    case ToolCallFormat::Phi4:
        return grammar_literal("{\"name\": \"" + std::string(name) + "\", \"arguments\": ") + " " + arguments + " \"}\"";
    case ToolCallFormat::Harmony:
        return grammar_literal("<|channel|>commentary to=functions." + std::string(name) + " <|constrain|>json<|message|>") + " " +
               arguments;
    case ToolCallFormat::None: break;
    }
    return {};
}

// root: one call (Named, and the families that make one call per turn), or one or more.
std::string grammar_root(ToolCallFormat format, bool several) {
    const std::string more = "{0," + std::to_string(kGrammarMaxRequiredCalls - 1) + "}";
    switch (format) {
    case ToolCallFormat::Hermes: return several ? "root ::= call ( \"\\n\" call )" + more + "\n" : "root ::= call\n";
    case ToolCallFormat::Mistral:
        return std::string("root ::= \"[TOOL_CALLS][\" call ") + (several ? "( \", \" call )" + more + " " : "") + "\"]\"\n";
    case ToolCallFormat::Phi4:
        return std::string("root ::= \"<|tool_call|>[\" call ") + (several ? "( \", \" call )" + more + " " : "") +
               "\"]<|/tool_call|>\"\n";
    case ToolCallFormat::Llama31:
    case ToolCallFormat::Harmony:
    case ToolCallFormat::None: break;
    }
    return "root ::= call\n";
}

std::string_view grammar_choice_name(ToolChoice::Kind kind) {
    return kind == ToolChoice::Kind::Auto ? "auto" : kind == ToolChoice::Kind::None ? "none" : "required";
}

} // namespace

Result<std::shared_ptr<const Grammar>> tool_call_grammar(ToolCallFormat format, std::span<const ToolDefinition> tools,
                                                         const ToolChoice& choice, const JsonSchemaLimits& limits) {
    if (format == ToolCallFormat::None)
        return make_error("tool calls: the chat template has no tool-call format, so no call can be required");
    if (choice.kind == ToolChoice::Kind::Auto || choice.kind == ToolChoice::Kind::None)
        return make_error("tool calls: tool_choice " + std::string(grammar_choice_name(choice.kind)) +
                          " leaves the reply free: there is no call grammar for it");
    if (tools.empty()) return make_error("tool calls: a call is required but no tools are given");
    try {
        std::string rules;
        std::string alternatives;
        size_t chosen = 0;
        for (size_t i = 0; i < tools.size(); ++i) {
            const ToolDefinition& tool = tools[i];
            if (choice.kind == ToolChoice::Kind::Named && tool.name != choice.name) continue;
            if (!grammar_name_ok(tool.name))
                return make_error("tool calls: tool " + std::to_string(i) + "'s name '" + tool.name +
                                  "' is not 1-64 letters, digits, '_', '-' or '.'");
            const std::string arguments_rule = "args" + std::to_string(i);
            const std::string schema = tool.parameters_json.empty() ? std::string(R"({"type": "object"})") : tool.parameters_json;
            auto arguments = json_schema_gbnf_rules(schema, arguments_rule, limits);
            if (!arguments)
                return make_error(arguments.kind(), "tool calls: the parameters of tool '" + tool.name + "': " + arguments.error());
            rules += *arguments;
            if (!rules.empty() && rules.back() != '\n') rules.push_back('\n');
            const std::string call_rule = "call" + std::to_string(i);
            rules += call_rule + " ::= " + grammar_call_sequence(format, tool.name, arguments_rule) + "\n";
            alternatives += (alternatives.empty() ? "" : " | ") + call_rule;
            ++chosen;
        }
        if (chosen == 0) return make_error("tool calls: tool_choice names '" + choice.name + "', which is not among the tools");
        const std::string source =
            grammar_root(format, choice.kind == ToolChoice::Kind::Required) + "call ::= " + alternatives + "\n" + rules;
        auto parsed = parse_grammar(source);
        if (!parsed) return make_error(parsed.kind(), "tool calls: the call grammar: " + parsed.error());
        return std::shared_ptr<const Grammar>(std::make_shared<Grammar>(std::move(parsed).value()));
    } catch (const std::bad_alloc&) {
        return out_of_memory_error("building the tool-call grammar");
    }
}

} // namespace cflow
