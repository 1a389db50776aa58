#include "openai_tool_request.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "cflow/engine/chat/tool_calls.h"
#include "cflow/formats/json_depth.h"

namespace cflow::server {
namespace {

using nlohmann::json;

// Prefixed: the server is a unity build and openai_request.cpp has its own shown()/wrong().
std::string tool_request_shown(const json& value) {
    std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > 60) text = text.substr(0, 57) + "...";
    return text;
}

ApiError tool_request_wrong(const std::string& param, const std::string& expectation, const json& value) {
    return bad_request("'" + param + "' must be " + expectation + ", got " + tool_request_shown(value), param);
}

// OpenAI and Anthropic both require 1-64 of [A-Za-z0-9_-]; templates and grammars rely on it too
// (a name is written into the call markers unescaped).
bool openai_is_tool_name(const std::string& name) {
    if (name.empty() || name.size() > 64) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    });
}

std::optional<ApiError> openai_read_tool(const json& tool, size_t index, ToolDefinition& out) {
    const std::string at = "tools[" + std::to_string(index) + "]";
    if (!tool.is_object()) return tool_request_wrong(at, "an object {\"type\": \"function\", \"function\": {...}}", tool);
    const auto type = tool.find("type");
    if (type == tool.end() || !type->is_string()) return tool_request_wrong(at + ".type", "\"function\"", tool.value("type", json()));
    if (*type != "function")
        return bad_request("tools of type " + tool_request_shown(*type) + " are not supported (function only)", at + ".type");
    const auto function = tool.find("function");
    if (function == tool.end() || !function->is_object())
        return tool_request_wrong(at + ".function", "an object with a name", tool.value("function", json()));
    const auto name = function->find("name");
    if (name == function->end() || !name->is_string() || !openai_is_tool_name(name->get<std::string>()))
        return tool_request_wrong(at + ".function.name", "1 to 64 letters, digits, '_' or '-'", function->value("name", json()));
    out.name = name->get<std::string>();
    if (const auto description = function->find("description"); description != function->end() && !description->is_null()) {
        if (!description->is_string()) return tool_request_wrong(at + ".function.description", "a string", *description);
        out.description = description->get<std::string>();
    }
    if (const auto parameters = function->find("parameters"); parameters != function->end() && !parameters->is_null()) {
        if (!parameters->is_object())
            return tool_request_wrong(at + ".function.parameters", "a JSON Schema object", *parameters);
        out.parameters_json = parameters->dump(-1, ' ', false, json::error_handler_t::replace);
    }
    if (const auto strict = function->find("strict"); strict != function->end() && !strict->is_null() && !strict->is_boolean())
        return tool_request_wrong(at + ".function.strict", "true or false", *strict);
    return std::nullopt;
}

std::optional<ApiError> openai_read_tool_choice(const json& value, const std::vector<ToolDefinition>& tools, ToolChoice& out) {
    const char* expectation = "\"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}";
    if (value.is_string()) {
        const std::string kind = value.get<std::string>();
        if (kind == "auto") out.kind = ToolChoice::Kind::Auto;
        else if (kind == "none") out.kind = ToolChoice::Kind::None;
        else if (kind == "required") out.kind = ToolChoice::Kind::Required;
        else return tool_request_wrong("tool_choice", expectation, value);
    } else if (value.is_object()) {
        const auto function = value.find("function");
        if (value.value("type", json()) != "function" || function == value.end() || !function->is_object() ||
            !function->value("name", json()).is_string())
            return tool_request_wrong("tool_choice", expectation, value);
        out.kind = ToolChoice::Kind::Named;
        out.name = (*function)["name"].get<std::string>();
        const bool offered = std::any_of(tools.begin(), tools.end(), [&](const ToolDefinition& t) { return t.name == out.name; });
        if (!offered)
            return bad_request("'tool_choice' names the function " + tool_request_shown((*function)["name"]) +
                                   ", which is not among 'tools'", "tool_choice");
    } else {
        return tool_request_wrong("tool_choice", expectation, value);
    }
    if (tools.empty() && (out.kind == ToolChoice::Kind::Required || out.kind == ToolChoice::Kind::Named))
        return bad_request("'tool_choice' " + tool_request_shown(value) + " needs 'tools' to call", "tool_choice");
    return std::nullopt;
}

// An assistant turn's call: OpenAI sends the arguments as a JSON string, some clients as the object.
std::optional<ApiError> openai_read_call(const json& call, const std::string& at, const RequestLimits& limits, ToolCall& out) {
    if (!call.is_object()) return tool_request_wrong(at, "an object {\"id\", \"type\": \"function\", \"function\": {...}}", call);
    if (const auto id = call.find("id"); id != call.end() && !id->is_null()) {
        if (!id->is_string()) return tool_request_wrong(at + ".id", "a string", *id);
        out.id = id->get<std::string>();
    }
    if (const auto type = call.find("type"); type != call.end() && !type->is_null() && *type != "function")
        return tool_request_wrong(at + ".type", "\"function\"", *type);
    const auto function = call.find("function");
    if (function == call.end() || !function->is_object())
        return tool_request_wrong(at + ".function", "an object {\"name\", \"arguments\"}", call.value("function", json()));
    const auto name = function->find("name");
    if (name == function->end() || !name->is_string() || name->get<std::string>().empty())
        return tool_request_wrong(at + ".function.name", "a function name", function->value("name", json()));
    out.name = name->get<std::string>();
    const std::string arguments_at = at + ".function.arguments";
    const auto arguments = function->find("arguments");
    json parsed = json::object();
    if (arguments != function->end() && arguments->is_string()) {
        const std::string& text = arguments->get_ref<const std::string&>();
        const bool blank = text.find_first_not_of(" \t\r\n") == std::string::npos;  // a call without arguments
        if (!blank) {
            // The body's depth check did not see inside this string: nlohmann recurses per level.
            if (json_nesting_depth(text) > limits.max_nesting_depth)
                return bad_request("'" + arguments_at + "' nests deeper than " + std::to_string(limits.max_nesting_depth) +
                                       " levels", arguments_at);
            try {
                parsed = json::parse(text);
            } catch (const json::exception&) {
                return bad_request("'" + arguments_at + "' must be a JSON object encoded as a string, got " +
                                       tool_request_shown(*arguments), arguments_at);
            }
        }
    } else if (arguments != function->end() && arguments->is_object()) {
        parsed = *arguments;
    } else if (arguments != function->end() && !arguments->is_null()) {
        return tool_request_wrong(arguments_at, "a JSON object encoded as a string", *arguments);
    }
    if (!parsed.is_object())
        return tool_request_wrong(arguments_at, "a JSON object encoded as a string", *arguments);
    out.arguments_json = parsed.dump(-1, ' ', false, json::error_handler_t::replace);
    return std::nullopt;
}

} // namespace

std::optional<ApiError> read_tool_fields(const json& body, const RequestLimits& limits, GenerationRequest& request) {
    if (const auto tools = body.find("tools"); tools != body.end() && !tools->is_null()) {
        if (!tools->is_array()) return tool_request_wrong("tools", "an array of function tools", *tools);
        if (tools->size() > limits.max_tools)
            return bad_request("'tools' holds " + std::to_string(tools->size()) + " tools; at most " +
                                   std::to_string(limits.max_tools) + " are accepted", "tools");
        for (size_t i = 0; i < tools->size(); ++i) {
            ToolDefinition tool;
            if (auto e = openai_read_tool((*tools)[i], i, tool)) return e;
            const bool repeated = std::any_of(request.tools.begin(), request.tools.end(),
                                              [&](const ToolDefinition& t) { return t.name == tool.name; });
            if (repeated)
                return bad_request("the function name '" + tool.name + "' is given twice in 'tools'",
                                   "tools[" + std::to_string(i) + "].function.name");
            request.tools.push_back(std::move(tool));
        }
    }
    if (const auto choice = body.find("tool_choice"); choice != body.end() && !choice->is_null())
        if (auto e = openai_read_tool_choice(*choice, request.tools, request.tool_choice)) return e;
    if (const auto parallel = body.find("parallel_tool_calls"); parallel != body.end() && !parallel->is_null()) {
        if (!parallel->is_boolean()) return tool_request_wrong("parallel_tool_calls", "true or false", *parallel);
        request.parallel_tool_calls = parallel->get<bool>();
    }
    return std::nullopt;
}

std::optional<ApiError> read_message_tool_fields(const json& message, size_t index, const RequestLimits& limits,
                                                 ChatMessage& out) {
    const std::string at = "messages[" + std::to_string(index) + "]";
    if (const auto calls = message.find("tool_calls"); calls != message.end() && !calls->is_null()) {
        if (out.role != "assistant") return bad_request("only assistant messages carry 'tool_calls'", at + ".tool_calls");
        if (!calls->is_array()) return tool_request_wrong(at + ".tool_calls", "an array of tool calls", *calls);
        std::vector<ToolCall> parsed(calls->size());
        for (size_t j = 0; j < calls->size(); ++j)
            if (auto e = openai_read_call((*calls)[j], at + ".tool_calls[" + std::to_string(j) + "]", limits, parsed[j])) return e;
        if (!parsed.empty()) out.extra_json = tool_calls_message_extra_json(parsed);
    }
    if (out.role == "tool") {
        const auto id = message.find("tool_call_id");
        if (id == message.end() || !id->is_string())
            return tool_request_wrong(at + ".tool_call_id", "the id of the call this message answers",
                                      message.value("tool_call_id", json()));
        json extra = {{"tool_call_id", *id}};
        if (const auto name = message.find("name"); name != message.end() && name->is_string()) extra["name"] = *name;
        out.extra_json = extra.dump(-1, ' ', false, json::error_handler_t::replace);
    }
    return std::nullopt;
}

} // namespace cflow::server
