#pragma once
// The request body of POST /v1/messages (the Anthropic Messages API), parsed and validated into the
// GenerationRequest the chat core runs, or refused with an error that names the field (written in
// Anthropic's error shape by anthropic_response.h).
//
// The mapping: `system` (a string or text blocks) is the leading system message; user and
// assistant messages keep their order; content blocks become text, an assistant's `tool_use`
// blocks its tool_calls (ChatMessage::extra_json), and a user's `tool_result` blocks one role
// "tool" message each (tool_call_id, and the name of the call it answers), in the order written.
// `max_tokens` is required (as Anthropic requires); temperature 0-1, top_p, top_k, stop_sequences,
// stream, metadata; `tools` (name, description, input_schema) and `tool_choice` (auto, any, tool,
// none; disable_parallel_tool_use). What the server cannot do is refused rather than ignored:
// image and document blocks, server tools (web search, bash, ...), extended thinking, a final
// assistant message (a prefill to continue).
#include <string_view>

#include "cflow/server/openai_request.h"

namespace cflow::server {

// request.kind is Chat; request.parallel_tool_calls is !disable_parallel_tool_use.
ParsedRequest parse_anthropic_messages_request(std::string_view body, const RequestLimits& limits = {});

} // namespace cflow::server
