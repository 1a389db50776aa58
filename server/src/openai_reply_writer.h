#pragma once
// The OpenAI shapes of a reply (reply_writer.h): POST /v1/chat/completions (chat.completion, or
// chat.completion.chunk events ending with [DONE]) and POST /v1/completions (text_completion).
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "cflow/engine/chat/tool_calls.h"

#include "cflow/engine/generation/generate.h"
#include "reply_writer.h"

namespace cflow::server {

// "length" for a reply cut by max_tokens or the context, else "stop".
std::string_view openai_finish_reason(StopReason reason);

// With tools offered (ReplyContext::tool_format not None) the reply is read for calls in the
// template's format: a whole body gets message.tool_calls, a stream gets delta.tool_calls chunks as
// each call completes (text that may begin a call is held back until it is decided), and the
// finish reason is "tool_calls" when there are calls. parallel_tool_calls false: only the first.
class OpenAiChatWriter : public ReplyWriter {
public:
    OpenAiChatWriter(ResponseHeader header, bool stream, bool include_usage, bool parallel_tool_calls = true);
    bool streams() const override { return stream_; }
    std::string refusal(const ApiError& error) const override;
    void prepared(const ReplyContext& context) override;
    std::string start() override;
    std::string piece(std::string_view text) override;
    ReplyEnding finish(const ChatTurnOutcome& outcome, const Usage& usage) override;
    std::string failure(const ApiError& error) override;

private:
    // The chunks of what the stream parser released: its text, then each new call.
    std::string stream_events(const ToolCallStreamParser::Events& events);

    ResponseHeader header_;
    bool stream_;
    bool include_usage_;
    bool parallel_tool_calls_;
    ToolCallFormat tool_format_ = ToolCallFormat::None;
    std::optional<ToolCallStreamParser> tool_parser_;  // a stream with tools offered
    uint32_t calls_streamed_ = 0;                      // delta.tool_calls index of the next call
};

class OpenAiTextWriter : public ReplyWriter {
public:
    OpenAiTextWriter(ResponseHeader header, bool stream, bool include_usage);
    bool streams() const override { return stream_; }
    std::string refusal(const ApiError& error) const override;
    std::string start() override;
    std::string piece(std::string_view text) override;
    ReplyEnding finish(const ChatTurnOutcome& outcome, const Usage& usage) override;
    std::string failure(const ApiError& error) override;

private:
    ResponseHeader header_;
    bool stream_;
    bool include_usage_;
};

} // namespace cflow::server
