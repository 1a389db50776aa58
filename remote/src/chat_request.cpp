#include "cflow/remote/chat_request.h"

#include <nlohmann/json.hpp>

namespace cflow::remote {

std::string chat_request_json(const RemoteChatRequest& request) {
    nlohmann::json body = nlohmann::json::object();
    if (!request.model.empty()) body["model"] = request.model;
    nlohmann::json messages = nlohmann::json::array();
    for (const RemoteMessage& m : request.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
    body["messages"] = std::move(messages);
    const RemoteSampling& s = request.sampling;
    if (s.temperature) body["temperature"] = *s.temperature;
    if (s.top_p) body["top_p"] = *s.top_p;
    if (s.top_k) body["top_k"] = *s.top_k;
    if (s.min_p) body["min_p"] = *s.min_p;
    if (s.repeat_penalty) body["repeat_penalty"] = *s.repeat_penalty;
    if (s.seed) body["seed"] = *s.seed;
    if (request.max_tokens) body["max_tokens"] = *request.max_tokens;
    if (!request.stop.empty()) body["stop"] = request.stop;
    if (const auto& format = request.response_format) {
        if (format->kind == RemoteResponseFormat::Kind::JsonObject) {
            body["response_format"] = {{"type", "json_object"}};
        } else {
            // Not parsed as JSON (the caller's schema text, checked where the user gave it): sent as
            // a string, which a server refuses with its own message rather than this code throwing.
            nlohmann::json schema = nlohmann::json::parse(format->schema_json, nullptr, false);
            if (schema.is_discarded()) schema = format->schema_json;
            body["response_format"] = {{"type", "json_schema"},
                                       {"json_schema", {{"name", format->name}, {"schema", std::move(schema)}}}};
        }
    }
    if (request.logprobs) body["logprobs"] = true;
    if (request.logprobs && request.top_logprobs) body["top_logprobs"] = *request.top_logprobs;
    body["stream"] = request.stream;
    // The usage chunk at the end of a stream (OpenAI's, llama.cpp's and vLLM's spelling).
    if (request.stream) body["stream_options"] = {{"include_usage", true}};
    // Invalid UTF-8 in a message is replaced, not thrown: nothing throws across the API.
    return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace cflow::remote
