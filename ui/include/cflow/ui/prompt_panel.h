#pragma once
// How a conversation becomes a prompt: chat or completion mode, which chat template renders
// it (the model's own, a built-in, or custom Jinja, each with a preview), and what happens
// when it outgrows the context (stop, drop the oldest turns, sliding window), and whether a
// thinking model reasons first (enable_thinking, offered when the template reads it), and what a
// reply must be (free text, one JSON object, JSON under a schema: grammar-constrained). It edits the
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
    QComboBox* replyFormatBox() const { return format_; }
    QComboBox* toolChoiceBox() const { return toolChoice_; }
    QPushButton* schemaButton() const { return schema_; }
    // Why the chosen format could not be used ("" when it can), shown under the box.
    QString replyFormatError() const;
    // The preview / custom-template dialog (non-modal; objectName "templateDialog").
    void showTemplateDialog();
    // The JSON Schema dialog (non-modal, objectName "schemaDialog"); OK makes its schema the format.
    void showSchemaDialog();

private:
    void sync();
    void applyTemplateIndex(int index);
    void applyFormatIndex(int index);
    QString sourceOf(int index) const;

    ChatController* controller_;
    QComboBox* mode_;
    QComboBox* template_;
    QComboBox* policy_;
    QComboBox* thinking_;
    QComboBox* format_;
    QComboBox* toolChoice_;
    QPushButton* schema_;
    QLabel* formatError_;
    QString formatErrorText_;  // a refusal of the last choice; the controller's own reason otherwise
    QLabel* note_;
    QPushButton* preview_;
};

// A sample conversation rendered with template source (or the interpreter's error).
QString render_template_preview(const QString& source, bool& ok);

} // namespace cflow::ui
