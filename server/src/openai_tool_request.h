#pragma once
// The tool-calling fields of a chat completion request, read into a GenerationRequest: `tools`,
// `tool_choice`, `parallel_tool_calls`, and the tool fields of messages (an assistant turn's
// `tool_calls`, a tool result's `tool_call_id`). Each reader leaves the request alone when its
// field is absent and returns the OpenAI error naming the field otherwise.
#include <cstddef>
#include <optional>

#include <nlohmann/json.hpp>

#include "cflow/server/openai_request.h"

namespace cflow::server {

// tools, tool_choice and parallel_tool_calls of the body.
std::optional<ApiError> read_tool_fields(const nlohmann::json& body, const RequestLimits& limits, GenerationRequest& request);

// messages[index]'s tool_calls (assistant) or tool_call_id and name (tool), into message.extra_json.
std::optional<ApiError> read_message_tool_fields(const nlohmann::json& message, size_t index, const RequestLimits& limits,
                                                 ChatMessage& out);

} // namespace cflow::server
