#include "cflow/server/anthropic_response.h"

#include <random>

#include <nlohmann/json.hpp>

namespace cflow::server {
namespace {

using nlohmann::json;

std::string anthropic_line(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string anthropic_event(std::string_view name, const json& data) {
    std::string event = "event: ";
    event += name;
    event += "\ndata: ";
    event += anthropic_line(data);  // one line: dump() escapes every line break
    event += "\n\n";
    return event;
}

// A call's arguments as the input object; text that is not one (the parser gives objects) is {}.
json anthropic_input_of(const ToolCall& call) {
    json input = json::parse(call.arguments_json, nullptr, false);
    return input.is_object() ? input : json::object();
}

json anthropic_error_json(const ApiError& error) {
    return {{"type", "error"}, {"error", {{"type", anthropic_error_type(error)}, {"message", error.message}}}};
}

json anthropic_or_null(std::optional<std::string_view> value) { return value ? json(std::string(*value)) : json(nullptr); }

} // namespace

bool is_anthropic_messages_path(std::string_view target) {
    constexpr std::string_view kMessages = "/v1/messages";
    if (target.substr(0, kMessages.size()) != kMessages) return false;
    return target.size() == kMessages.size() || target[kMessages.size()] == '/' || target[kMessages.size()] == '?';
}

std::string new_message_id() {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    static constexpr char kHex[] = "0123456789abcdef";
    std::string id = "msg_";
    for (int i = 0; i < 24; ++i) id += kHex[rng() & 15];
    return id;
}

std::string anthropic_tool_use_id(std::string_view call_id) {
    constexpr std::string_view kCallPrefix = "call_";
    if (call_id.substr(0, kCallPrefix.size()) == kCallPrefix) return "toolu_" + std::string(call_id.substr(kCallPrefix.size()));
    return std::string(call_id);
}

std::string_view anthropic_stop_reason(StopReason reason, bool made_calls) {
    if (made_calls) return "tool_use";
    switch (reason) {
    case StopReason::MaxTokens:
    case StopReason::ContextFull: return "max_tokens";
    case StopReason::StopSequence: return "stop_sequence";
    case StopReason::EndOfGeneration:
    case StopReason::StopToken:
    case StopReason::GrammarComplete:
    case StopReason::CallbackStopped: return "end_turn";
    }
    return "end_turn";
}

std::string_view anthropic_error_type(const ApiError& error) {
    switch (error.status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: break;
    }
    return error.status >= 500 ? "api_error" : "invalid_request_error";
}

std::string anthropic_error_body(const ApiError& error) {
    return anthropic_line(anthropic_error_json(error));
}

std::string anthropic_message_body(const AnthropicMessage& message) {
    json content = json::array();
    if (!message.text.empty()) content.push_back({{"type", "text"}, {"text", std::string(message.text)}});
    for (const ToolCall& call : message.calls)
        content.push_back({{"type", "tool_use"}, {"id", anthropic_tool_use_id(call.id)}, {"name", call.name},
                           {"input", anthropic_input_of(call)}});
    return anthropic_line({{"id", std::string(message.id)},
                           {"type", "message"},
                           {"role", "assistant"},
                           {"model", std::string(message.model)},
                           {"content", std::move(content)},
                           {"stop_reason", std::string(message.stop_reason)},
                           {"stop_sequence", anthropic_or_null(message.stop_sequence)},
                           {"usage", {{"input_tokens", message.usage.prompt_tokens},
                                      {"output_tokens", message.usage.completion_tokens}}}});
}

std::string anthropic_message_start_event(std::string_view id, std::string_view model, uint32_t input_tokens) {
    return anthropic_event("message_start", {{"type", "message_start"},
                                             {"message", {{"id", std::string(id)},
                                                          {"type", "message"},
                                                          {"role", "assistant"},
                                                          {"model", std::string(model)},
                                                          {"content", json::array()},
                                                          {"stop_reason", nullptr},
                                                          {"stop_sequence", nullptr},
                                                          {"usage", {{"input_tokens", input_tokens}, {"output_tokens", 0}}}}}});
}

std::string anthropic_text_block_start_event(uint32_t index) {
    return anthropic_event("content_block_start", {{"type", "content_block_start"},
                                                   {"index", index},
                                                   {"content_block", {{"type", "text"}, {"text", ""}}}});
}

std::string anthropic_tool_use_block_start_event(uint32_t index, const ToolCall& call) {
    return anthropic_event("content_block_start",
                           {{"type", "content_block_start"},
                            {"index", index},
                            {"content_block", {{"type", "tool_use"}, {"id", anthropic_tool_use_id(call.id)},
                                               {"name", call.name}, {"input", json::object()}}}});
}

std::string anthropic_ping_event() { return anthropic_event("ping", {{"type", "ping"}}); }

std::string anthropic_text_delta_event(uint32_t index, std::string_view text) {
    return anthropic_event("content_block_delta", {{"type", "content_block_delta"},
                                                   {"index", index},
                                                   {"delta", {{"type", "text_delta"}, {"text", std::string(text)}}}});
}

std::string anthropic_input_json_delta_event(uint32_t index, std::string_view partial_json) {
    return anthropic_event("content_block_delta",
                           {{"type", "content_block_delta"},
                            {"index", index},
                            {"delta", {{"type", "input_json_delta"}, {"partial_json", std::string(partial_json)}}}});
}

std::string anthropic_block_stop_event(uint32_t index) {
    return anthropic_event("content_block_stop", {{"type", "content_block_stop"}, {"index", index}});
}

std::string anthropic_message_delta_event(std::string_view stop_reason, std::optional<std::string_view> stop_sequence,
                                          const Usage& usage) {
    return anthropic_event("message_delta",
                           {{"type", "message_delta"},
                            {"delta", {{"stop_reason", std::string(stop_reason)}, {"stop_sequence", anthropic_or_null(stop_sequence)}}},
                            {"usage", {{"input_tokens", usage.prompt_tokens}, {"output_tokens", usage.completion_tokens}}}});
}

std::string anthropic_message_stop_event() { return anthropic_event("message_stop", {{"type", "message_stop"}}); }

std::string anthropic_error_event(const ApiError& error) {
    return anthropic_event("error", anthropic_error_json(error));
}

} // namespace cflow::server
