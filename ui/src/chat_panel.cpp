#include "cflow/ui/chat_panel.h"

#include <QDialog>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMetaObject>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "cflow/ui/chat_view.h"
#include "cflow/ui/conversation_store.h"
#include "cflow/ui/engine_worker.h"
#include "cflow/ui/sampling_panel.h"

namespace cflow::ui {
namespace {
constexpr int kTitleChars = 48;
}

ChatPanel::ChatPanel(EngineWorker* worker, ConversationStore* store, SamplingPanel* sampling, QWidget* parent)
    : QWidget(parent), worker_(worker), store_(store), sampling_(sampling) {
    auto* layout = new QVBoxLayout(this);
    systemPrompt_ = new QLineEdit(this);
    systemPrompt_->setObjectName(QStringLiteral("systemPrompt"));
    systemPrompt_->setPlaceholderText(tr("System prompt (optional)"));
    layout->addWidget(systemPrompt_);
    view_ = new ChatView(this);
    layout->addWidget(view_, 1);
    notice_ = new QLabel(this);
    notice_->setObjectName(QStringLiteral("notice"));
    notice_->setWordWrap(true);
    notice_->setStyleSheet(QStringLiteral("color: #b00020;"));
    notice_->hide();
    layout->addWidget(notice_);
    input_ = new QPlainTextEdit(this);
    input_->setObjectName(QStringLiteral("input"));
    input_->setPlaceholderText(tr("Message (Ctrl+Enter to send)"));
    input_->setMaximumHeight(110);
    layout->addWidget(input_);

    auto* row = new QHBoxLayout;
    context_ = new QLabel(this);
    context_->setObjectName(QStringLiteral("context"));
    row->addWidget(context_, 1);
    auto* raw = new QPushButton(tr("Raw prompt"), this);
    regenerate_ = new QPushButton(tr("Regenerate"), this);
    stop_ = new QPushButton(tr("Stop"), this);
    send_ = new QPushButton(tr("Send"), this);
    send_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
    for (QPushButton* b : {raw, regenerate_, stop_, send_}) row->addWidget(b);
    layout->addLayout(row);

    connect(send_, &QPushButton::clicked, this, [this] {
        const QString text = input_->toPlainText().trimmed();
        const bool sent = editingIndex_ >= 0 ? editAndResend(editingIndex_, text) : send(text);
        if (sent) input_->clear();
    });
    connect(stop_, &QPushButton::clicked, this, &ChatPanel::stop);
    connect(regenerate_, &QPushButton::clicked, this, &ChatPanel::regenerate);
    connect(raw, &QPushButton::clicked, this, &ChatPanel::showRawPrompt);
    connect(view_, &ChatView::editRequested, this, [this](int index) {
        if (generating_ || index < 0 || index >= static_cast<int>(entries_.size())) return;
        editingIndex_ = index;  // the next Send replaces this message and drops what followed it
        input_->setPlainText(entries_[static_cast<size_t>(index)].content);
        input_->setFocus();
    });

    connect(worker_, &EngineWorker::modelLoaded, this, &ChatPanel::onModelLoaded);
    connect(worker_, &EngineWorker::promptReady, this, &ChatPanel::onPrompt);
    connect(worker_, &EngineWorker::tokensReady, this,
            [this](const QString& text, int, const TokenPieces& pieces) { onTokens(text, pieces); });
    connect(worker_, &EngineWorker::finished, this, &ChatPanel::onFinished);
    connect(worker_, &EngineWorker::error, this, &ChatPanel::onError);
    setGenerating(false);
    updateContextLabel(0, 0);
}

bool ChatPanel::check(const Status& status) {
    if (status) return true;
    emit storeError(QString::fromStdString(status.error()));
    return false;
}

QString ChatPanel::settingsJson() const {
    QJsonObject o = QJsonDocument::fromJson(settings_to_json(sampling_->settings()).toUtf8()).object();
    o.insert(QStringLiteral("system_prompt"), systemPrompt_->text());
    return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

bool ChatPanel::send(const QString& text) {
    if (!modelReady_ || generating_ || text.trimmed().isEmpty()) return false;
    notice_->hide();
    editingIndex_ = -1;
    if (conversationId_ == 0) {
        QString title = text.simplified();
        if (title.size() > kTitleChars) title = title.left(kTitleChars - 1) + QChar(0x2026);
        auto created = store_->createConversation(title, modelPath_, settingsJson());
        if (!created) return check(created.take_error());
        conversationId_ = *created;
        emit conversationChanged(conversationId_);
    } else {
        check(store_->setSettings(conversationId_, settingsJson()));
    }
    auto row = store_->addMessage(conversationId_, QStringLiteral("user"), text);
    if (!row) return check(row.take_error());
    entries_.push_back({QStringLiteral("user"), text, *row});
    view_->addMessage(QStringLiteral("user"), text);
    regenerations_ = 0;
    startReply(0);
    return true;
}

Conversation ChatPanel::history() const {
    Conversation conversation;
    if (!systemPrompt_->text().trimmed().isEmpty())
        conversation.push_back({QStringLiteral("system"), systemPrompt_->text().trimmed()});
    for (const Entry& e : entries_) conversation.push_back({e.role, e.content});
    return conversation;
}

void ChatPanel::startReply(int seedOffset) {
    const Conversation conversation = history();
    // The reply row exists before the first token: a crash leaves it with complete = 0.
    auto row = store_->addMessage(conversationId_, QStringLiteral("assistant"), QString(), false);
    if (!row) {
        check(row.take_error());
        return;
    }
    entries_.push_back({QStringLiteral("assistant"), QString(), *row});
    view_->addMessage(QStringLiteral("assistant"), QString());
    GenerationSettings settings = sampling_->settings();
    settings.sampling.seed += static_cast<uint64_t>(seedOffset);
    setGenerating(true);
    EngineWorker* worker = worker_;
    // The stops seen so far travel with the request: a Stop pressed while it waits in the
    // worker's queue then cancels it when it starts (it used to be cleared and lost).
    const uint64_t stops = worker_->stopRequests();
    QMetaObject::invokeMethod(worker_, [worker, conversation, settings, stops] { worker->generate(conversation, settings, stops); });
}

void ChatPanel::stop() {
    if (generating_) worker_->stop();
}

bool ChatPanel::regenerate() {
    if (!modelReady_ || generating_ || entries_.empty() || entries_.back().role != QLatin1String("assistant"))
        return false;
    const Entry last = entries_.back();
    if (!check(store_->deleteMessagesFrom(conversationId_, last.rowId))) return false;
    entries_.pop_back();
    view_->removeFrom(static_cast<int>(entries_.size()));
    startReply(++regenerations_);
    return true;
}

bool ChatPanel::editAndResend(int index, const QString& newText) {
    if (!modelReady_ || generating_ || newText.trimmed().isEmpty()) return false;
    if (index < 0 || index >= static_cast<int>(entries_.size()) ||
        entries_[static_cast<size_t>(index)].role != QLatin1String("user"))
        return false;
    if (!check(store_->deleteMessagesFrom(conversationId_, entries_[static_cast<size_t>(index)].rowId))) return false;
    entries_.resize(static_cast<size_t>(index));
    view_->removeFrom(index);
    return send(newText);
}

void ChatPanel::newConversation() {
    if (generating_) return;
    conversationId_ = 0;
    entries_.clear();
    view_->clearMessages();
    editingIndex_ = -1;
    notice_->hide();
    emit conversationChanged(0);
}

bool ChatPanel::openConversation(qint64 id) {
    if (generating_) return false;
    auto info = store_->conversation(id);
    if (!info) return check(info.take_error());
    auto messages = store_->messages(id);
    if (!messages) return check(messages.take_error());
    newConversation();
    conversationId_ = id;
    const QJsonObject settings = QJsonDocument::fromJson(info->settingsJson.toUtf8()).object();
    systemPrompt_->setText(settings.value(QStringLiteral("system_prompt")).toString());
    sampling_->setSettings(settings_from_json(info->settingsJson, sampling_->settings()));
    for (const StoredMessage& m : *messages) {
        entries_.push_back({m.role, m.content, m.id});
        view_->addMessage(m.role, m.complete ? m.content : m.content + tr("\n\n*(incomplete)*"));
    }
    emit conversationChanged(id);
    return true;
}

void ChatPanel::onModelLoaded(const ModelInfo& info) {
    modelReady_ = true;
    modelPath_ = info.path;
    contextLength_ = info.contextLength;
    updateContextLabel(0, info.contextLength);
    setGenerating(false);
}

void ChatPanel::onPrompt(const RenderedPrompt& prompt) {
    lastPrompt_ = prompt;
    contextLength_ = prompt.contextLength;
    updateContextLabel(prompt.promptTokens, prompt.contextLength);
}

void ChatPanel::onTokens(const QString& text, const TokenPieces& pieces) {
    if (!generating_ || entries_.empty()) return;
    Entry& reply = entries_.back();
    reply.content += text;
    view_->appendToLast(text, pieces);
    check(store_->updateMessage(reply.rowId, reply.content, false));
}

void ChatPanel::onFinished(const ReplyStats& stats) {
    if (!generating_) return;
    if (!entries_.empty()) check(store_->updateMessage(entries_.back().rowId, entries_.back().content, true));
    setGenerating(false);
    updateContextLabel(stats.contextUsed, stats.contextLength);
    if (stats.stopReason == QLatin1String("context_full"))
        notice_->setText(tr("The context is full (%1 tokens): start a new conversation to continue.").arg(stats.contextLength));
    notice_->setVisible(stats.stopReason == QLatin1String("context_full"));
    emit replyFinished(stats);
}

void ChatPanel::onError(const QString& message) {
    if (generating_ && !entries_.empty()) {
        Entry& reply = entries_.back();
        if (reply.content.isEmpty()) {
            // Nothing was generated: the empty reply row would only clutter the history.
            check(store_->deleteMessagesFrom(conversationId_, reply.rowId));
            entries_.pop_back();
            view_->removeFrom(static_cast<int>(entries_.size()));
        } else {
            check(store_->updateMessage(reply.rowId, reply.content, true));
        }
    }
    setGenerating(false);
    notice_->setText(message);
    notice_->show();
    emit replyFailed(message);
}

void ChatPanel::setGenerating(bool on) {
    generating_ = on;
    send_->setEnabled(!on && modelReady_);
    stop_->setEnabled(on);
    regenerate_->setEnabled(!on && modelReady_);
}

void ChatPanel::updateContextLabel(int used, int max) {
    context_->setText(max > 0 ? tr("Context: %1 / %2 tokens").arg(used).arg(max) : tr("Context: no model"));
}

QString ChatPanel::contextText() const { return context_->text(); }

void ChatPanel::showRawPrompt() {
    auto* dialog = new QDialog(this);
    dialog->setObjectName(QStringLiteral("rawPromptDialog"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(tr("Raw prompt"));
    auto* layout = new QVBoxLayout(dialog);
    const QString source = lastPrompt_.kind == TemplateKind::Model
                               ? tr("Rendered with the model's chat template.")
                               : tr("Rendered with the fallback template: %1").arg(lastPrompt_.templateNote);
    layout->addWidget(new QLabel(lastPrompt_.text.isEmpty() ? tr("No prompt sent yet.")
                                                            : source + tr(" %1 tokens, %2 reused from the cache.")
                                                                           .arg(lastPrompt_.promptTokens)
                                                                           .arg(lastPrompt_.reusedTokens),
                                 dialog));
    auto* text = new QPlainTextEdit(lastPrompt_.text, dialog);
    text->setReadOnly(true);
    text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    layout->addWidget(text);
    dialog->resize(640, 420);
    dialog->show();
}

} // namespace cflow::ui
