#include "anthropic_reply_writer.h"

#include <utility>

#include "cflow/server/anthropic_response.h"

namespace cflow::server {

AnthropicWriter::AnthropicWriter(std::string model, bool stream, bool parallel_tool_calls)
    : id_(new_message_id()), model_(std::move(model)), stream_(stream), parallel_tool_calls_(parallel_tool_calls) {}

std::string AnthropicWriter::refusal(const ApiError& error) const { return anthropic_error_body(error); }

void AnthropicWriter::prepared(const ReplyContext& context) {
    context_ = context;
    if (stream_ && context.tool_format != ToolCallFormat::None) parser_.emplace(context.tool_format);
}

std::string AnthropicWriter::start() {
    return stream_ ? anthropic_message_start_event(id_, model_, context_.prompt_tokens) : std::string();
}

std::string AnthropicWriter::close_text_block() {
    if (!text_block_open_) return {};
    text_block_open_ = false;
    return anthropic_block_stop_event(next_block_++);
}

std::string AnthropicWriter::stream_text(std::string_view text) {
    if (text.empty()) return {};
    std::string bytes;
    if (!text_block_open_) {
        bytes += anthropic_text_block_start_event(next_block_);
        text_block_open_ = true;
        // Anthropic pings right after the first block starts.
        if (!std::exchange(pinged_, true)) bytes += anthropic_ping_event();
    }
    bytes += anthropic_text_delta_event(next_block_, text);
    return bytes;
}

std::string AnthropicWriter::stream_call(const ToolCall& call) {
    if (!keeps_call()) return {};
    std::string bytes = close_text_block();
    const uint32_t index = next_block_++;
    bytes += anthropic_tool_use_block_start_event(index, call);
    if (!std::exchange(pinged_, true)) bytes += anthropic_ping_event();
    bytes += anthropic_input_json_delta_event(index, call.arguments_json);
    bytes += anthropic_block_stop_event(index);
    calls_.push_back(call);
    return bytes;
}

std::string AnthropicWriter::piece(std::string_view text) {
    if (!stream_) return {};
    if (!parser_) return stream_text(text);
    ToolCallStreamParser::Events events = parser_->feed(text);
    std::string bytes = stream_text(events.content);
    for (const ToolCall& call : events.calls) bytes += stream_call(call);
    return bytes;
}

ReplyEnding AnthropicWriter::finish(const ChatTurnOutcome& outcome, const Usage& usage) {
    const std::optional<std::string_view> stop_sequence =
        outcome.stats.stop_reason == StopReason::StopSequence ? std::optional<std::string_view>(outcome.stop_sequence)
                                                              : std::nullopt;
    if (!stream_) {
        ParsedToolReply reply;
        if (context_.tool_format != ToolCallFormat::None) reply = parse_tool_calls(context_.tool_format, outcome.text);
        else reply.content = outcome.text;
        if (!parallel_tool_calls_ && reply.calls.size() > 1) reply.calls.resize(1);
        const std::string_view stop_reason = anthropic_stop_reason(outcome.stats.stop_reason, !reply.calls.empty());
        return {anthropic_message_body({id_, model_, reply.content, reply.calls, stop_reason, stop_sequence, usage}),
                std::string(stop_reason)};
    }
    std::string bytes;
    if (parser_) {
        ToolCallStreamParser::Events events = parser_->finish();
        bytes += stream_text(events.content);
        for (const ToolCall& call : events.calls) bytes += stream_call(call);
    }
    bytes += close_text_block();
    if (!std::exchange(pinged_, true)) bytes += anthropic_ping_event();
    const std::string_view stop_reason = anthropic_stop_reason(outcome.stats.stop_reason, !calls_.empty());
    bytes += anthropic_message_delta_event(stop_reason, stop_sequence, usage);
    bytes += anthropic_message_stop_event();
    return {std::move(bytes), std::string(stop_reason)};
}

std::string AnthropicWriter::failure(const ApiError& error) {
    return stream_ ? anthropic_error_event(error) : anthropic_error_body(error);
}

} // namespace cflow::server
