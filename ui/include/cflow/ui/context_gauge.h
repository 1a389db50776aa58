#pragma once
// The context gauge under the chat input: one bar in three parts — the prompt as the model
// reads it, the reply streaming into it, the free rest — with "Context: used / length tokens"
// written on it. The numbers are the engine's (ChatController::contextChanged and the prompt it
// measured); the tooltip says what happens when the bar is full under the conversation's policy.
#include <QString>
#include <QWidget>

#include "cflow/ui/chat_types.h"

namespace cflow::ui {

class ContextGauge : public QWidget {
    Q_OBJECT
public:
    explicit ContextGauge(QWidget* parent = nullptr);

    // promptTokens + replyTokens of contextTokens are used. contextTokens 0: no model. A negative
    // promptTokens: not measured yet (the engine is busy with a reply in another conversation).
    void setUsage(int promptTokens, int replyTokens, int contextTokens);
    void setPolicy(ContextPolicy policy);
    // Replies come from a server (issue 34): it counts the tokens; the figure is its last usage.
    void setCountedByServer(bool byServer);

    int promptTokens() const { return promptTokens_; }
    int replyTokens() const { return replyTokens_; }
    int contextTokens() const { return contextTokens_; }
    QString text() const { return text_; }  // what the bar says, e.g. "Context: 312 / 512 tokens"

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    bool countedByServer_ = false;
    void refresh();

    int promptTokens_ = 0;
    int replyTokens_ = 0;
    int contextTokens_ = 0;
    ContextPolicy policy_ = ContextPolicy::DropOldest;
    QString text_;
    int hintWidthPx_ = -1;  // sizeHint().width() when the layout was last asked
};

} // namespace cflow::ui
