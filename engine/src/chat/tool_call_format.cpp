// Tool-call formats by name and by template, and the JSON the templates read tools and calls from.
#include <cctype>

#include <nlohmann/json.hpp>

#include "cflow/engine/chat/tool_calls.h"
#include "chat/tool_call_scan.h"

namespace cflow {
namespace {

bool format_source_has(std::string_view source, std::string_view marker) { return source.find(marker) != std::string_view::npos; }

// `tools` as a whole identifier (not custom_tools, builtin_tools or tools_in_user_message alone).
bool format_reads_tools(std::string_view source) {
    const auto is_ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
    for (size_t at = source.find("tools"); at != std::string_view::npos; at = source.find("tools", at + 1)) {
        const bool starts = at == 0 || !is_ident(source[at - 1]);
        const bool ends = at + 5 == source.size() || !is_ident(source[at + 5]);
        if (starts && ends) return true;
    }
    return false;
}

// An object text as a JSON value; a text that is not one stays a string (the template shows it as written).
nlohmann::json format_object_or_text(const std::string& text) {
    nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) return nlohmann::json(text);
    return parsed;
}

} // namespace

std::string_view tool_call_format_name(ToolCallFormat format) {
    switch (format) {
    case ToolCallFormat::None: return "none";
    case ToolCallFormat::Hermes: return "hermes";
    case ToolCallFormat::Llama31: return "llama3.1";
    case ToolCallFormat::Mistral: return "mistral";
    case ToolCallFormat::Harmony: return "harmony";
    case ToolCallFormat::Phi4: return "phi4";
    }
    return "none";
}

ToolCallFormat detect_tool_call_format(std::string_view source) {
    // Most specific markers first: Hermes-3 is a Llama 3.1 model whose template writes <tool_call>.
    if (format_source_has(source, "<tool_call>")) return ToolCallFormat::Hermes;
    if (format_source_has(source, "[TOOL_CALLS]")) return ToolCallFormat::Mistral;
    if (format_source_has(source, "<|tool_call|>")) return ToolCallFormat::Phi4;
    if (format_source_has(source, "to=functions") || (format_source_has(source, "<|channel|>") && format_source_has(source, "functions.")))
        return ToolCallFormat::Harmony;
    if (format_source_has(source, "<|python_tag|>") ||
        (format_source_has(source, "<|start_header_id|>") && format_source_has(source, "\"parameters\"")))
        return ToolCallFormat::Llama31;
    return format_reads_tools(source) ? ToolCallFormat::Hermes : ToolCallFormat::None;
}

std::string tools_template_json(std::span<const ToolDefinition> tools) {
    nlohmann::json list = nlohmann::json::array();
    for (const ToolDefinition& tool : tools) {
        nlohmann::json parameters = tool.parameters_json.empty()
                                        ? nlohmann::json{{"type", "object"}, {"properties", nlohmann::json::object()}}
                                        : format_object_or_text(tool.parameters_json);
        nlohmann::json function = {{"name", tool.name}};
        if (!tool.description.empty()) function["description"] = tool.description;
        function["parameters"] = std::move(parameters);
        list.push_back({{"type", "function"}, {"function", std::move(function)}});
    }
    return tool_json_text(list);
}

std::string tool_calls_message_extra_json(std::span<const ToolCall> calls) {
    nlohmann::json list = nlohmann::json::array();
    for (const ToolCall& call : calls)
        list.push_back({{"id", call.id},
                        {"type", "function"},
                        {"function", {{"name", call.name}, {"arguments", format_object_or_text(call.arguments_json)}}}});
    return tool_json_text(nlohmann::json{{"tool_calls", std::move(list)}});
}

} // namespace cflow
