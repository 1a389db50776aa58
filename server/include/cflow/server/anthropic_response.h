#pragma once
// The response bodies and stream events of the Anthropic Messages API (POST /v1/messages), and its
// error shape {"type": "error", "error": {"type", "message"}}. Each body is one line of JSON; each
// stream event is "event: NAME\ndata: JSON\n\n", in the order Anthropic sends them:
//   message_start, then per content block content_block_start (the first followed by ping),
//   content_block_delta (text_delta / input_json_delta) and content_block_stop, then message_delta
//   (stop_reason, stop_sequence, usage) and message_stop. A failure mid-stream is an `error` event.
// Invalid UTF-8 never reaches a client (replaced, as openai_response.h does).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "cflow/engine/chat/tool_calls.h"
#include "cflow/engine/generation/generate.h"
#include "cflow/server/api_error.h"
#include "cflow/server/openai_response.h"

namespace cflow::server {

// Whether a request target is POST /v1/messages or under it (a query included): the paths whose
// errors take Anthropic's shape.
bool is_anthropic_messages_path(std::string_view target);

// "msg_" + 24 random hex digits.
std::string new_message_id();
// The id a tool_use block carries: a call's "call_..." id becomes "toolu_..." (Anthropic's
// prefix); an id the model wrote itself is kept.
std::string anthropic_tool_use_id(std::string_view call_id);

// "max_tokens" for a reply cut by max_tokens or the context, "stop_sequence" for one a stop
// sequence ended, "tool_use" when it made calls, else "end_turn".
std::string_view anthropic_stop_reason(StopReason reason, bool made_calls);

// The error's Anthropic type, from its status: invalid_request_error (400 and other 4xx),
// authentication_error (401), permission_error (403), not_found_error (404), request_too_large
// (413), rate_limit_error (429), overloaded_error (503), api_error (other 5xx).
std::string_view anthropic_error_type(const ApiError& error);
std::string anthropic_error_body(const ApiError& error);

// A whole reply: {id, type: "message", role: "assistant", model, content: [text block when
// `text` is not empty, then a tool_use block per call], stop_reason, stop_sequence, usage}.
struct AnthropicMessage {
    std::string_view id;
    std::string_view model;
    std::string_view text;
    std::span<const ToolCall> calls;
    std::string_view stop_reason;
    std::optional<std::string_view> stop_sequence;  // nullopt: null
    Usage usage;                                    // prompt tokens = input_tokens, completion = output_tokens
};
std::string anthropic_message_body(const AnthropicMessage& message);

// Stream events.
std::string anthropic_message_start_event(std::string_view id, std::string_view model, uint32_t input_tokens);
std::string anthropic_text_block_start_event(uint32_t index);
std::string anthropic_tool_use_block_start_event(uint32_t index, const ToolCall& call);
std::string anthropic_ping_event();
std::string anthropic_text_delta_event(uint32_t index, std::string_view text);
std::string anthropic_input_json_delta_event(uint32_t index, std::string_view partial_json);
std::string anthropic_block_stop_event(uint32_t index);
std::string anthropic_message_delta_event(std::string_view stop_reason, std::optional<std::string_view> stop_sequence,
                                          const Usage& usage);
std::string anthropic_message_stop_event();
std::string anthropic_error_event(const ApiError& error);

} // namespace cflow::server
