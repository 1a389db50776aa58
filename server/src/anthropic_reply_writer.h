#pragma once
// The Anthropic Messages shape of a reply (reply_writer.h): one message body, or the stream of
// message_start ... message_stop events. With tools offered, the reply's calls (in the template's
// format, tool_calls.h) become tool_use blocks: while streaming, text that could begin a call is
// held back, and each call is sent as a whole block (start, one input_json_delta, stop) once the
// parser has read it.
#include <optional>
#include <string>
#include <vector>

#include "cflow/engine/chat/tool_calls.h"
#include "reply_writer.h"

namespace cflow::server {

class AnthropicWriter : public ReplyWriter {
public:
    // parallel_tool_calls false: only the reply's first call is returned.
    AnthropicWriter(std::string model, bool stream, bool parallel_tool_calls);
    bool streams() const override { return stream_; }
    std::string refusal(const ApiError& error) const override;
    void prepared(const ReplyContext& context) override;
    std::string start() override;
    std::string piece(std::string_view text) override;
    ReplyEnding finish(const ChatTurnOutcome& outcome, const Usage& usage) override;
    std::string failure(const ApiError& error) override;

private:
    std::string stream_text(std::string_view text);
    std::string stream_call(const ToolCall& call);
    std::string close_text_block();
    bool keeps_call() const { return parallel_tool_calls_ || calls_.empty(); }

    std::string id_;
    std::string model_;
    bool stream_;
    bool parallel_tool_calls_;
    ReplyContext context_;
    std::optional<ToolCallStreamParser> parser_;  // streaming with tools offered
    std::vector<ToolCall> calls_;                 // the calls sent so far (streaming)
    uint32_t next_block_ = 0;                     // the index of the next content block
    bool text_block_open_ = false;
    bool pinged_ = false;
};

} // namespace cflow::server
