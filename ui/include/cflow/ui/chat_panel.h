#pragma once
// The chat as the user sees it: the transcript, the input, Send / Stop / Regenerate, the
// system prompt, the context gauge and the notices (context full, a template that ignores
// the system prompt, turns left out of the context, a conversation made with another model,
// the message being edited). Everything it shows comes from the ChatController; everything
// the user does goes to it.
#include <functional>

#include <QString>
#include <QWidget>

#include "cflow/ui/chat_types.h"

class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;

namespace cflow::ui {

class ChatController;
class ChatView;
class ContextGauge;
class ToolRegistry;

class ChatPanel : public QWidget {
    Q_OBJECT
public:
    ChatPanel(ChatController* controller, QWidget* parent = nullptr);
    // The shown conversation's tools: a reply's tool-call cards run the approved calls through it.
    using ToolRegistrySource = std::function<ToolRegistry*()>;
    void setToolRegistrySource(ToolRegistrySource source) { toolRegistry_ = std::move(source); }

    // Shorthands for the controller's own calls (tests and the self-test drive the panel).
    bool send(const QString& text);
    void stop();
    bool regenerate();
    bool editAndResend(int index, const QString& newText);
    void newConversation();
    bool openConversation(qint64 id);
    qint64 conversationId() const;
    bool isGenerating() const;
    bool modelReady() const;
    const RenderedPrompt& lastPrompt() const;

    // The input box's edit mode: the next Send replaces user message index and drops what follows.
    void beginEdit(int index);
    void cancelEdit();
    // Esc or "Cancel edit": leaves edit mode and gives the input back the draft it held before.
    void abandonEdit();
    int editingIndex() const { return editingIndex_; }

    ChatView* view() const { return view_; }
    QLineEdit* systemPromptField() const { return systemPrompt_; }
    QPlainTextEdit* input() const { return input_; }
    QPushButton* sendButton() const { return send_; }
    QString contextText() const;
    ContextGauge* contextGauge() const { return context_; }
    QString noticeText() const;
    QString welcomeText() const;  // what the empty conversation shows ("" once there is a message)        // the visible notices, one per line ("" when none)
    void showRawPrompt();
    // What the loaded model is for (its card's first paragraph): shown while the chat is empty.
    void setModelPurpose(const QString& purpose);
    // Where the conversations are kept when that is not the usual database (a read-only copy, a
    // damaged file moved aside): shown above every conversation while it holds; "" hides it.
    void setStorageNotice(const QString& notice);

signals:
    void replyFinished(const cflow::ui::ReplyStats& stats);
    void replyFailed(const QString& message);
    // "Load <model>" under a conversation made with another model: the window opens it as any
    // other model (header, card, and the question when a reply streams).
    void loadModelRequested(const QString& path);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void rebuild();
    void syncEntry(int index);
    // A reply's calls as cards under it: waiting ones while its round waits, else read-only with
    // the answer the model got (the tool message after it).
    void syncToolCards(int index);
    void updateButtons();
    void updateNotices();
    void updateGauge(int used, int length);
    QString replyElsewhereText() const;
    QString welcomeHtml() const;  // the empty conversation's text: the model, how to send  // rich text; empty unless a reply streams in another conversation
    void submit();

    ChatController* controller_;
    ChatView* view_;
    QPlainTextEdit* input_;
    QLineEdit* systemPrompt_;
    QLabel* systemNote_;
    QPushButton* send_;
    QPushButton* stop_;
    QPushButton* regenerate_;
    ContextGauge* context_;
    QLabel* notice_;       // errors and context full, cleared by the next reply
    QLabel* info_;         // other model, dropped turns: follows the conversation
    QString storageNotice_;
    QLabel* editBanner_;
    QPushButton* cancelEdit_;
    QString error_;
    QString modelPurpose_;
    ToolRegistrySource toolRegistry_;
    int editingIndex_ = -1;
    QString draftBeforeEdit_;  // the input's text when editing began
};

} // namespace cflow::ui
