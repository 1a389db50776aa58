#pragma once
// The body of POST /v1/chat/completions as OpenAI-compatible servers read it: the messages,
// sampling, max_tokens, stop, and stream: true with stream_options.include_usage (the usage chunk
// at the end). llama.cpp and cflow serve also read top_k, min_p and repeat_penalty; other servers
// ignore fields they do not know.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cflow::remote {

struct RemoteMessage {
    std::string role;  // system, user, assistant
    std::string content;
};

struct RemoteSampling {
    std::optional<float> temperature;
    std::optional<float> top_p;
    std::optional<int32_t> top_k;
    std::optional<float> min_p;
    std::optional<float> repeat_penalty;
    std::optional<uint64_t> seed;
};

// response_format: the reply must be one JSON object, or JSON valid under a schema (OpenAI's
// spelling, which llama.cpp, vLLM and cflow serve read).
struct RemoteResponseFormat {
    enum class Kind { JsonObject, JsonSchema } kind = Kind::JsonObject;
    std::string schema_json;  // JsonSchema: the schema's JSON text (sent as an object)
    std::string name = "reply";  // JsonSchema: json_schema.name, which OpenAI requires
};

struct RemoteChatRequest {
    std::string model;  // empty: left out (a server with one model takes it)
    std::vector<RemoteMessage> messages;
    RemoteSampling sampling;
    std::optional<int32_t> max_tokens;
    std::vector<std::string> stop;
    std::optional<RemoteResponseFormat> response_format;
    bool stream = true;
    // OpenAI's `logprobs: true` and `top_logprobs` (0..20 alternatives per token): the reply's
    // tokens with their log probabilities, where the server reports them (StreamChunk::logprobs).
    bool logprobs = false;
    std::optional<int32_t> top_logprobs;
};

// The JSON text of the request body.
std::string chat_request_json(const RemoteChatRequest& request);

} // namespace cflow::remote
