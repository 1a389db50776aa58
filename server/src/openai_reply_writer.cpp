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

OpenAiChatWriter::OpenAiChatWriter(ResponseHeader header, bool stream, bool include_usage)
    : header_(std::move(header)), stream_(stream), include_usage_(include_usage) {}

std::string OpenAiChatWriter::refusal(const ApiError& error) const { return error_body(error); }

std::string OpenAiChatWriter::start() {
    return stream_ ? sse_event(chat_chunk(header_, std::string_view(""), true, std::nullopt)) : std::string();
}

std::string OpenAiChatWriter::piece(std::string_view text) {
    return stream_ ? sse_event(chat_chunk(header_, text, false, std::nullopt)) : std::string();
}

ReplyEnding OpenAiChatWriter::finish(const ChatTurnOutcome& outcome, const Usage& usage) {
    const std::string_view finish = openai_finish_reason(outcome.stats.stop_reason);
    ReplyEnding ending{{}, std::string(finish)};
    if (!stream_) {
        ending.bytes = chat_completion_body(header_, outcome.text, finish, usage);
        return ending;
    }
    ending.bytes = sse_event(chat_chunk(header_, std::nullopt, false, finish));
    if (include_usage_) ending.bytes += sse_event(usage_chunk(header_, "chat.completion.chunk", usage));
    ending.bytes += kSseDone;
    return ending;
}

std::string OpenAiChatWriter::failure(const ApiError& error) { return openai_failure_bytes(error, stream_); }

OpenAiTextWriter::OpenAiTextWriter(ResponseHeader header, bool stream, bool include_usage)
    : header_(std::move(header)), stream_(stream), include_usage_(include_usage) {}

std::string OpenAiTextWriter::refusal(const ApiError& error) const { return error_body(error); }

std::string OpenAiTextWriter::start() { return stream_ ? sse_event(text_chunk(header_, "", std::nullopt)) : std::string(); }

std::string OpenAiTextWriter::piece(std::string_view text) {
    return stream_ ? sse_event(text_chunk(header_, text, std::nullopt)) : std::string();
}

ReplyEnding OpenAiTextWriter::finish(const ChatTurnOutcome& outcome, const Usage& usage) {
    const std::string_view finish = openai_finish_reason(outcome.stats.stop_reason);
    ReplyEnding ending{{}, std::string(finish)};
    if (!stream_) {
        ending.bytes = text_completion_body(header_, outcome.text, finish, usage);
        return ending;
    }
    ending.bytes = sse_event(text_chunk(header_, "", finish));
    if (include_usage_) ending.bytes += sse_event(usage_chunk(header_, "text_completion", usage));
    ending.bytes += kSseDone;
    return ending;
}

std::string OpenAiTextWriter::failure(const ApiError& error) { return openai_failure_bytes(error, stream_); }

} // namespace cflow::server
