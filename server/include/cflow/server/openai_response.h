#pragma once
// The response bodies and stream chunks of the OpenAI API, as one line of JSON each:
// chat.completion / chat.completion.chunk, text_completion (whole and streamed), the model list.
// Invalid UTF-8 never reaches a client: such bytes are replaced (the chat core streams valid
// UTF-8; the replacement only guards against a model whose vocabulary holds broken bytes).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cflow/engine/chat/tool_calls.h"
#include "cflow/server/token_logprobs.h"

namespace cflow::server {

struct Usage {
    uint32_t prompt_tokens = 0;
    uint32_t completion_tokens = 0;
};

// Identifies one response (and all its chunks): the id, the creation time and the model.
struct ResponseHeader {
    std::string id;        // "chatcmpl-..." / "cmpl-..."
    int64_t created = 0;   // Unix seconds
    std::string model;
};

// A choice's `logprobs` everywhere below: nullptr writes null (the request asked for none); else
// chat's {"content": [{token, logprob, bytes, top_logprobs: [...]}]} or the legacy completions
// shape {tokens, token_logprobs, top_logprobs: [{token: logprob}], text_offset}, one entry per
// token (a streamed chunk: the tokens that chunk adds).
using LogprobList = std::vector<TokenLogprob>;

// "chatcmpl-" or "cmpl-" + 24 random hex digits.
std::string new_response_id(std::string_view prefix);

// `tool_calls`: the calls the reply made, as message.tool_calls (arguments as a JSON string, as
// OpenAI sends them); a reply that is only calls has content null (finish_reason is the caller's:
// "tool_calls" when there are calls).
std::string chat_completion_body(const ResponseHeader& header, std::string_view content, std::string_view finish_reason,
                                 const Usage& usage, std::span<const ToolCall> tool_calls = {},
                                 const LogprobList* logprobs = nullptr);
// A streamed delta: the first chunk carries the role, the others content; the last one an empty
// delta and the finish reason. `content` nullopt: no content key in the delta.
std::string chat_chunk(const ResponseHeader& header, std::optional<std::string_view> content, bool with_role,
                       std::optional<std::string_view> finish_reason, const LogprobList* logprobs = nullptr);
// A streamed tool call as OpenAI streams one, in delta.tool_calls[0]: the head names it (index,
// id, type, function.name, empty arguments); arguments chunks (one or more) carry pieces of the
// arguments text that the client appends per index.
std::string chat_tool_call_head_chunk(const ResponseHeader& header, uint32_t index, const ToolCall& call);
std::string chat_tool_call_arguments_chunk(const ResponseHeader& header, uint32_t index, std::string_view arguments);
// stream_options.include_usage: the chunk after the last one, with no choices and the usage.
std::string usage_chunk(const ResponseHeader& header, std::string_view object, const Usage& usage);

std::string text_completion_body(const ResponseHeader& header, std::string_view text, std::string_view finish_reason,
                                 const Usage& usage, const LogprobList* logprobs = nullptr);
std::string text_chunk(const ResponseHeader& header, std::string_view text, std::optional<std::string_view> finish_reason,
                       const LogprobList* logprobs = nullptr);

// GET /v1/models: one model.
std::string models_body(std::string_view model_id, int64_t created);
std::string model_body(std::string_view model_id, int64_t created);

} // namespace cflow::server
