#pragma once
// One round of tool calls in the chat: a reply that asked for calls waits, its calls shown as
// cards, until the user has approved (and the tool answered) or denied every one; then each call's
// answer becomes a "tool" message and the model is asked to go on. These are the plain pieces of
// that round the controller keeps and stores; the flow itself is ChatController's
// (chat_controller_tools.cpp).
#include <optional>
#include <string>
#include <vector>

#include <QString>
#include <QtGlobal>

#include "cflow/engine/chat/tool_calls.h"
#include "cflow/ui/tools/tool_provider.h"

namespace cflow::ui {

// Replies the model may write in a row for one user message while it calls tools: the one after
// the eighth round of results is not started (a model that keeps calling would never end).
inline constexpr int kMaxToolRounds = 8;

struct ToolRound {
    quint64 serial = 0;          // names this round: a card's late answer for an ended round is ignored
    qint64 conversationId = 0;
    qint64 replyRowId = 0;       // the assistant message that made the calls
    std::vector<cflow::ToolCall> calls;
    std::vector<std::optional<ToolResult>> results;  // [calls] set as each is approved-and-run or denied
    std::vector<bool> running;   // [calls] approved, result not in yet
    bool answered() const;       // every call has its result
};

// What the model is told for a call that never ran because the user stopped the round (Stop,
// another conversation shown, or the reply ended while its conversation was not shown).
QString cancelled_tool_call_text();
// ... and for one that was running (approved) when the round was stopped: it may have acted.
QString interrupted_tool_call_text();

// ChatMessage::extra_json of an assistant message with these calls, and of a call's result.
QString tool_calls_extra_json(const std::vector<cflow::ToolCall>& calls);
QString tool_result_extra_json(const cflow::ToolCall& call);
// The calls an assistant message's stored extra JSON holds (none for other messages).
std::vector<cflow::ToolCall> tool_calls_from_extra_json(const QString& extraJson);
// The call id a tool message answers ("" when it names none).
QString tool_result_call_id(const QString& extraJson);

// A tool choice as stored in a conversation's settings: "auto", "required" or "tool:NAME" (None
// reads as auto: the chat offers tools or not through the Tools panel). Unknown text reads as auto.
QString tool_choice_key(const cflow::ToolChoice& choice);
cflow::ToolChoice tool_choice_from_key(const QString& key);

// A finished reply read for calls in the format its template writes: the content without the
// call markers, and the calls (none when the format is None or the reply made no well-formed call).
cflow::ParsedToolReply read_tool_calls(cflow::ToolCallFormat format, const QString& reply);

} // namespace cflow::ui
