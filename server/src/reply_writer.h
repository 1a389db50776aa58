#pragma once
// How one generation's reply reaches the client in one API's shape. The shared reply job
// (reply_job.h) runs the model and hands each writer the same events; the writer turns them into
// the bytes of its API: OpenAI chat/completions chunks (openai_reply_writer.h), Anthropic Messages
// events (anthropic_response.h). A writer may hold text back while it streams (text that could
// begin a tool call) and emit tool-call events mid-stream or at the end: piece() sees every piece
// of text, finish() sees the whole reply.
//
// A writer belongs to the one request thread that runs its job; it is not shared.
#include <string>
#include <string_view>

#include "cflow/engine/chat/chat_session.h"
#include "cflow/engine/chat/tool_calls.h"
#include "cflow/server/api_error.h"
#include "cflow/server/openai_response.h"

namespace cflow::server {

// The end of a reply: the bytes still to send, and the finish reason the log and the observer show
// ("stop", "length", "tool_calls", "end_turn", ...).
struct ReplyEnding {
    std::string bytes;
    std::string finish_reason;
};

// What a writer learns once the prompt is prepared, before start().
struct ReplyContext {
    uint32_t prompt_tokens = 0;
    // How the template writes tool calls; None when the request offers no tools (or tool_choice
    // none): the reply is then plain text, nothing to parse.
    ToolCallFormat tool_format = ToolCallFormat::None;
};

class ReplyWriter {
public:
    virtual ~ReplyWriter() = default;

    // true: server-sent events; false: one JSON body at the end.
    virtual bool streams() const = 0;
    // The JSON body that refuses the request before any reply was written (the HTTP status is
    // error.status): each API's own error shape.
    virtual std::string refusal(const ApiError& error) const = 0;
    // Called once, after the prompt is prepared and before start().
    virtual void prepared(const ReplyContext& context) { (void)context; }
    // A generated token's log probabilities (only when the request asked for them), given before
    // the piece its text belongs to; the writer sends it with the next piece or at the end.
    virtual void token_logprob(TokenLogprob entry) { (void)entry; }
    // The bytes sent before the first piece (a stream's opening events; "" for a whole body).
    virtual std::string start() = 0;
    // One non-empty piece of reply text as the model wrote it: the bytes to send now ("" is fine:
    // held back, or a whole body written at the end).
    virtual std::string piece(std::string_view text) = 0;
    // The reply ended normally. outcome.text is the whole reply (what the pieces added up to),
    // outcome.stats.stop_reason and outcome.stop_sequence why it ended.
    virtual ReplyEnding finish(const ChatTurnOutcome& outcome, const Usage& usage) = 0;
    // The generation failed after the headers were sent: the bytes that tell the client (a stream
    // ends the way its clients wait for).
    virtual std::string failure(const ApiError& error) = 0;
};

} // namespace cflow::server
