#pragma once
// The one reader of tool calls in reply text, shared by the whole-reply parser and the streaming
// one so the two cannot disagree: it decides, from the front of the text not yet decided, what is
// content and what is a call, and leaves undecided what more text could still change.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cflow/engine/chat/tool_calls.h"

namespace cflow {

// Compact JSON text; bytes that are not UTF-8 become U+FFFD instead of throwing.
std::string tool_json_text(const nlohmann::json& value);

// Moves what is decided from the front of `pending` (the reply's undecided tail, in order) into
// `out`: content up to the first possible call marker (less the whitespace right before it, which
// a call would drop), whole calls, and markers that turned out not to start a call (as content).
// at_end: the reply is over, so everything is decided and `pending` ends empty.
void scan_tool_calls(ToolCallFormat format, ToolCallScanState& state, std::string& pending, bool at_end,
                     ParsedToolReply& out);

} // namespace cflow
