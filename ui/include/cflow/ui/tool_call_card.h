#pragma once
// One tool call the model asked for, shown in the chat as a card: the tool's name, its arguments
// pretty-printed, and Approve / Deny. Nothing runs before Approve; then the conversation's
// ToolRegistry runs the call and the card shows the result or the error. Deny answers the call
// with "the user denied this call" and runs nothing. Either way resolved() hands the text the
// model is told (its tool message) to whoever continues the reply.
#include <optional>

#include <QFrame>
#include <QPointer>

#include "cflow/engine/chat/tool_calls.h"
#include "cflow/ui/tools/tool_provider.h"

class QLabel;
class QPlainTextEdit;
class QPushButton;

namespace cflow::ui {

class ToolRegistry;

// What the model is told when the user denies a call.
QString denied_tool_call_text();

class ToolCallCard : public QFrame {
    Q_OBJECT
public:
    enum class State { Waiting, Running, Done, Denied };

    ToolCallCard(cflow::ToolCall call, ToolRegistry* registry, QWidget* parent = nullptr);

    const cflow::ToolCall& call() const { return call_; }
    State state() const { return state_; }
    // Set once the call ran or was denied.
    const std::optional<ToolResult>& result() const { return result_; }
    QPushButton* approveButton() const { return approve_; }
    QPushButton* denyButton() const { return deny_; }
    QString argumentsText() const;  // as shown: indented JSON (or the raw text when it is not JSON)
    QString statusText() const;

    void approve();  // runs the call (once; ignored after a decision)
    void deny();
    // A call decided earlier (read back from the conversation, or its round ended): shows what the
    // model was told, read-only; resolved() is not emitted and nothing runs. Ignored once decided here.
    void showOutcome(const QString& toolMessage);

signals:
    void started(const cflow::ToolCall& call);  // Approve: the call runs from now on
    void resolved(const cflow::ToolCall& call, const cflow::ui::ToolResult& result);

private:
    void finish(State state, const ToolResult& result);
    void holdFocus();

    cflow::ToolCall call_;
    QPointer<ToolRegistry> registry_;
    State state_ = State::Waiting;
    std::optional<ToolResult> result_;
    QPlainTextEdit* arguments_;
    QLabel* status_;
    QPushButton* approve_;
    QPushButton* deny_;
};

} // namespace cflow::ui
