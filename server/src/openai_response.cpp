#include "cflow/server/openai_response.h"

#include <nlohmann/json.hpp>
#include <random>

namespace cflow::server {
namespace {

using nlohmann::json;

std::string line(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

json usage_json(const Usage& usage) {
    return {{"prompt_tokens", usage.prompt_tokens},
            {"completion_tokens", usage.completion_tokens},
            {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
}

json head(const ResponseHeader& header, const char* object) {
    return {{"id", header.id}, {"object", object}, {"created", header.created}, {"model", header.model},
            {"system_fingerprint", "cflow"}};
}

json or_null(std::optional<std::string_view> value) {
    return value ? json(std::string(*value)) : json(nullptr);
}

json bytes_json(const std::string& bytes) {
    json out = json::array();
    for (const char c : bytes) out.push_back(int(static_cast<unsigned char>(c)));
    return out;
}

json candidate_json(const LogprobCandidate& c) {
    return {{"token", c.token}, {"logprob", c.logprob}, {"bytes", bytes_json(c.bytes)}};
}

json chat_logprobs_json(const LogprobList* logprobs) {
    if (!logprobs) return nullptr;
    json content = json::array();
    for (const TokenLogprob& entry : *logprobs) {
        json item = candidate_json(entry.chosen);
        json top = json::array();
        for (const LogprobCandidate& c : entry.top) top.push_back(candidate_json(c));
        item["top_logprobs"] = std::move(top);
        content.push_back(std::move(item));
    }
    return {{"content", std::move(content)}, {"refusal", nullptr}};
}

// The legacy shape: parallel arrays; top_logprobs maps token text to logprob (two tokens with
// the same text keep the more likely one, as a JSON object can hold only one).
json text_logprobs_json(const LogprobList* logprobs) {
    if (!logprobs) return nullptr;
    json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
    for (const TokenLogprob& entry : *logprobs) {
        tokens.push_back(entry.chosen.token);
        token_logprobs.push_back(entry.chosen.logprob);
        json alternatives = json::object();
        for (const LogprobCandidate& c : entry.top)
            if (!alternatives.contains(c.token)) alternatives[c.token] = c.logprob;
        top.push_back(std::move(alternatives));
        offsets.push_back(entry.text_offset);
    }
    return {{"tokens", std::move(tokens)}, {"token_logprobs", std::move(token_logprobs)},
            {"top_logprobs", std::move(top)}, {"text_offset", std::move(offsets)}};
}

} // namespace

std::string new_response_id(std::string_view prefix) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    static constexpr char kHex[] = "0123456789abcdef";
    std::string id(prefix);
    for (int i = 0; i < 24; ++i) id += kHex[rng() & 15];
    return id;
}

std::string chat_completion_body(const ResponseHeader& header, std::string_view content, std::string_view finish_reason,
                                 const Usage& usage, std::span<const ToolCall> tool_calls, const LogprobList* logprobs) {
    json message = {{"role", "assistant"}};
    // OpenAI's shape: content null in a turn that only calls tools (clients test it for null).
    message["content"] = tool_calls.empty() || !content.empty() ? json(std::string(content)) : json(nullptr);
    if (!tool_calls.empty()) {
        json calls = json::array();
        for (const ToolCall& call : tool_calls)
            calls.push_back({{"id", call.id},
                             {"type", "function"},
                             {"function", {{"name", call.name}, {"arguments", call.arguments_json}}}});
        message["tool_calls"] = std::move(calls);
    }
    json body = head(header, "chat.completion");
    body["choices"] = json::array({{{"index", 0},
                                    {"message", std::move(message)},
                                    {"logprobs", chat_logprobs_json(logprobs)},
                                    {"finish_reason", std::string(finish_reason)}}});
    body["usage"] = usage_json(usage);
    return line(body);
}

std::string chat_chunk(const ResponseHeader& header, std::optional<std::string_view> content, bool with_role,
                       std::optional<std::string_view> finish_reason, const LogprobList* logprobs) {
    json delta = json::object();
    if (with_role) delta["role"] = "assistant";
    if (content) delta["content"] = std::string(*content);
    json body = head(header, "chat.completion.chunk");
    body["choices"] = json::array({{{"index", 0}, {"delta", delta}, {"logprobs", chat_logprobs_json(logprobs)}, {"finish_reason", or_null(finish_reason)}}});
    return line(body);
}

std::string chat_tool_call_head_chunk(const ResponseHeader& header, uint32_t index, const ToolCall& call) {
    const json tool_call = {{"index", index},
                            {"id", call.id},
                            {"type", "function"},
                            {"function", {{"name", call.name}, {"arguments", ""}}}};
    json body = head(header, "chat.completion.chunk");
    body["choices"] = json::array({{{"index", 0}, {"delta", {{"tool_calls", json::array({tool_call})}}},
                                    {"logprobs", nullptr}, {"finish_reason", nullptr}}});
    return line(body);
}

std::string chat_tool_call_arguments_chunk(const ResponseHeader& header, uint32_t index, std::string_view arguments) {
    const json tool_call = {{"index", index}, {"function", {{"arguments", std::string(arguments)}}}};
    json body = head(header, "chat.completion.chunk");
    body["choices"] = json::array({{{"index", 0}, {"delta", {{"tool_calls", json::array({tool_call})}}},
                                    {"logprobs", nullptr}, {"finish_reason", nullptr}}});
    return line(body);
}

std::string usage_chunk(const ResponseHeader& header, std::string_view object, const Usage& usage) {
    json body = head(header, std::string(object).c_str());
    body["choices"] = json::array();
    body["usage"] = usage_json(usage);
    return line(body);
}

std::string text_completion_body(const ResponseHeader& header, std::string_view text, std::string_view finish_reason,
                                 const Usage& usage, const LogprobList* logprobs) {
    json body = head(header, "text_completion");
    body["choices"] = json::array({{{"index", 0}, {"text", std::string(text)}, {"logprobs", text_logprobs_json(logprobs)},
                                    {"finish_reason", std::string(finish_reason)}}});
    body["usage"] = usage_json(usage);
    return line(body);
}

std::string text_chunk(const ResponseHeader& header, std::string_view text, std::optional<std::string_view> finish_reason,
                       const LogprobList* logprobs) {
    json body = head(header, "text_completion");
    body["choices"] = json::array({{{"index", 0}, {"text", std::string(text)}, {"logprobs", text_logprobs_json(logprobs)},
                                    {"finish_reason", or_null(finish_reason)}}});
    return line(body);
}

std::string model_body(std::string_view model_id, int64_t created) {
    return line(json{{"id", std::string(model_id)}, {"object", "model"}, {"created", created}, {"owned_by", "cflow"}});
}

std::string models_body(std::string_view model_id, int64_t created) {
    return line(json{{"object", "list"},
                     {"data", json::array({json::parse(model_body(model_id, created))})}});
}

} // namespace cflow::server
