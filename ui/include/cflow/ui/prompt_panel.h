#pragma once
// How a conversation becomes a prompt: chat or completion mode, which chat template renders
// it (the model's own, a built-in, or custom Jinja, each with a preview), and what happens
// when it outgrows the context (stop, drop the oldest turns, sliding window), and whether a
// thinking model reasons first (enable_thinking, offered when the template reads it). It edits the
// ChatController's setup of the shown conversation and follows it when that changes.
#include <QWidget>

class QComboBox;
class QLabel;
class QPushButton;

namespace cflow::ui {

class ChatController;

class PromptPanel : public QWidget {
    Q_OBJECT
public:
    explicit PromptPanel(ChatController* controller, QWidget* parent = nullptr);

    QComboBox* modeBox() const { return mode_; }
    QComboBox* templateBox() const { return template_; }
    QComboBox* policyBox() const { return policy_; }
    QComboBox* thinkingBox() const { return thinking_; }
    // The preview / custom-template dialog (non-modal; objectName "templateDialog").
    void showTemplateDialog();

private:
    void sync();
    void applyTemplateIndex(int index);
    QString sourceOf(int index) const;

    ChatController* controller_;
    QComboBox* mode_;
    QComboBox* template_;
    QComboBox* policy_;
    QComboBox* thinking_;
    QLabel* note_;
    QPushButton* preview_;
};

// A sample conversation rendered with template source (or the interpreter's error).
QString render_template_preview(const QString& source, bool& ok);

} // namespace cflow::ui
