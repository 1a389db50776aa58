// Whole replies and streamed ones, read by the one scanner (tool_call_scan.h).
#include "chat/tool_call_scan.h"

namespace cflow {

ParsedToolReply parse_tool_calls(ToolCallFormat format, std::string_view reply_text) {
    ParsedToolReply parsed;
    ToolCallScanState state;
    std::string pending(reply_text);
    scan_tool_calls(format, state, pending, /*at_end=*/true, parsed);
    return parsed;
}

ToolCallStreamParser::ToolCallStreamParser(ToolCallFormat format) : format_(format) {}

ToolCallStreamParser::Events ToolCallStreamParser::feed(std::string_view piece) {
    held_.append(piece);
    ParsedToolReply decided;
    scan_tool_calls(format_, state_, held_, /*at_end=*/false, decided);
    return Events{std::move(decided.content), std::move(decided.calls)};
}

ToolCallStreamParser::Events ToolCallStreamParser::finish() {
    ParsedToolReply decided;
    scan_tool_calls(format_, state_, held_, /*at_end=*/true, decided);
    return Events{std::move(decided.content), std::move(decided.calls)};
}

} // namespace cflow
