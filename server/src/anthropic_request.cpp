#include "cflow/server/anthropic_request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "cflow/formats/json_depth.h"

namespace cflow::server {
namespace {

using nlohmann::json;

// Names prefixed: the server is a unity build and openai_request.cpp has its own readers.
std::string anthropic_shown(const json& value) {
    std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > 60) text = text.substr(0, 57) + "...";
    return text;
}

ApiError anthropic_wrong(const std::string& param, const std::string& expectation, const json& value) {
    return bad_request("'" + param + "' must be " + expectation + ", got " + anthropic_shown(value), param);
}

std::string anthropic_compact(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

bool anthropic_present(const json& body, const char* name) {
    const auto it = body.find(name);
    return it != body.end() && !it->is_null();
}

std::optional<ApiError> anthropic_read_number(const json& body, const char* name, double min, double max, float& out) {
    if (!anthropic_present(body, name)) return std::nullopt;
    const json& value = body[name];
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < min || value.get<double>() > max)
        return anthropic_wrong(name, "a number from " + json(min).dump() + " to " + json(max).dump(), value);
    out = static_cast<float>(value.get<double>());
    return std::nullopt;
}

std::optional<ApiError> anthropic_read_integer(const json& body, const char* name, int64_t min, int64_t max,
                                               std::optional<int64_t>& out) {
    if (!anthropic_present(body, name)) return std::nullopt;
    const json& value = body[name];
    if (!value.is_number_integer()) return anthropic_wrong(name, "an integer", value);
    const bool too_big = value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max());
    const int64_t number = too_big ? std::numeric_limits<int64_t>::max() : value.get<int64_t>();
    if (number < min || number > max)
        return anthropic_wrong(name, "an integer from " + std::to_string(min) + " to " + std::to_string(max), value);
    out = number;
    return std::nullopt;
}

// Anthropic and OpenAI both require 1-64 of [A-Za-z0-9_-]; call markers and grammars rely on it.
bool anthropic_is_tool_name(const std::string& name) {
    if (name.empty() || name.size() > 64) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    });
}

// A block's "type", or an error naming it.
std::optional<ApiError> anthropic_block_type(const json& block, const std::string& at, std::string& type) {
    if (!block.is_object() || !block.contains("type") || !block["type"].is_string())
        return anthropic_wrong(at, "a content block {\"type\": ...}", block);
    type = block["type"].get<std::string>();
    return std::nullopt;
}

std::optional<ApiError> anthropic_block_text(const json& block, const std::string& at, std::string& out) {
    const auto text = block.find("text");
    if (text == block.end() || !text->is_string()) return anthropic_wrong(at + ".text", "a string", block.value("text", json()));
    out += text->get<std::string>();
    return std::nullopt;
}

std::optional<ApiError> anthropic_unsupported_block(const std::string& type, const std::string& at) {
    if (type == "image" || type == "document")
        return bad_request(type + " blocks are not supported by this server (text only)", at + ".type");
    return bad_request("content blocks of type \"" + type + "\" are not supported here", at + ".type");
}

// `system`: a string or an array of text blocks.
std::optional<ApiError> anthropic_read_system(const json& body, GenerationRequest& request) {
    if (!anthropic_present(body, "system")) return std::nullopt;
    const json& system = body["system"];
    ChatMessage message{"system", "", ""};
    if (system.is_string()) {
        message.content = system.get<std::string>();
    } else if (system.is_array()) {
        for (size_t i = 0; i < system.size(); ++i) {
            const std::string at = "system[" + std::to_string(i) + "]";
            std::string type;
            if (auto e = anthropic_block_type(system[i], at, type)) return e;
            if (type != "text") return bad_request("system blocks must be text blocks, got \"" + type + "\"", at + ".type");
            if (auto e = anthropic_block_text(system[i], at, message.content)) return e;
        }
    } else {
        return anthropic_wrong("system", "a string or an array of text blocks", system);
    }
    if (!message.content.empty()) request.messages.push_back(std::move(message));
    return std::nullopt;
}

// A tool_result's content: a string or text blocks (an image inside is refused).
std::optional<ApiError> anthropic_tool_result_text(const json& block, const std::string& at, std::string& out) {
    const auto content = block.find("content");
    if (content == block.end() || content->is_null()) return std::nullopt;
    if (content->is_string()) {
        out = content->get<std::string>();
        return std::nullopt;
    }
    if (!content->is_array()) return anthropic_wrong(at + ".content", "a string or an array of text blocks", *content);
    for (size_t i = 0; i < content->size(); ++i) {
        const std::string inner = at + ".content[" + std::to_string(i) + "]";
        std::string type;
        if (auto e = anthropic_block_type((*content)[i], inner, type)) return e;
        if (type != "text") return anthropic_unsupported_block(type, inner);
        if (!out.empty()) out += "\n";
        if (auto e = anthropic_block_text((*content)[i], inner, out)) return e;
    }
    return std::nullopt;
}

// The tool_use ids seen so far and the names they called: a tool_result names the call it answers.
using AnthropicCallNames = std::map<std::string, std::string>;

std::optional<ApiError> anthropic_read_assistant(const json& content, const std::string& at, AnthropicCallNames& call_names,
                                                 ChatMessage& message) {
    std::vector<ToolCall> calls;
    for (size_t i = 0; i < content.size(); ++i) {
        const std::string block_at = at + ".content[" + std::to_string(i) + "]";
        const json& block = content[i];
        std::string type;
        if (auto e = anthropic_block_type(block, block_at, type)) return e;
        if (type == "text") {
            if (auto e = anthropic_block_text(block, block_at, message.content)) return e;
        } else if (type == "tool_use") {
            ToolCall call;
            const auto id = block.find("id");
            if (id == block.end() || !id->is_string() || id->get<std::string>().empty())
                return anthropic_wrong(block_at + ".id", "the call's id (a string)", block.value("id", json()));
            const auto name = block.find("name");
            if (name == block.end() || !name->is_string() || !anthropic_is_tool_name(name->get<std::string>()))
                return anthropic_wrong(block_at + ".name", "1 to 64 letters, digits, '_' or '-'", block.value("name", json()));
            const auto input = block.find("input");
            if (input == block.end() || !input->is_object())
                return anthropic_wrong(block_at + ".input", "an object", block.value("input", json()));
            call.id = id->get<std::string>();
            call.name = name->get<std::string>();
            call.arguments_json = anthropic_compact(*input);
            call_names[call.id] = call.name;
            calls.push_back(std::move(call));
        } else if (type == "thinking" || type == "redacted_thinking") {
            continue;  // a client hands back the thinking of a model that had it; this one's template has no place for it
        } else {
            return anthropic_unsupported_block(type, block_at);
        }
    }
    if (!calls.empty()) message.extra_json = tool_calls_message_extra_json(calls);
    return std::nullopt;
}

// A user turn's blocks: text gathers into user messages, each tool_result is a role "tool" message,
// in the order written.
std::optional<ApiError> anthropic_read_user(const json& content, const std::string& at, const AnthropicCallNames& call_names,
                                            std::vector<ChatMessage>& out) {
    ChatMessage pending{"user", "", ""};
    bool has_pending = false;
    for (size_t i = 0; i < content.size(); ++i) {
        const std::string block_at = at + ".content[" + std::to_string(i) + "]";
        const json& block = content[i];
        std::string type;
        if (auto e = anthropic_block_type(block, block_at, type)) return e;
        if (type == "text") {
            if (auto e = anthropic_block_text(block, block_at, pending.content)) return e;
            has_pending = true;
        } else if (type == "tool_result") {
            const auto id = block.find("tool_use_id");
            if (id == block.end() || !id->is_string())
                return anthropic_wrong(block_at + ".tool_use_id", "the id of the tool_use it answers",
                                       block.value("tool_use_id", json()));
            if (const auto is_error = block.find("is_error"); is_error != block.end() && !is_error->is_null() && !is_error->is_boolean())
                return anthropic_wrong(block_at + ".is_error", "true or false", *is_error);
            if (has_pending) {
                out.push_back(std::move(pending));
                pending = {"user", "", ""};
                has_pending = false;
            }
            ChatMessage result{"tool", "", ""};
            if (auto e = anthropic_tool_result_text(block, block_at, result.content)) return e;
            if (block.value("is_error", false)) result.content = "Error: " + result.content;
            json extra = {{"tool_call_id", *id}};
            if (const auto name = call_names.find(id->get<std::string>()); name != call_names.end()) extra["name"] = name->second;
            result.extra_json = anthropic_compact(extra);
            out.push_back(std::move(result));
        } else {
            return anthropic_unsupported_block(type, block_at);
        }
    }
    if (has_pending) out.push_back(std::move(pending));
    return std::nullopt;
}

std::optional<ApiError> anthropic_read_messages(const json& body, const RequestLimits& limits, GenerationRequest& request) {
    if (!anthropic_present(body, "messages")) return bad_request("'messages' is required", "messages");
    const json& messages = body["messages"];
    if (!messages.is_array()) return anthropic_wrong("messages", "an array of messages", messages);
    if (messages.empty()) return bad_request("'messages' must hold at least one message", "messages");
    if (messages.size() > limits.max_messages)
        return bad_request("'messages' holds " + std::to_string(messages.size()) + " messages; at most " +
                               std::to_string(limits.max_messages) + " are accepted", "messages");
    AnthropicCallNames call_names;
    for (size_t i = 0; i < messages.size(); ++i) {
        const json& m = messages[i];
        const std::string at = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) return anthropic_wrong(at, "an object", m);
        const auto role = m.find("role");
        if (role == m.end() || !role->is_string() || (*role != "user" && *role != "assistant"))
            return anthropic_wrong(at + ".role", "\"user\" or \"assistant\" (the system prompt is the top-level 'system')",
                                   m.value("role", json()));
        const bool assistant = *role == "assistant";
        if (assistant && i + 1 == messages.size())
            return bad_request("the last message is the assistant's: continuing a prefilled reply is not supported by "
                               "this server; end with a user message", at + ".role");
        const auto content = m.find("content");
        if (content == m.end() || content->is_null()) return bad_request("'" + at + ".content' is required", at + ".content");
        if (content->is_string()) {
            request.messages.push_back({role->get<std::string>(), content->get<std::string>(), ""});
            continue;
        }
        if (!content->is_array()) return anthropic_wrong(at + ".content", "a string or an array of content blocks", *content);
        if (assistant) {
            ChatMessage message{"assistant", "", ""};
            if (auto e = anthropic_read_assistant(*content, at, call_names, message)) return e;
            request.messages.push_back(std::move(message));
        } else if (auto e = anthropic_read_user(*content, at, call_names, request.messages)) {
            return e;
        }
    }
    return std::nullopt;
}

std::optional<ApiError> anthropic_read_tools(const json& body, const RequestLimits& limits, GenerationRequest& request) {
    if (anthropic_present(body, "tools")) {
        const json& tools = body["tools"];
        if (!tools.is_array()) return anthropic_wrong("tools", "an array of tools", tools);
        if (tools.size() > limits.max_tools)
            return bad_request("'tools' holds " + std::to_string(tools.size()) + " tools; at most " +
                                   std::to_string(limits.max_tools) + " are accepted", "tools");
        for (size_t i = 0; i < tools.size(); ++i) {
            const std::string at = "tools[" + std::to_string(i) + "]";
            const json& tool = tools[i];
            if (!tool.is_object()) return anthropic_wrong(at, "an object {name, description, input_schema}", tool);
            if (const auto type = tool.find("type"); type != tool.end() && !type->is_null() && *type != "custom")
                return bad_request("server tools (" + anthropic_shown(*type) +
                                       ") are not supported by this server; define the tool with name, description and "
                                       "input_schema",
                                   at + ".type");
            ToolDefinition definition;
            const auto name = tool.find("name");
            if (name == tool.end() || !name->is_string() || !anthropic_is_tool_name(name->get<std::string>()))
                return anthropic_wrong(at + ".name", "1 to 64 letters, digits, '_' or '-'", tool.value("name", json()));
            definition.name = name->get<std::string>();
            for (const ToolDefinition& earlier : request.tools)
                if (earlier.name == definition.name)
                    return bad_request("two tools are named '" + definition.name + "'", at + ".name");
            if (const auto description = tool.find("description"); description != tool.end() && !description->is_null()) {
                if (!description->is_string()) return anthropic_wrong(at + ".description", "a string", *description);
                definition.description = description->get<std::string>();
            }
            const auto schema = tool.find("input_schema");
            if (schema == tool.end() || !schema->is_object())
                return anthropic_wrong(at + ".input_schema", "a JSON Schema object", tool.value("input_schema", json()));
            if (const auto type = schema->find("type"); type == schema->end() || *type != "object")
                return anthropic_wrong(at + ".input_schema.type", "\"object\"", schema->value("type", json()));
            definition.parameters_json = anthropic_compact(*schema);
            request.tools.push_back(std::move(definition));
        }
    }
    if (!anthropic_present(body, "tool_choice")) return std::nullopt;
    const json& choice = body["tool_choice"];
    if (!choice.is_object() || !choice.contains("type") || !choice["type"].is_string())
        return anthropic_wrong("tool_choice", "an object {\"type\": \"auto\" | \"any\" | \"tool\" | \"none\"}", choice);
    const std::string type = choice["type"].get<std::string>();
    if (type == "auto") request.tool_choice.kind = ToolChoice::Kind::Auto;
    else if (type == "any") request.tool_choice.kind = ToolChoice::Kind::Required;
    else if (type == "none") request.tool_choice.kind = ToolChoice::Kind::None;
    else if (type == "tool") request.tool_choice.kind = ToolChoice::Kind::Named;
    else return anthropic_wrong("tool_choice.type", "\"auto\", \"any\", \"tool\" or \"none\"", choice["type"]);
    if (const auto parallel = choice.find("disable_parallel_tool_use"); parallel != choice.end() && !parallel->is_null()) {
        if (!parallel->is_boolean()) return anthropic_wrong("tool_choice.disable_parallel_tool_use", "true or false", *parallel);
        request.parallel_tool_calls = !parallel->get<bool>();
    }
    if (request.tool_choice.kind == ToolChoice::Kind::Named) {
        const auto name = choice.find("name");
        if (name == choice.end() || !name->is_string())
            return anthropic_wrong("tool_choice.name", "the name of one of 'tools'", choice.value("name", json()));
        request.tool_choice.name = name->get<std::string>();
        const bool known = std::any_of(request.tools.begin(), request.tools.end(),
                                       [&](const ToolDefinition& tool) { return tool.name == request.tool_choice.name; });
        if (!known)
            return bad_request("'tool_choice' names the tool '" + request.tool_choice.name + "', which is not among 'tools'",
                               "tool_choice.name");
    }
    if ((request.tool_choice.kind == ToolChoice::Kind::Required || request.tool_choice.kind == ToolChoice::Kind::Named) &&
        request.tools.empty())
        return bad_request("a tool_choice of type \"" + type + "\" needs 'tools'", "tool_choice");
    return std::nullopt;
}

std::optional<ApiError> anthropic_read_settings(const json& body, const RequestLimits& limits, GenerationRequest& request) {
    if (!anthropic_present(body, "model")) return bad_request("'model' is required", "model");
    if (!body["model"].is_string()) return anthropic_wrong("model", "a string", body["model"]);
    request.model = body["model"].get<std::string>();

    std::optional<int64_t> max_tokens;
    if (auto e = anthropic_read_integer(body, "max_tokens", 1, std::numeric_limits<int32_t>::max(), max_tokens)) return e;
    if (!max_tokens) return bad_request("'max_tokens' is required", "max_tokens");
    request.max_tokens = static_cast<int32_t>(*max_tokens);

    if (auto e = anthropic_read_number(body, "temperature", 0, 1, request.sampling.temperature)) return e;
    if (auto e = anthropic_read_number(body, "top_p", 0, 1, request.sampling.top_p)) return e;
    std::optional<int64_t> top_k;
    if (auto e = anthropic_read_integer(body, "top_k", 0, 1 << 24, top_k)) return e;
    if (top_k) request.sampling.top_k = static_cast<int32_t>(*top_k);

    if (anthropic_present(body, "stop_sequences")) {
        const json& stops = body["stop_sequences"];
        if (!stops.is_array()) return anthropic_wrong("stop_sequences", "an array of strings", stops);
        if (stops.size() > limits.max_stop_sequences)
            return bad_request("'stop_sequences' holds " + std::to_string(stops.size()) + " strings; at most " +
                                   std::to_string(limits.max_stop_sequences) + " are accepted", "stop_sequences");
        for (const json& stop : stops) {
            if (!stop.is_string()) return anthropic_wrong("stop_sequences", "an array of strings", stop);
            std::string text = stop.get<std::string>();
            if (text.size() > limits.max_stop_bytes)
                return bad_request("a stop sequence is " + std::to_string(text.size()) + " bytes; at most " +
                                       std::to_string(limits.max_stop_bytes) + " are accepted", "stop_sequences");
            if (!text.empty()) request.stop.push_back(std::move(text));
        }
    }
    if (anthropic_present(body, "stream")) {
        if (!body["stream"].is_boolean()) return anthropic_wrong("stream", "true or false", body["stream"]);
        request.stream = body["stream"].get<bool>();
    }
    if (anthropic_present(body, "metadata") && !body["metadata"].is_object())
        return anthropic_wrong("metadata", "an object", body["metadata"]);
    if (anthropic_present(body, "thinking")) {
        const json& thinking = body["thinking"];
        if (!thinking.is_object() || thinking.value("type", json()) != "disabled")
            return bad_request("extended thinking is not supported by this server", "thinking");
    }
    for (const char* unsupported : {"mcp_servers", "container"})
        if (anthropic_present(body, unsupported) && !(body[unsupported].is_array() && body[unsupported].empty()))
            return bad_request(std::string("'") + unsupported + "' is not supported by this server", unsupported);
    return std::nullopt;
}

} // namespace

ParsedRequest parse_anthropic_messages_request(std::string_view body, const RequestLimits& limits) {
    ParsedRequest parsed;
    // nlohmann builds, copies and destroys values recursively: refuse deep bodies unparsed.
    if (cflow::json_nesting_depth(body) > limits.max_nesting_depth) {
        parsed.error = bad_request("the JSON body nests deeper than " + std::to_string(limits.max_nesting_depth) + " levels");
        return parsed;
    }
    json document;
    try {
        document = json::parse(body.begin(), body.end());
    } catch (const json::exception& e) {
        parsed.error = bad_request(std::string("the body is not valid JSON: ") + e.what());
        return parsed;
    }
    if (!document.is_object()) {
        parsed.error = bad_request("the body must be a JSON object, got " + anthropic_shown(document));
        return parsed;
    }
    GenerationRequest request;
    request.kind = GenerationRequest::Kind::Chat;
    std::optional<ApiError> error = anthropic_read_settings(document, limits, request);
    if (!error) error = anthropic_read_tools(document, limits, request);
    if (!error) error = anthropic_read_system(document, request);
    if (!error) error = anthropic_read_messages(document, limits, request);
    if (error) {
        parsed.error = std::move(*error);
        return parsed;
    }
    parsed.request = std::move(request);
    return parsed;
}

} // namespace cflow::server
