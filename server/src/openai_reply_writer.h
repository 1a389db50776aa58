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
    // logprobs: the request asked for them (choices[0].logprobs is then an object, never null).
    OpenAiChatWriter(ResponseHeader header, bool stream, bool include_usage, bool parallel_tool_calls = true,
                     bool logprobs = false);
    bool streams() const override { return stream_; }
    std::string refusal(const ApiError& error) const override;
    void prepared(const ReplyContext& context) override;
    void token_logprob(TokenLogprob entry) override { logprobs_pending_.push_back(std::move(entry)); }
    std::string start() override;
    std::string piece(std::string_view text) override;
    ReplyEnding finish(const ChatTurnOutcome& outcome, const Usage& usage) override;
    std::string failure(const ApiError& error) override;

private:
    // The pending entries for the chunk about to be written (nullptr: the request asked for none),
    // and what to call once it is written.
    const LogprobList* logprobs_for_chunk() const { return logprobs_ ? &logprobs_pending_ : nullptr; }
    // The chunks of what the stream parser released: its text, then each new call.
    std::string stream_events(const ToolCallStreamParser::Events& events);

    ResponseHeader header_;
    bool stream_;
    bool include_usage_;
    bool parallel_tool_calls_;
    ToolCallFormat tool_format_ = ToolCallFormat::None;
    std::optional<ToolCallStreamParser> tool_parser_;  // a stream with tools offered
    uint32_t calls_streamed_ = 0;                      // delta.tool_calls index of the next call
    bool logprobs_ = false;
    // Entries not yet sent: a stream sends them with the next content chunk (or the last chunk); a
    // whole body sends them all.
    LogprobList logprobs_pending_;
};

class OpenAiTextWriter : public ReplyWriter {
public:
    OpenAiTextWriter(ResponseHeader header, bool stream, bool include_usage, bool logprobs = false);
    bool streams() const override { return stream_; }
    std::string refusal(const ApiError& error) const override;
    void token_logprob(TokenLogprob entry) override { logprobs_pending_.push_back(std::move(entry)); }
    std::string start() override;
    std::string piece(std::string_view text) override;
    ReplyEnding finish(const ChatTurnOutcome& outcome, const Usage& usage) override;
    std::string failure(const ApiError& error) override;

private:
    const LogprobList* logprobs_for_chunk() const { return logprobs_ ? &logprobs_pending_ : nullptr; }

    ResponseHeader header_;
    bool stream_;
    bool include_usage_;
    bool logprobs_ = false;
    LogprobList logprobs_pending_;  // as OpenAiChatWriter's
};

} // namespace cflow::server
