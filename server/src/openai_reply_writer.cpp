#include "openai_reply_writer.h"

#include <utility>

#include "cflow/server/sse.h"

namespace cflow::server {
namespace {

// A stream that fails still ends the way clients wait for: the error as an event, then [DONE].
std::string openai_failure_bytes(const ApiError& error, bool stream) {
    const std::string body = error_body(error);
    if (!stream) return body;
    return sse_event(body) + std::string(kSseDone);
}

} // namespace

std::string_view openai_finish_reason(StopReason reason) {
    switch (reason) {
    case StopReason::MaxTokens:
    case StopReason::ContextFull: return "length";
    case StopReason::EndOfGeneration:
    case StopReason::StopToken:
    case StopReason::StopSequence:
    case StopReason::GrammarComplete:
    case StopReason::CallbackStopped: return "stop";
    }
    return "stop";
}

OpenAiChatWriter::OpenAiChatWriter(ResponseHeader header, bool stream, bool include_usage, bool parallel_tool_calls,
                                   bool logprobs)
    : header_(std::move(header)), stream_(stream), include_usage_(include_usage), parallel_tool_calls_(parallel_tool_calls),
      logprobs_(logprobs) {}

std::string OpenAiChatWriter::refusal(const ApiError& error) const { return error_body(error); }

void OpenAiChatWriter::prepared(const ReplyContext& context) {
    tool_format_ = context.tool_format;
    if (stream_ && tool_format_ != ToolCallFormat::None) tool_parser_.emplace(tool_format_);
}

std::string OpenAiChatWriter::stream_events(const ToolCallStreamParser::Events& events) {
    std::string bytes;
    if (!events.content.empty()) {
        bytes += sse_event(chat_chunk(header_, events.content, false, std::nullopt, logprobs_for_chunk()));
        logprobs_pending_.clear();
    }
    for (const ToolCall& call : events.calls) {
        if (!parallel_tool_calls_ && calls_streamed_ > 0) break;
        // As OpenAI streams a call: a head that names it, then its arguments.
        bytes += sse_event(chat_tool_call_head_chunk(header_, calls_streamed_, call));
        bytes += sse_event(chat_tool_call_arguments_chunk(header_, calls_streamed_, call.arguments_json));
        ++calls_streamed_;
    }
    return bytes;
}

std::string OpenAiChatWriter::start() {
    return stream_ ? sse_event(chat_chunk(header_, std::string_view(""), true, std::nullopt)) : std::string();
}

std::string OpenAiChatWriter::piece(std::string_view text) {
    if (!stream_) return {};
    if (tool_parser_) return stream_events(tool_parser_->feed(text));
    std::string bytes = sse_event(chat_chunk(header_, text, false, std::nullopt, logprobs_for_chunk()));
    logprobs_pending_.clear();
    return bytes;
}

ReplyEnding OpenAiChatWriter::finish(const ChatTurnOutcome& outcome, const Usage& usage) {
    std::string_view finish = openai_finish_reason(outcome.stats.stop_reason);
    if (!stream_) {
        if (tool_format_ == ToolCallFormat::None)
            return {chat_completion_body(header_, outcome.text, finish, usage, {}, logprobs_for_chunk()), std::string(finish)};
        ParsedToolReply parsed = parse_tool_calls(tool_format_, outcome.text);
        if (!parallel_tool_calls_ && parsed.calls.size() > 1) parsed.calls.resize(1);
        // A reply cut by the token limit or the context stays "length", whatever calls it completed.
        if (!parsed.calls.empty() && finish == "stop") finish = "tool_calls";
        return {chat_completion_body(header_, parsed.content, finish, usage, parsed.calls, logprobs_for_chunk()),
                std::string(finish)};
    }
    ReplyEnding ending;
    if (tool_parser_) ending.bytes = stream_events(tool_parser_->finish());
    if (calls_streamed_ > 0 && finish == "stop") finish = "tool_calls";
    ending.finish_reason = std::string(finish);
    // Tokens whose text never reached a content chunk (a stop string's, text held back for a tool call).
    const LogprobList* rest = logprobs_pending_.empty() ? nullptr : logprobs_for_chunk();
    ending.bytes += sse_event(chat_chunk(header_, std::nullopt, false, finish, rest));
    logprobs_pending_.clear();
    if (include_usage_) ending.bytes += sse_event(usage_chunk(header_, "chat.completion.chunk", usage));
    ending.bytes += kSseDone;
    return ending;
}

std::string OpenAiChatWriter::failure(const ApiError& error) { return openai_failure_bytes(error, stream_); }

OpenAiTextWriter::OpenAiTextWriter(ResponseHeader header, bool stream, bool include_usage, bool logprobs)
    : header_(std::move(header)), stream_(stream), include_usage_(include_usage), logprobs_(logprobs) {}

std::string OpenAiTextWriter::refusal(const ApiError& error) const { return error_body(error); }

std::string OpenAiTextWriter::start() { return stream_ ? sse_event(text_chunk(header_, "", std::nullopt)) : std::string(); }

std::string OpenAiTextWriter::piece(std::string_view text) {
    if (!stream_) return {};
    std::string bytes = sse_event(text_chunk(header_, text, std::nullopt, logprobs_for_chunk()));
    logprobs_pending_.clear();
    return bytes;
}

ReplyEnding OpenAiTextWriter::finish(const ChatTurnOutcome& outcome, const Usage& usage) {
    const std::string_view finish = openai_finish_reason(outcome.stats.stop_reason);
    ReplyEnding ending{{}, std::string(finish)};
    if (!stream_) {
        ending.bytes = text_completion_body(header_, outcome.text, finish, usage, logprobs_for_chunk());
        return ending;
    }
    ending.bytes = sse_event(text_chunk(header_, "", finish, logprobs_pending_.empty() ? nullptr : logprobs_for_chunk()));
    logprobs_pending_.clear();
    if (include_usage_) ending.bytes += sse_event(usage_chunk(header_, "text_completion", usage));
    ending.bytes += kSseDone;
    return ending;
}

std::string OpenAiTextWriter::failure(const ApiError& error) { return openai_failure_bytes(error, stream_); }

} // namespace cflow::server
