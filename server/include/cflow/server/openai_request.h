#pragma once
// The request bodies of POST /v1/chat/completions and POST /v1/completions, parsed and
// validated into one GenerationRequest, or refused with the OpenAI error that names the field.
//
// What a field absent from the request means: the chat core's sampling defaults (SamplingParams);
// a random seed; for chat, a reply until end of turn or a full context; for completions, 16
// tokens (the OpenAI default). Fields OpenAI defines that change nothing here are accepted
// (user, metadata, store, presence_penalty, frequency_penalty, ...); fields asking for what the
// server cannot do (n > 1, non-text content, echo, suffix, logit_bias) are refused rather than
// silently ignored. Tools (OpenAI's `tools`, `tool_choice`, `parallel_tool_calls`, assistant
// `tool_calls` and role `tool` messages) are read here and checked against the model's template
// when the request is served. Extensions, as llama.cpp's server names them: top_k,
// min_p, repeat_penalty.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cflow/engine/chat/chat_template.h"
#include "cflow/engine/chat/tool_calls.h"
#include "cflow/engine/generation/sampler.h"
#include "cflow/server/api_error.h"

namespace cflow::server {

struct RequestLimits {
    size_t max_nesting_depth = 64;     // JSON arrays/objects inside each other (checked before parsing)
    size_t max_messages = 10000;
    size_t max_stop_sequences = 16;    // OpenAI allows 4
    size_t max_stop_bytes = 512;       // per stop string
    size_t max_tools = 128;            // as OpenAI allows
};

struct GenerationRequest {
    enum class Kind : uint8_t { Chat, Completion };
    Kind kind = Kind::Chat;
    std::string model;                          // "" when absent
    std::vector<ChatMessage> messages;          // Chat: in order, roles system/user/assistant/tool
    std::string prompt;                         // Completion, given as text
    std::optional<std::vector<int32_t>> prompt_ids;  // Completion, given as token ids (checked against the vocabulary later)
    SamplingParams sampling;                    // seed: see `seed`
    std::optional<uint64_t> seed;               // absent: a fresh random seed per request
    std::optional<int32_t> max_tokens;          // >= 1
    std::vector<std::string> stop;              // non-empty, valid UTF-8
    bool stream = false;
    bool include_usage = false;                 // stream_options.include_usage: a last chunk with the usage
    bool json_object = false;                   // response_format {"type": "json_object"}: the reply is one JSON object
    std::string json_schema;                    // response_format json_schema: the schema's JSON text (keys sorted); empty: none
    std::vector<ToolDefinition> tools;          // Chat: `tools`, names unique and valid
    ToolChoice tool_choice;                     // Required / Named only with tools; Named names one of them
    bool parallel_tool_calls = true;            // false: only the reply's first call is returned
    // Log probabilities of the reply's tokens (token_logprobs.h): chat `logprobs: true` with
    // `top_logprobs` 0..20 alternatives per token; completions `logprobs: N`, N 0..5 alternatives.
    bool logprobs = false;
    uint32_t top_logprobs = 0;
};

struct ParsedRequest {
    std::optional<GenerationRequest> request;
    ApiError error;                             // when !request
    bool ok() const { return request.has_value(); }
};

ParsedRequest parse_chat_completion_request(std::string_view body, const RequestLimits& limits = {});
ParsedRequest parse_completion_request(std::string_view body, const RequestLimits& limits = {});

} // namespace cflow::server
