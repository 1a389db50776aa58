#pragma once
// Server-sent events as the OpenAI streaming API frames them: every chunk is one
// "data: <json>\n\n" event, and the stream ends with "data: [DONE]\n\n".
#include <string>
#include <string_view>
#include <vector>

namespace cflow::server {

inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// One event carrying `payload` (one line of JSON). A payload with line breaks is split into
// one "data:" line per line, as the SSE specification joins them back.
std::string sse_event(std::string_view payload);

// The data of each event in `stream`, in order ("[DONE]" included): the client side of the
// framing, for tests and for the desktop app's request log. Comment lines (":") and other
// fields are skipped; an unterminated last event is not returned.
std::vector<std::string> parse_sse_events(std::string_view stream);

} // namespace cflow::server
