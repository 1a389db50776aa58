#include "cflow/ui/chat_panel.h"

#include <QApplication>
#include <QDialog>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QJsonObject>
#include <QKeyEvent>
#include <QShortcut>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTextDocumentFragment>
#include <QVBoxLayout>

#include "cflow/ui/fixed_font.h"
#include "cflow/ui/chat_controller.h"
#include "cflow/ui/chat_view.h"
#include "cflow/ui/context_gauge.h"
#include "cflow/ui/tool_call_card.h"
#include "labelled_button.h"

namespace cflow::ui {
namespace {

QLabel* notice_label(const QString& name, const QString& style, QWidget* parent) {
    auto* label = new QLabel(parent);
    label->setObjectName(name);
    label->setWordWrap(true);
    label->setTextFormat(Qt::RichText);
    label->setStyleSheet(style);
    label->hide();
    return label;
}


} // namespace

ChatPanel::ChatPanel(ChatController* controller, QWidget* parent) : QWidget(parent), controller_(controller) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    systemPrompt_ = new QLineEdit(this);
    systemPrompt_->setObjectName(QStringLiteral("systemPrompt"));
    systemPrompt_->setPlaceholderText(tr("System prompt (optional)"));
    systemPrompt_->setAccessibleName(tr("System prompt"));
    systemPrompt_->setClearButtonEnabled(true);
    layout->addWidget(systemPrompt_);
    systemNote_ = notice_label(QStringLiteral("systemNote"), QStringLiteral("color: palette(mid);"), this);
    layout->addWidget(systemNote_);
    info_ = notice_label(QStringLiteral("info"), QString(), this);
    layout->addWidget(info_);
    view_ = new ChatView(this);
    layout->addWidget(view_, 1);
    notice_ = notice_label(QStringLiteral("notice"), QStringLiteral("color: #b00020;"), this);
    layout->addWidget(notice_);

    auto* editRow = new QHBoxLayout;
    editBanner_ = notice_label(QStringLiteral("editBanner"), QStringLiteral("color: #8a5a00;"), this);
    cancelEdit_ = labelled_button(tr("Cancel edit"), QStringLiteral("cancelEditButton"), tr("Cancel editing the message"), this);
    cancelEdit_->hide();
    editRow->addWidget(editBanner_, 1);
    editRow->addWidget(cancelEdit_);
    layout->addLayout(editRow);

    input_ = new QPlainTextEdit(this);
    input_->setObjectName(QStringLiteral("input"));
    input_->setPlaceholderText(tr("Message (Ctrl+Enter to send)"));
    input_->setAccessibleName(tr("Message"));
    input_->setTabChangesFocus(true);  // Tab moves on to the buttons, as in every other field
    // Three lines: enough to write in, and the transcript keeps the height (it scrolls beyond).
    input_->setFixedHeight(input_->fontMetrics().lineSpacing() * 3 + 2 * input_->frameWidth() + 8);
    input_->installEventFilter(this);  // Ctrl+Enter sends from inside the box (it would insert a line break)
    layout->addWidget(input_);

    auto* row = new QHBoxLayout;
    context_ = new ContextGauge(this);
    row->addWidget(context_, 1);
    auto* raw = labelled_button(tr("Raw prompt"), QStringLiteral("rawPromptButton"),
                                tr("Show the prompt exactly as the model reads it"), this);
    regenerate_ = labelled_button(tr("Regenerate"), QStringLiteral("regenerateButton"),
                                  tr("Write the last reply again (the old one is kept)"), this);
    stop_ = labelled_button(tr("Stop"), QStringLiteral("stopButton"), tr("Stop the reply"), this);
    send_ = labelled_button(tr("Send"), QStringLiteral("sendButton"), tr("Send the message (Ctrl+Enter)"), this);
    // A QShortcut, not the button's: a button shortcut clicks 100 ms later (animateClick), by
    // when another conversation may be shown, and the message would land there.
    for (const QKeySequence& keys : {QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)}) {
        auto* shortcut = new QShortcut(keys, this, nullptr, nullptr, Qt::WidgetWithChildrenShortcut);
        connect(shortcut, &QShortcut::activated, this, [this] {
            if (send_->isEnabled()) submit();
        });
    }
    send_->setDefault(true);
    for (QPushButton* b : {raw, regenerate_, stop_, send_}) row->addWidget(b);
    layout->addLayout(row);

    connect(send_, &QPushButton::clicked, this, &ChatPanel::submit);
    connect(stop_, &QPushButton::clicked, this, &ChatPanel::stop);
    connect(regenerate_, &QPushButton::clicked, this, &ChatPanel::regenerate);
    connect(raw, &QPushButton::clicked, this, &ChatPanel::showRawPrompt);
    connect(cancelEdit_, &QPushButton::clicked, this, &ChatPanel::abandonEdit);
    connect(view_, &ChatView::editRequested, this, &ChatPanel::beginEdit);
    connect(view_, &ChatView::alternativeRequested, this, [this](int index, int delta) {
        const auto& entries = controller_->entries();
        if (index < 0 || index >= static_cast<int>(entries.size())) return;
        controller_->showVersion(index, entries[static_cast<size_t>(index)].version + delta);
    });
    connect(systemPrompt_, &QLineEdit::textChanged, controller_, &ChatController::setSystemPrompt);
    connect(info_, &QLabel::linkActivated, this, [this](const QString& link) {
        if (link == QLatin1String("load-model")) {
            const QString path = controller_->otherModelPath();
            if (!path.isEmpty()) emit loadModelRequested(path);
        } else if (link == QLatin1String("stop-reply")) {
            controller_->stop();
        } else if (link == QLatin1String("show-reply")) {
            controller_->openConversation(controller_->replyConversationId());
        }
    });

    connect(controller_, &ChatController::conversationChanged, this, &ChatPanel::rebuild);
    connect(controller_, &ChatController::entryAdded, this, [this](int index) {
        const ChatEntry& e = controller_->entries()[static_cast<size_t>(index)];
        view_->addMessage(e.role, e.content);
        syncEntry(index);
        if (index == 0) updateNotices();  // the model's "about" line is for the empty chat
    });
    connect(controller_, &ChatController::entryChanged, this, &ChatPanel::syncEntry);
    connect(controller_, &ChatController::entriesRemoved, this, [this](int from) {
        view_->removeFrom(from);
        if (editingIndex_ >= from) cancelEdit();
    });
    connect(controller_, &ChatController::replyStreamed, this,
            [this](int index, const QString& text, int, const TokenPieces& pieces) {
                const int shown = controller_->replyShownChars();
                view_->appendToLast(text, pieces, shown);
                // A tool call being written is held back; the card under the reply shows it at the end.
                const QString& content = controller_->entries()[static_cast<size_t>(index)].content;
                const bool writingCall = shown >= 0 && !content.mid(shown).trimmed().isEmpty();
                view_->setActivity(index, writingCall ? tr("writing a tool call…") : QString());
            });
    // The empty reply says what is happening until its first token: the prompt is being read.
    connect(controller_, &ChatController::promptProgress, this, [this](int processed, int total) {
        if (controller_->isReplyShown() && processed < total)
            view_->setActivity(controller_->replyIndex(),
                               tr("reading the prompt: %1 / %2 tokens…").arg(processed).arg(total));
    });
    connect(controller_, &ChatController::generatingChanged, this, [this](bool generating) {
        if (!generating)
            for (int i = 0; i < view_->count(); ++i) view_->setActivity(i, QString());
        updateButtons();
        updateNotices();  // the "a reply is being written in …" line comes and goes
    });
    connect(controller_, &ChatController::modelChanged, this, [this] {
        updateButtons();
        updateNotices();
    });
    const auto modelMoved = [this] {
        updateButtons();
        updateNotices();  // the empty chat's welcome says what is loading, or that nothing is
    };
    connect(controller_, &ChatController::modelLoading, this, modelMoved);
    connect(controller_, &ChatController::modelFailed, this, modelMoved);
    connect(controller_, &ChatController::switchQueued, this, &ChatPanel::updateButtons);
    connect(controller_, &ChatController::toolRoundChanged, this, [this] {
        updateButtons();
        updateNotices();
    });
    connect(controller_, &ChatController::contextChanged, this, &ChatPanel::updateGauge);
    connect(controller_, &ChatController::promptMeasured, this, &ChatPanel::updateNotices);
    connect(controller_, &ChatController::setupChanged, this, [this] {
        if (systemPrompt_->text() != controller_->setup().systemPrompt) systemPrompt_->setText(controller_->setup().systemPrompt);
        // Completion mode continues the texts as they are: there is no system prompt to give.
        systemPrompt_->setEnabled(controller_->setup().mode == PromptMode::Chat);
        context_->setPolicy(controller_->setup().contextPolicy);
        updateNotices();
    });
    connect(controller_, &ChatController::replyStarted, this, [this] {
        view_->setActivity(view_->count() - 1, tr("reading the prompt…"));
        error_.clear();  // a new reply is the answer to an old error
        updateNotices();
    });
    connect(controller_, &ChatController::replyFinished, this, [this](const ReplyStats& stats) {
        // A reply that ended in another conversation says so in the status bar, not over this one.
        if (controller_->lastReplyWasShown() && !stats.cancelled && stats.stopReason == StopReason::ContextFull)
            error_ = tr("The context is full (%1 tokens): the reply stopped there. Choose \"drop oldest turns\" or "
                        "\"sliding window\" under Prompt, or start a new conversation.")
                         .arg(stats.contextLength);
        updateNotices();
        emit replyFinished(stats);
    });
    connect(controller_, &ChatController::replyFailed, this, [this](const QString& message) {
        if (controller_->lastReplyWasShown()) error_ = message;
        updateNotices();
        emit replyFailed(message);
    });
    updateButtons();
    updateNotices();
}

void ChatPanel::updateGauge(int used, int length) {
    // While a reply streams here, the part past the prompt it was sent with is the reply's.
    const int prompt = used < 0 ? -1 : controller_->isReplyShown() ? std::min(used, controller_->lastSentPrompt().promptTokens) : used;
    context_->setUsage(prompt, used < 0 ? 0 : used - prompt, length);
    context_->setCountedByServer(controller_->onEndpoint());
}

bool ChatPanel::eventFilter(QObject* watched, QEvent* event) {
    // Esc in the input leaves edit mode (issue 37). The window's Chat > Stop owns Esc as a
    // shortcut: while editing, the input claims the key first, so it arrives as a key press.
    if (watched == input_ && event->type() == QEvent::ShortcutOverride && editingIndex_ >= 0 &&
        static_cast<QKeyEvent*>(event)->key() == Qt::Key_Escape) {
        event->accept();
        return true;
    }
    if (watched == input_ && event->type() == QEvent::KeyPress) {
        const auto* key = static_cast<QKeyEvent*>(event);
        if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) && (key->modifiers() & Qt::ControlModifier)) {
            if (send_->isEnabled()) submit();
            return true;
        }
        if (key->key() == Qt::Key_Escape && editingIndex_ >= 0) {
            abandonEdit();
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

bool ChatPanel::send(const QString& text) { return controller_->send(text); }
void ChatPanel::stop() { controller_->stop(); }
bool ChatPanel::regenerate() { return controller_->regenerate(); }
bool ChatPanel::editAndResend(int index, const QString& newText) { return controller_->editAndResend(index, newText); }
void ChatPanel::newConversation() { controller_->newConversation(); }
bool ChatPanel::openConversation(qint64 id) { return controller_->openConversation(id); }
qint64 ChatPanel::conversationId() const { return controller_->conversationId(); }
bool ChatPanel::isGenerating() const { return controller_->isGenerating(); }
bool ChatPanel::modelReady() const { return controller_->modelReady(); }
const RenderedPrompt& ChatPanel::lastPrompt() const { return controller_->lastSentPrompt(); }
QString ChatPanel::contextText() const { return context_->text(); }

QString ChatPanel::replyElsewhereText() const {
    if (!controller_->isGenerating() || controller_->isReplyShown()) return {};
    constexpr int kReplyTitleChars = 60;
    const QString title = controller_->replyConversationTitle(kReplyTitleChars).toHtmlEscaped();
    return tr("A reply is being written in %1: <a href=\"show-reply\">show it</a> or <a href=\"stop-reply\">stop it</a>. "
              "You can send here once it ends.")
        .arg(title);
}

QString ChatPanel::welcomeText() const { return view_->welcomeText(); }

QString ChatPanel::noticeText() const {
    QStringList lines;
    for (const QLabel* label : {systemNote_, info_, notice_, editBanner_})
        if (!label->isHidden()) lines << QTextDocumentFragment::fromHtml(label->text()).toPlainText();
    return lines.join(u'\n');
}

void ChatPanel::submit() {
    const QString text = input_->toPlainText().trimmed();
    const bool sent = editingIndex_ >= 0 ? controller_->editAndResend(editingIndex_, text) : controller_->send(text);
    if (!sent) return;
    input_->clear();
    cancelEdit();
}

void ChatPanel::beginEdit(int index) {
    const auto& entries = controller_->entries();
    if (controller_->isGenerating() || index < 0 || index >= static_cast<int>(entries.size()) ||
        entries[static_cast<size_t>(index)].role != QLatin1String("user"))
        return;
    if (editingIndex_ >= 0 && editingIndex_ < view_->count()) view_->setEditing(editingIndex_, false);
    if (editingIndex_ < 0) draftBeforeEdit_ = input_->toPlainText();
    editingIndex_ = index;
    view_->setEditing(index, true);
    input_->setPlainText(entries[static_cast<size_t>(index)].content);
    input_->setFocus();
    const int later = static_cast<int>(entries.size()) - index - 1;
    editBanner_->setText(later > 0 ? tr("<b>Editing message %1.</b> Sending replaces it and deletes the %n later "
                                        "message(s).", nullptr, later)
                                         .arg(index + 1)
                                   : tr("<b>Editing message %1.</b> Sending replaces it.").arg(index + 1));
    editBanner_->show();
    cancelEdit_->show();
    send_->setText(tr("Send edit"));
}

void ChatPanel::abandonEdit() {
    if (editingIndex_ < 0) return;
    const QString draft = draftBeforeEdit_;
    cancelEdit();
    input_->setPlainText(draft);
}

void ChatPanel::cancelEdit() {
    if (editingIndex_ < 0) return;
    draftBeforeEdit_.clear();
    if (editingIndex_ < view_->count()) view_->setEditing(editingIndex_, false);
    editingIndex_ = -1;
    editBanner_->hide();
    cancelEdit_->hide();
    send_->setText(tr("Send"));
}

void ChatPanel::rebuild() {
    cancelEdit();
    error_.clear();
    view_->clearMessages();
    const auto& entries = controller_->entries();
    for (size_t i = 0; i < entries.size(); ++i) {
        view_->addMessage(entries[i].role, entries[i].content);
        syncEntry(static_cast<int>(i));
    }
    // Back in the conversation a reply streams into: it says it is still being written.
    if (controller_->isReplyShown() && entries[size_t(controller_->replyIndex())].content.isEmpty())
        view_->setActivity(controller_->replyIndex(), tr("reading the prompt…"));
    updateNotices();
    updateButtons();
}

void ChatPanel::syncEntry(int index) {
    const auto& entries = controller_->entries();
    if (index < 0 || index >= static_cast<int>(entries.size()) || index >= view_->count()) return;
    const ChatEntry& e = entries[static_cast<size_t>(index)];
    if (view_->card(index)->text() != e.content) view_->setMessageText(index, e.content);
    view_->setStopped(index, e.stopped);
    view_->setReplyFormat(index, e.replyFormat);
    // Only the streaming reply holds text back (a call being written); a finished one shows all.
    const bool streaming = controller_->isGenerating() && index == controller_->replyIndex();
    view_->card(index)->setShownLength(streaming ? controller_->replyShownChars() : -1);
    view_->setToolsNote(index, e.toolsNote);
    if (e.role == QLatin1String("tool")) {
        // Which tool answered (its name travels in the message's extra fields).
        const QString tool = QJsonDocument::fromJson(e.extraJson.toUtf8()).object().value(QStringLiteral("name")).toString();
        view_->card(index)->setHeading(tool.isEmpty() ? e.role : tr("tool · %1").arg(tool));
    }
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
    // A reply a server wrote names it (issue 34): a conversation can go between local models and servers.
    if (e.role == QLatin1String("assistant") && is_endpoint_identity(e.modelPath))
        view_->card(index)->setHeading(tr("assistant · %1").arg(endpoint_identity_label(e.modelPath)));
#endif
    // A reply read back from the store can be incomplete (the app ended), and one a server cut.
    view_->setInterrupted(index, !e.complete, e.cutReason);
    view_->setAlternatives(index, e.version, static_cast<int>(e.versions.size()));
    view_->setEditing(index, index == editingIndex_);
    syncToolCards(index);
}

void ChatPanel::syncToolCards(int index) {
    const ChatEntry& e = controller_->entries()[static_cast<size_t>(index)];
    ChatMessageCard* card = view_->card(index);
    const quint64 serial = index == controller_->toolRoundIndex() ? controller_->toolRoundSerial() : 0;
    const std::vector<ToolCallCard*>& shown = card->toolCallCards();
    bool same = shown.size() == e.toolCalls.size() && card->toolRoundSerial() == serial;
    for (size_t i = 0; same && i < shown.size(); ++i) same = shown[i]->call().id == e.toolCalls[i].id;
    if (!same) {
        const bool hadFocus = isAncestorOf(QApplication::focusWidget());
        bool cardHadFocus = false;
        for (ToolCallCard* old : shown)
            cardHadFocus = cardHadFocus || old == QApplication::focusWidget() || old->isAncestorOf(QApplication::focusWidget());
        card->clearToolCallCards();
        card->setToolRoundSerial(serial);
        ToolRegistry* registry = toolRegistry_ ? toolRegistry_() : nullptr;
        for (const cflow::ToolCall& call : e.toolCalls) {
            auto* toolCard = new ToolCallCard(call, registry);
            card->addToolCallCard(toolCard);
            if (serial != 0) {
                connect(toolCard, &ToolCallCard::started, controller_,
                        [controller = controller_, serial](const cflow::ToolCall& running) {
                            controller->toolCallStarted(serial, running.id);
                        });
                connect(toolCard, &ToolCallCard::resolved, controller_,
                        [controller = controller_, serial](const cflow::ToolCall& decided, const ToolResult& result) {
                            controller->resolveToolCall(serial, decided.id, result);
                        });
            }
        }
        // The calls wait for the user: the keyboard goes to the first Approve (Tab reaches Deny).
        if (serial != 0 && hadFocus && !card->toolCallCards().empty()) card->toolCallCards().front()->approveButton()->setFocus();
        // The decided cards had the keyboard: it goes back to the message box, not nowhere.
        else if (serial == 0 && cardHadFocus) input_->setFocus();
    }
    if (serial != 0) return;
    const auto& entries = controller_->entries();
    for (ToolCallCard* toolCard : card->toolCallCards()) {
        QString answer;
        for (size_t i = static_cast<size_t>(index) + 1; i < entries.size(); ++i)
            if (entries[i].role == QLatin1String("tool") &&
                tool_result_call_id(entries[i].extraJson) == QString::fromStdString(toolCard->call().id))
                answer = entries[i].content;
        toolCard->showOutcome(answer);
    }
}

void ChatPanel::updateButtons() {
    const bool generating = controller_->isGenerating();
    const bool ready = controller_->modelReady() && !controller_->switchPending();
    const bool toolCalls = controller_->toolCallsPending();
    send_->setEnabled(!generating && ready && !toolCalls);
    // Stop here stops the reply shown here; one in another conversation is stopped from there
    // (or from its line above the transcript, or the conversation list).
    // Stop also ends a round of tool calls waiting for decisions (none of them runs).
    stop_->setEnabled((generating && controller_->isReplyShown()) || toolCalls);
    const auto& entries = controller_->entries();
    regenerate_->setEnabled(!generating && ready && !toolCalls && !entries.empty() && entries.back().role == QLatin1String("assistant"));
}

void ChatPanel::updateNotices() {
    const RenderedPrompt& prompt = controller_->visiblePrompt();
    systemNote_->setText(tr("The chat template ignores the system prompt: this model never sees it."));
    systemNote_->setVisible(prompt.systemIgnored && controller_->setup().mode == PromptMode::Chat);

    QStringList info;
    if (!storageNotice_.isEmpty()) info << storageNotice_.toHtmlEscaped();
    if (const QString elsewhere = replyElsewhereText(); !elsewhere.isEmpty()) info << elsewhere;
    const QString other = controller_->otherModelPath();
    const bool otherIsFile = !other.isEmpty() && !other.startsWith(QLatin1String("endpoint:"));
    const QString now = controller_->onEndpoint() ? controller_->model().name : QFileInfo(controller_->model().path).fileName();
    if (otherIsFile)
        info << tr("This conversation was made with <b>%1</b>; the replies now come from %2. "
                   "<a href=\"load-model\">Load %1</a>")
                    .arg(QFileInfo(other).fileName().toHtmlEscaped(), now.toHtmlEscaped());
    else if (!other.isEmpty())
        info << tr("This conversation was made through a server; the replies now come from %1.").arg(now.toHtmlEscaped());
    if (const QString tools = controller_->toolNotice(); !tools.isEmpty()) info << tools.toHtmlEscaped();
    if (prompt.droppedMessages > 0)
        info << tr("The %n oldest message(s) no longer fit in the context and are left out.", nullptr,
                   prompt.droppedMessages);
    else if (prompt.droppedTokens > 0)
        info << tr("Sliding window: the oldest %1 tokens no longer fit in the context and are left out.")
                    .arg(prompt.droppedTokens);
    view_->setWelcome(welcomeHtml());
    info_->setText(info.join(QStringLiteral("<br>")));
    info_->setVisible(!info.isEmpty());

    notice_->setText(error_.toHtmlEscaped());
    notice_->setVisible(!error_.isEmpty());
}

QString ChatPanel::welcomeHtml() const {
    const ModelInfo& model = controller_->model();
    if (controller_->isModelLoading() && !model.model) return tr("<b>Loading the model…</b>");
    if (controller_->onEndpoint())
        return tr("<b>%1</b> · a server writes the replies: it renders the conversation with its own template and "
                  "counts its tokens.<br>Type a message below and press Ctrl+Enter or Send. File › Open model… goes "
                  "back to a local model.")
            .arg(model.name.toHtmlEscaped());
    if (!model.model)
        return tr("<b>No model is open.</b><br>File › Open model… (Ctrl+O) opens a .cflow file; File › Bundled "
                  "models… lists the models installed with cflow studio; File › Convert model… turns a GGUF, a "
                  "Hugging Face folder or a llama2.c checkpoint into one.");
    QString html = tr("<b>%1</b> · context %2 tokens · %3")
                       .arg(model.name.toHtmlEscaped())
                       .arg(model.contextLength)
                       .arg(QLocale().formattedDataSize(qint64(model.fileBytes)));
    if (!modelPurpose_.isEmpty()) html += tr("<br><b>About this model:</b> %1").arg(modelPurpose_.toHtmlEscaped());
    if (controller_->setup().mode == PromptMode::Completion)
        html += tr("<br>Completion mode: the model continues the text you write (it has no chat template, or "
                   "the Prompt tab chose this). Type the start of a text and press Ctrl+Enter or Send.");
    else
        html += tr("<br>Type a message below and press Ctrl+Enter or Send. A system prompt above sets the "
                   "model's role.");
    html += tr("<br>While it answers, the inspector shows the read bandwidth, which experts each layer routes "
               "to and where the time goes; click a word of the reply to find its token there.");
    return html;
}

void ChatPanel::setStorageNotice(const QString& notice) {
    storageNotice_ = notice;
    updateNotices();
}

void ChatPanel::setModelPurpose(const QString& purpose) {
    modelPurpose_ = purpose;
    updateNotices();
}

void ChatPanel::showRawPrompt() {
    auto* dialog = new QDialog(this);
    dialog->setObjectName(QStringLiteral("rawPromptDialog"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(tr("Raw prompt"));
    const RenderedPrompt& prompt = controller_->visiblePrompt();
    QString source;
    if (prompt.byServer) source = tr("The server renders this conversation with its own chat template and counts its "
                                     "tokens; this is the request sent to it.");
    else if (prompt.completion) source = tr("Completion mode: the texts joined as they are, no template.");
    else if (prompt.kind == TemplateKind::Model) source = tr("Rendered with the chat template.");
    else source = tr("Rendered with the fallback template: %1").arg(prompt.templateNote);
    auto* label = new QLabel(prompt.byServer ? source
                             : prompt.text.isEmpty()
                                 ? tr("The conversation is empty.")
                                 : source + tr(" %1 tokens, %2 already in the cache.").arg(prompt.promptTokens).arg(prompt.reusedTokens),
                             dialog);
    label->setObjectName(QStringLiteral("rawPromptSummary"));
    label->setWordWrap(true);
    auto* layout = new QVBoxLayout(dialog);
    layout->addWidget(label);
    auto* text = new QPlainTextEdit(prompt.text, dialog);
    text->setReadOnly(true);
    text->setFont(fixed_pitch_font());
    layout->addWidget(text);
    dialog->resize(640, 420);
    dialog->show();
}

} // namespace cflow::ui
