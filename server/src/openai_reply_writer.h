#pragma once
// The OpenAI shapes of a reply (reply_writer.h): POST /v1/chat/completions (chat.completion, or
// chat.completion.chunk events ending with [DONE]) and POST /v1/completions (text_completion).
#include <memory>
#include <string_view>

#include "cflow/engine/generation/generate.h"
#include "reply_writer.h"

namespace cflow::server {

// "length" for a reply cut by max_tokens or the context, else "stop".
std::string_view openai_finish_reason(StopReason reason);

class OpenAiChatWriter : public ReplyWriter {
public:
    OpenAiChatWriter(ResponseHeader header, bool stream, bool include_usage);
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
