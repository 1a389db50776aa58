#include "cflow/ui/tool_call_card.h"

#include <algorithm>
#include <utility>

#include <QApplication>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "cflow/ui/chat_tool_round.h"
#include "cflow/ui/fixed_font.h"
#include "cflow/ui/tools/tool_registry.h"

namespace cflow::ui {
namespace {

QString tool_card_arguments(const std::string& argumentsJson) {
    const QByteArray utf8 = QByteArray::fromStdString(argumentsJson);
    const QJsonDocument parsed = QJsonDocument::fromJson(utf8);
    if (parsed.isNull()) return QString::fromUtf8(utf8);  // shown as the model wrote it
    return QString::fromUtf8(parsed.toJson(QJsonDocument::Indented)).trimmed();
}

} // namespace

QString denied_tool_call_text() { return QStringLiteral("The user denied this call: it did not run."); }

ToolCallCard::ToolCallCard(cflow::ToolCall call, ToolRegistry* registry, QWidget* parent)
    : QFrame(parent), call_(std::move(call)), registry_(registry) {
    setObjectName(QStringLiteral("toolCallCard"));
    setFrameShape(QFrame::StyledPanel);
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Maximum);
    const QString name = QString::fromStdString(call_.name);
    setAccessibleName(tr("Tool call: %1").arg(name));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    auto* title = new QLabel(tr("<b>Tool call:</b> %1").arg(name.toHtmlEscaped()), this);
    title->setObjectName(QStringLiteral("toolCallName"));
    layout->addWidget(title);
    arguments_ = new QPlainTextEdit(tool_card_arguments(call_.arguments_json), this);
    arguments_->setObjectName(QStringLiteral("toolCallArguments"));
    arguments_->setAccessibleName(tr("Arguments of the %1 call").arg(name));
    arguments_->setReadOnly(true);
    arguments_->setFont(fixed_pitch_font());
    arguments_->setLineWrapMode(QPlainTextEdit::WidgetWidth);
    // As tall as the arguments (up to 12 lines), so a short call is a short card.
    const int lines = std::min(12, int(arguments_->document()->lineCount()) + 1);
    arguments_->setFixedHeight(lines * arguments_->fontMetrics().lineSpacing() + 12);
    layout->addWidget(arguments_);
    status_ = new QLabel(tr("Waiting for your approval: nothing runs until you approve."), this);
    status_->setObjectName(QStringLiteral("toolCallStatus"));
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(status_);
    auto* buttons = new QHBoxLayout;
    approve_ = new QPushButton(tr("Approve"), this);
    approve_->setObjectName(QStringLiteral("approveToolCall"));
    approve_->setAccessibleName(tr("Approve the %1 call").arg(name));
    approve_->setToolTip(tr("Run %1 with these arguments and give the model its result.").arg(name));
    deny_ = new QPushButton(tr("Deny"), this);
    deny_->setObjectName(QStringLiteral("denyToolCall"));
    deny_->setAccessibleName(tr("Deny the %1 call").arg(name));
    deny_->setToolTip(tr("Do not run it; the model is told the call was denied."));
    for (QPushButton* b : {approve_, deny_}) b->setFocusPolicy(Qt::StrongFocus);
    buttons->addWidget(approve_);
    buttons->addWidget(deny_);
    buttons->addStretch(1);
    layout->addLayout(buttons);
    connect(approve_, &QPushButton::clicked, this, &ToolCallCard::approve);
    connect(deny_, &QPushButton::clicked, this, &ToolCallCard::deny);
}

QString ToolCallCard::argumentsText() const { return arguments_->toPlainText(); }
QString ToolCallCard::statusText() const { return status_->text(); }

void ToolCallCard::holdFocus() {
    // Disabling the focused button would hand the keyboard to whatever widget comes next; the
    // card keeps it, so whoever shows the outcome can tell the decision came from here.
    if (QWidget* focused = QApplication::focusWidget(); focused && isAncestorOf(focused)) setFocus(Qt::OtherFocusReason);
}

void ToolCallCard::approve() {
    if (state_ != State::Waiting) return;
    state_ = State::Running;
    holdFocus();
    approve_->setEnabled(false);
    deny_->setEnabled(false);
    status_->setText(tr("Running %1…").arg(QString::fromStdString(call_.name)));
    emit started(call_);
    if (!registry_) {
        finish(State::Done, {false, tr("the conversation's tools are gone")});
        return;
    }
    // The registry resolves on the GUI thread; the card may be gone by then.
    registry_->call(call_).then([card = QPointer<ToolCallCard>(this)](const ToolResult& result) {
        if (card) card->finish(State::Done, result);
    });
}

void ToolCallCard::deny() {
    if (state_ != State::Waiting) return;
    finish(State::Denied, {false, denied_tool_call_text()});
}

void ToolCallCard::showOutcome(const QString& toolMessage) {
    if (state_ != State::Waiting) return;
    const bool denied = toolMessage == denied_tool_call_text();
    state_ = denied ? State::Denied : State::Done;
    result_ = ToolResult{!denied, toolMessage};
    approve_->setEnabled(false);
    deny_->setEnabled(false);
    approve_->hide();  // a decided call offers nothing to press (and no dead stop for the Tab key)
    deny_->hide();
    if (denied) status_->setText(tr("Denied: the model was told the call did not run."));
    else if (toolMessage == cancelled_tool_call_text()) status_->setText(tr("Not run: the chat was stopped before a decision."));
    else if (toolMessage == interrupted_tool_call_text()) status_->setText(tr("Stopped while it ran: its result was not kept."));
    else if (toolMessage.isEmpty()) status_->setText(tr("No answer was recorded for this call."));
    else status_->setText(tr("Answer: %1").arg(toolMessage));
}

void ToolCallCard::finish(State state, const ToolResult& result) {
    state_ = state;
    result_ = result;
    holdFocus();
    approve_->setEnabled(false);
    deny_->setEnabled(false);
    if (state == State::Denied) status_->setText(tr("Denied: the model is told the call did not run."));
    else if (result.ok) status_->setText(tr("Result: %1").arg(result.text));
    else status_->setText(tr("Error: %1").arg(result.text));
    emit resolved(call_, result);
}

} // namespace cflow::ui
