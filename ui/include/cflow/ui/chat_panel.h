#pragma once
// The chat itself: message view, input, Send / Stop / Regenerate, system prompt, the raw
// prompt viewer and the context gauge. It drives the EngineWorker through queued calls
// and persists every message through the ConversationStore as it completes (the reply
// row is inserted when it starts and updated as it streams).
#include <QString>
#include <QWidget>

#include "cflow/base/result.h"
#include "cflow/ui/chat_types.h"
#include "cflow/ui/token_spans.h"

class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;

namespace cflow::ui {

class ChatView;
class ConversationStore;
class EngineWorker;
class SamplingPanel;

class ChatPanel : public QWidget {
    Q_OBJECT
public:
    ChatPanel(EngineWorker* worker, ConversationStore* store, SamplingPanel* sampling, QWidget* parent = nullptr);

    // Sends text as the next user message (starting a conversation when none is open).
    // False when no model is ready, a reply is streaming or text is empty.
    bool send(const QString& text);
    void stop();
    bool regenerate();  // replaces the last reply, sampling with the next seed
    // Drops user message `index` and everything after it, then sends newText in its place.
    bool editAndResend(int index, const QString& newText);

    void newConversation();
    bool openConversation(qint64 id);
    qint64 conversationId() const { return conversationId_; }

    void setModelPath(const QString& path) { modelPath_ = path; }
    bool isGenerating() const { return generating_; }
    bool modelReady() const { return modelReady_; }
    const RenderedPrompt& lastPrompt() const { return lastPrompt_; }
    ChatView* view() const { return view_; }
    QLineEdit* systemPromptField() const { return systemPrompt_; }
    QString contextText() const;
    void showRawPrompt();

signals:
    void conversationChanged(qint64 id);  // created, opened or cleared (0)
    void replyFinished(const cflow::ui::ReplyStats& stats);
    void replyFailed(const QString& message);
    void storeError(const QString& message);

private:
    void onModelLoaded(const ModelInfo& info);
    void onPrompt(const RenderedPrompt& prompt);
    void onTokens(const QString& text, const TokenPieces& pieces);
    void onFinished(const ReplyStats& stats);
    void onError(const QString& message);
    void startReply(int seedOffset);
    Conversation history() const;
    void setGenerating(bool on);
    void updateContextLabel(int used, int max);
    bool check(const Status& status);
    QString settingsJson() const;

    EngineWorker* worker_;
    ConversationStore* store_;
    SamplingPanel* sampling_;
    ChatView* view_;
    QPlainTextEdit* input_;
    QLineEdit* systemPrompt_;
    QPushButton* send_;
    QPushButton* stop_;
    QPushButton* regenerate_;
    QLabel* context_;
    QLabel* notice_;

    struct Entry {
        QString role;
        QString content;
        qint64 rowId = 0;
    };
    std::vector<Entry> entries_;  // the open conversation, mirrored by view_
    qint64 conversationId_ = 0;
    QString modelPath_;
    bool modelReady_ = false;
    bool generating_ = false;
    int editingIndex_ = -1;  // user message being edited through the input box
    int regenerations_ = 0;
    int contextLength_ = 0;
    RenderedPrompt lastPrompt_;
};

} // namespace cflow::ui
