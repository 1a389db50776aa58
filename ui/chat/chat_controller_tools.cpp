// ChatController's tool rounds: a finished reply's calls wait for the user's decisions (the chat
// shows them as cards), then their results go to the model as "tool" messages and it answers.
#include "cflow/ui/chat_controller.h"

#include "cflow/ui/conversation_store.h"

namespace cflow::ui {

void ChatController::setToolsSource(ToolsSource source) {
    toolsSource_ = std::move(source);
    remeasure();
}

void ChatController::setToolChoice(const cflow::ToolChoice& choice) {
    if (tool_choice_key(choice) == tool_choice_key(setup_.toolChoice)) return;
    setup_.toolChoice = choice;
    saveSetup();
    emit setupChanged();
}

int ChatController::toolRoundIndex() const {
    if (!toolRound_ || toolRound_->conversationId != conversationId_) return -1;
    for (size_t i = 0; i < entries_.size(); ++i)
        if (entries_[i].rowId == toolRound_->replyRowId) return static_cast<int>(i);
    return -1;
}

bool ChatController::toolCallWaiting(int index, const std::string& callId) const {
    if (index < 0 || index != toolRoundIndex()) return false;
    for (size_t i = 0; i < toolRound_->calls.size(); ++i)
        if (toolRound_->calls[i].id == callId) return !toolRound_->results[i].has_value();
    return false;
}

QString ChatController::toolNotice() const {
    if (toolCapReached_)
        return tr("The model called tools %1 times in a row for this message, so it was not asked to go on. "
                  "Send a message to continue.")
            .arg(kMaxToolRounds);
    return {};
}

void ChatController::holdBackCalls(const QString& batch) {
    if (!reply_->callReader || reply_->callSeen) return;  // no tools, or frozen at the first call
    const QByteArray bytes = batch.toUtf8();
    const cflow::ToolCallStreamParser::Events events =
        reply_->callReader->feed(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
    reply_->released += QByteArray::fromStdString(events.content);
    if (!events.calls.empty()) reply_->callSeen = true;
    if (reply_->entry.content.toUtf8().startsWith(reply_->released)) {
        reply_->shownChars = static_cast<int>(QString::fromUtf8(reply_->released).size());
    } else {
        // The reader's content is not a prefix of the text (a format that rewrites it, such as
        // harmony's headers): show the text as it comes, as without tools.
        reply_->callReader.reset();
        reply_->shownChars = -1;
    }
}

bool ChatController::takeToolCalls(ChatEntry& reply) const {
    // The format is the one the reply's prompt offered the tools in (None when none were offered).
    cflow::ParsedToolReply parsed = read_tool_calls(sentPrompt_.toolFormat, reply.content);
    if (parsed.calls.empty()) return false;
    reply.content = QString::fromStdString(parsed.content);
    reply.toolCalls = std::move(parsed.calls);
    reply.extraJson = tool_calls_extra_json(reply.toolCalls);
    return true;
}

void ChatController::beginToolRound(int entryIndex, const ChatEntry& reply, qint64 conversationId) {
    ToolRound round;
    round.serial = ++toolRoundSerial_;
    round.conversationId = conversationId;
    round.replyRowId = reply.rowId;
    round.calls = reply.toolCalls;
    round.results.resize(round.calls.size());
    round.running.resize(round.calls.size(), false);
    toolRound_ = std::move(round);
    // Calls are decided where they are seen: a reply that ended in a conversation not shown has
    // nobody to approve them.
    if (entryIndex < 0 || conversationId != conversationId_) {
        cancelToolRound();
        return;
    }
    emit entryChanged(entryIndex);  // the chat shows the cards, waiting
    emit toolRoundChanged();
}

void ChatController::resolveToolCall(quint64 serial, const std::string& callId, const ToolResult& result) {
    if (!toolRound_ || toolRound_->serial != serial) return;  // a late answer for a round that ended
    for (size_t i = 0; i < toolRound_->calls.size(); ++i)
        if (toolRound_->calls[i].id == callId && !toolRound_->results[i]) toolRound_->results[i] = result;
    if (toolRound_->answered()) finishToolRound();
}

void ChatController::toolCallStarted(quint64 serial, const std::string& callId) {
    if (!toolRound_ || toolRound_->serial != serial) return;
    for (size_t i = 0; i < toolRound_->calls.size(); ++i)
        if (toolRound_->calls[i].id == callId) toolRound_->running[i] = true;
}

void ChatController::addToolResults(const ToolRound& round) {
    for (size_t i = 0; i < round.calls.size(); ++i) {
        const QString text = round.results[i] ? round.results[i]->text : cancelled_tool_call_text();
        const QString extra = tool_result_extra_json(round.calls[i]);
        auto row = store_->addMessage(round.conversationId, QStringLiteral("tool"), text, true, extra);
        if (!row) {
            check(row.take_error());
            continue;
        }
        if (round.conversationId != conversationId_) continue;
        ChatEntry entry;
        entry.role = QStringLiteral("tool");
        entry.content = text;
        entry.rowId = *row;
        entry.extraJson = extra;
        entries_.push_back(std::move(entry));
        emit entryAdded(static_cast<int>(entries_.size()) - 1);
    }
}

void ChatController::finishToolRound() {
    const int index = toolRoundIndex();
    const ToolRound round = std::move(*toolRound_);
    toolRound_.reset();
    addToolResults(round);
    ++toolRounds_;
    if (index >= 0) emit entryChanged(index);  // the cards show their outcome, read-only
    if (toolRounds_ >= kMaxToolRounds) toolCapReached_ = true;
    emit toolRoundChanged();
    const bool goOn = !toolCapReached_ && round.conversationId == conversationId_ && modelReady() && !pending_ &&
                      !isGenerating();
    if (!goOn || !startAssistantReply()) remeasure();
}

void ChatController::cancelToolRound(bool deleting) {
    if (!toolRound_) return;
    const int index = toolRoundIndex();
    ToolRound round = std::move(*toolRound_);
    toolRound_.reset();
    if (!deleting) {
        // Every call gets an answer, so the history stays well formed for the templates that
        // expect one result per call; the undecided ones say they did not run.
        for (size_t i = 0; i < round.results.size(); ++i)
            if (!round.results[i])
                round.results[i] = ToolResult{false, round.running[i] ? interrupted_tool_call_text() : cancelled_tool_call_text()};
        addToolResults(round);
        if (index >= 0) emit entryChanged(index);
        remeasure();
    }
    emit toolRoundChanged();
}

} // namespace cflow::ui
