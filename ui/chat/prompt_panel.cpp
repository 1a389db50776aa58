#include "cflow/ui/prompt_panel.h"

#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "cflow/engine/chat/builtin_templates.h"
#include "cflow/engine/chat/chat_template.h"
#include "cflow/ui/fixed_font.h"
#include "cflow/ui/chat_controller.h"
#include "cflow/ui/schema_dialog.h"

namespace cflow::ui {
namespace {

constexpr int kModelTemplate = 0;  // template box: 0 = the model's own, then the built-ins, then Custom
const QString kCustomData = QStringLiteral("custom");
constexpr int kThinkingDefault = 0, kThinkingOn = 1, kThinkingOff = 2;  // thinking box data

int builtin_count() { return static_cast<int>(builtin_chat_templates().size()); }

} // namespace

QString render_template_preview(const QString& source, bool& ok) {
    ok = false;
    auto compiled = ChatTemplate::compile(source.toStdString());
    if (!compiled) return QString::fromStdString(compiled.error());
    const std::vector<ChatMessage> sample = {{"system", "You are a helpful assistant.", ""},
                                             {"user", "Hello!", ""},
                                             {"assistant", "Hi! How can I help?", ""},
                                             {"user", "Tell me a story.", ""}};
    TemplateOptions options;
    options.bos_token = "<s>";
    options.eos_token = "</s>";
    auto rendered = compiled->render(sample, options);
    if (!rendered) return QString::fromStdString(rendered.error());
    ok = true;
    return QString::fromStdString(*rendered);
}

PromptPanel::PromptPanel(ChatController* controller, QWidget* parent) : QWidget(parent), controller_(controller) {
    auto* form = new QFormLayout(this);
    form->setRowWrapPolicy(QFormLayout::WrapLongRows);
    mode_ = new QComboBox(this);
    mode_->setObjectName(QStringLiteral("promptMode"));
    mode_->setAccessibleName(tr("Prompt mode"));
    mode_->addItem(tr("Chat (turns through a template)"));
    mode_->addItem(tr("Completion (continue the text)"));
    form->addRow(tr("Mode"), mode_);

    template_ = new QComboBox(this);
    template_->setObjectName(QStringLiteral("chatTemplate"));
    template_->setAccessibleName(tr("Chat template"));
    template_->addItem(tr("The model's own"));
    for (const BuiltinTemplate& t : builtin_chat_templates())
        template_->addItem(QString::fromUtf8(t.label.data(), qsizetype(t.label.size())),
                           QString::fromUtf8(t.name.data(), qsizetype(t.name.size())));
    template_->addItem(tr("Custom Jinja…"), kCustomData);
    template_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    template_->setMinimumContentsLength(12);
    preview_ = new QPushButton(tr("Preview…"), this);
    preview_->setAccessibleName(tr("Preview or edit the chat template"));
    auto* templateRow = new QHBoxLayout;
    templateRow->addWidget(template_, 1);
    templateRow->addWidget(preview_);
    form->addRow(tr("Template"), templateRow);

    policy_ = new QComboBox(this);
    policy_->setObjectName(QStringLiteral("contextPolicy"));
    policy_->setAccessibleName(tr("When the context is full"));
    policy_->addItem(tr("Stop"), int(ContextPolicy::Stop));
    policy_->addItem(tr("Drop oldest turns"), int(ContextPolicy::DropOldest));
    policy_->addItem(tr("Sliding window"), int(ContextPolicy::SlidingWindow));
    policy_->setToolTip(tr("Stop: the reply ends when the context is full. Drop oldest turns: the oldest messages "
                           "(never the system prompt) are left out. Sliding window: the oldest tokens are cut. With "
                           "either, a reply that fills the context keeps going: the oldest tokens after the system "
                           "prompt are dropped and the rest is read again (a context shift)."));
    form->addRow(tr("Context full"), policy_);
    thinking_ = new QComboBox(this);
    thinking_->setObjectName(QStringLiteral("thinking"));
    thinking_->setAccessibleName(tr("Thinking"));
    thinking_->addItem(tr("Template default"), kThinkingDefault);
    thinking_->addItem(tr("Think first"), kThinkingOn);
    thinking_->addItem(tr("Answer directly"), kThinkingOff);
    form->addRow(tr("Thinking"), thinking_);
    format_ = new QComboBox(this);
    format_->setObjectName(QStringLiteral("replyFormat"));
    format_->setAccessibleName(tr("Reply format"));
    format_->addItem(reply_format_label(ReplyFormatKind::FreeText), int(ReplyFormatKind::FreeText));
    format_->addItem(reply_format_label(ReplyFormatKind::JsonObject), int(ReplyFormatKind::JsonObject));
    format_->addItem(reply_format_label(ReplyFormatKind::JsonSchema) + QStringLiteral("…"), int(ReplyFormatKind::JsonSchema));
    format_->setToolTip(tr("JSON object: every reply is one JSON object. JSON Schema: every reply is JSON valid under "
                           "the schema you give. The model can only pick tokens that keep the reply valid."));
    schema_ = new QPushButton(tr("Schema…"), this);
    schema_->setObjectName(QStringLiteral("editSchema"));
    schema_->setAccessibleName(tr("Edit the JSON Schema replies follow"));
    auto* formatRow = new QHBoxLayout;
    formatRow->addWidget(format_, 1);
    formatRow->addWidget(schema_);
    form->addRow(tr("Reply format"), formatRow);
    toolChoice_ = new QComboBox(this);
    toolChoice_->setObjectName(QStringLiteral("toolChoice"));
    toolChoice_->setAccessibleName(tr("Tool calls"));
    toolChoice_->addItem(tr("The model decides"), tool_choice_key({}));
    toolChoice_->addItem(tr("Must call a tool"), tool_choice_key({cflow::ToolChoice::Kind::Required, {}}));
    toolChoice_->setToolTip(tr("Must call a tool: the first reply to each message is a call of one of the "
                               "conversation's tools (Tools > Chat tools…), written in the template's call syntax; "
                               "the reply after the results is free. Needs a chat template that can call tools."));
    form->addRow(tr("Tool calls"), toolChoice_);
    formatError_ = new QLabel(this);
    formatError_->setObjectName(QStringLiteral("replyFormatError"));
    formatError_->setWordWrap(true);
    formatError_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    form->addRow(formatError_);
    note_ = new QLabel(this);
    note_->setObjectName(QStringLiteral("templateNote"));
    note_->setWordWrap(true);
    form->addRow(note_);

    connect(mode_, &QComboBox::activated, this, [this](int index) {
        controller_->setMode(index == 1 ? PromptMode::Completion : PromptMode::Chat);
    });
    connect(template_, &QComboBox::activated, this, &PromptPanel::applyTemplateIndex);
    connect(policy_, &QComboBox::activated, this, [this](int index) {
        controller_->setContextPolicy(static_cast<ContextPolicy>(policy_->itemData(index).toInt()));
    });
    connect(thinking_, &QComboBox::activated, this, [this](int index) {
        const int choice = thinking_->itemData(index).toInt();
        controller_->setThinking(choice == kThinkingDefault ? std::optional<bool>() : std::optional<bool>(choice == kThinkingOn));
    });
    connect(preview_, &QPushButton::clicked, this, &PromptPanel::showTemplateDialog);
    connect(format_, &QComboBox::activated, this, &PromptPanel::applyFormatIndex);
    connect(toolChoice_, &QComboBox::activated, this, [this](int index) {
        controller_->setToolChoice(tool_choice_from_key(toolChoice_->itemData(index).toString()));
    });
    connect(controller_, &ChatController::conversationChanged, this, [this] { formatErrorText_.clear(); });
    connect(schema_, &QPushButton::clicked, this, &PromptPanel::showSchemaDialog);
    connect(controller_, &ChatController::setupChanged, this, &PromptPanel::sync);
    connect(controller_, &ChatController::modelChanged, this, &PromptPanel::sync);
    connect(controller_, &ChatController::promptMeasured, this, &PromptPanel::sync);
    sync();
}

void PromptPanel::applyTemplateIndex(int index) {
    if (template_->itemData(index).toString() == kCustomData) {
        showTemplateDialog();  // a custom template is chosen by writing one
        sync();
        return;
    }
    if (index == kModelTemplate) controller_->setTemplateChoice({});
    else controller_->setTemplateChoice({TemplateChoice::Kind::Builtin, template_->itemData(index).toString().toStdString()});
}

void PromptPanel::applyFormatIndex(int index) {
    const auto kind = static_cast<ReplyFormatKind>(format_->itemData(index).toInt());
    if (kind == ReplyFormatKind::JsonSchema) {
        showSchemaDialog();  // a schema format is chosen by giving a schema
        sync();
        return;
    }
    const Status status = controller_->setReplyFormat({kind, QString()});
    formatErrorText_ = status ? QString() : QString::fromStdString(status.error());
    sync();
}

QString PromptPanel::replyFormatError() const { return formatError_->isVisible() ? formatError_->text() : QString(); }

void PromptPanel::showSchemaDialog() {
    auto* dialog = new SchemaDialog(controller_->setup().replyFormat.schema, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog] {
        const Status status = controller_->setReplyFormat({ReplyFormatKind::JsonSchema, dialog->schema()});
        formatErrorText_ = status ? QString() : QString::fromStdString(status.error());
        sync();
    });
    dialog->show();
}

QString PromptPanel::sourceOf(int index) const {
    if (index == kModelTemplate)
        return controller_->model().model ? QString::fromStdString(controller_->model().model->chat_template()) : QString();
    if (index >= 1 && index <= builtin_count()) {
        const std::string_view source = builtin_chat_templates()[static_cast<size_t>(index - 1)].source;
        return QString::fromUtf8(source.data(), qsizetype(source.size()));
    }
    return QString::fromStdString(controller_->setup().templateChoice.kind == TemplateChoice::Kind::Custom
                                      ? controller_->setup().templateChoice.value
                                      : std::string());
}

void PromptPanel::sync() {
    const ConversationSetup& setup = controller_->setup();
    mode_->setCurrentIndex(setup.mode == PromptMode::Completion ? 1 : 0);
    int index = kModelTemplate;
    if (setup.templateChoice.kind == TemplateChoice::Kind::Custom) {
        index = template_->count() - 1;
    } else if (setup.templateChoice.kind == TemplateChoice::Kind::Builtin) {
        const int found = template_->findData(QString::fromStdString(setup.templateChoice.value));
        if (found > 0) index = found;
    }
    template_->setCurrentIndex(index);
    policy_->setCurrentIndex(policy_->findData(int(setup.contextPolicy)));
    const bool chat = setup.mode == PromptMode::Chat;
    template_->setEnabled(chat);
    thinking_->setCurrentIndex(thinking_->findData(!setup.thinking ? kThinkingDefault : *setup.thinking ? kThinkingOn : kThinkingOff));
    // Only templates that read enable_thinking (Qwen3, SmolLM3) have a switch to set.
    const bool reads_thinking = chat && sourceOf(index).contains(QLatin1String("enable_thinking"));
    thinking_->setEnabled(reads_thinking);
    thinking_->setToolTip(reads_thinking ? tr("Think first: the model reasons (folded under \"Show thinking\") before it answers. "
                                              "Answer directly: the template tells it to skip the reasoning.")
                                         : tr("This chat template has no thinking switch (enable_thinking)."));
    QString note;
    if (controller_->onEndpoint())
        note = tr("A server writes the replies: it renders the conversation with its own chat template, so the "
                  "template, mode and context policy chosen here do not apply to them.");
    else if (!chat) note = tr("Completion: the messages are joined as one text and continued; no template, no system prompt.");
    else if (index == kModelTemplate && controller_->model().model && !controller_->model().hasChatTemplate) {
        // The engine's note only adds something when the model has a template that was refused
        // (issue 37: "no chat template (the model has no chat template)").
        const QString reason = controller_->model().templateNote;
        const bool absent = reason.isEmpty() || controller_->model().model->chat_template().empty();
        note = absent ? tr("This model has no chat template: replies use the plain \"role: content\" fallback. Choose a "
                           "built-in template or Completion mode.")
                      : tr("This model's chat template cannot be used (%1): replies use the plain \"role: content\" "
                           "fallback. Choose a built-in template or Completion mode.")
                            .arg(reason);
    }
    else if (controller_->visiblePrompt().systemIgnored)
        note = tr("This template ignores the system prompt.");
    note_->setText(note);
    note_->setVisible(!note.isEmpty());

    format_->setCurrentIndex(format_->findData(int(setup.replyFormat.kind)));
    // A named tool (set by code, not offered here) shows as its own entry.
    const QString choiceKey = tool_choice_key(setup.toolChoice);
    if (toolChoice_->findData(choiceKey) < 0)
        toolChoice_->addItem(tr("Must call %1").arg(QString::fromStdString(setup.toolChoice.name)), choiceKey);
    toolChoice_->setCurrentIndex(toolChoice_->findData(choiceKey));
    toolChoice_->setEnabled(chat);
    schema_->setVisible(setup.replyFormat.kind == ReplyFormatKind::JsonSchema || !setup.replyFormat.schema.isEmpty());
    QString formatError = formatErrorText_;
    if (formatError.isEmpty() && !controller_->replyFormatError().isEmpty())
        formatError = tr("The conversation's schema cannot be used, replies are free text: %1").arg(controller_->replyFormatError());
    formatError_->setText(formatError);
    formatError_->setVisible(!formatError.isEmpty());
}

void PromptPanel::showTemplateDialog() {
    const int index = template_->currentIndex();
    const bool custom = template_->itemData(template_->currentIndex()).toString() == kCustomData ||
                        template_->itemData(index).toString() == kCustomData;
    auto* dialog = new QDialog(this);
    dialog->setObjectName(QStringLiteral("templateDialog"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(custom ? tr("Custom chat template") : tr("Chat template: %1").arg(template_->currentText()));
    auto* layout = new QVBoxLayout(dialog);
    auto* source = new QPlainTextEdit(dialog);
    source->setObjectName(QStringLiteral("templateSource"));
    source->setAccessibleName(tr("Template source (Jinja)"));
    source->setFont(fixed_pitch_font());
    QString text = sourceOf(custom ? template_->count() - 1 : index);
    if (custom && text.isEmpty()) text = sourceOf(1);  // start from ChatML
    source->setPlainText(text);
    source->setReadOnly(!custom);
    auto* preview = new QPlainTextEdit(dialog);
    preview->setObjectName(QStringLiteral("templatePreview"));
    preview->setAccessibleName(tr("Rendered sample conversation"));
    preview->setReadOnly(true);
    preview->setFont(fixed_pitch_font());
    auto* status = new QLabel(dialog);
    status->setObjectName(QStringLiteral("templateStatus"));
    status->setWordWrap(true);
    layout->addWidget(new QLabel(tr("Template (Jinja):"), dialog));
    layout->addWidget(source, 1);
    layout->addWidget(new QLabel(tr("A sample conversation rendered with it:"), dialog));
    layout->addWidget(preview, 1);
    layout->addWidget(status);
    auto* buttons = new QDialogButtonBox(custom ? QDialogButtonBox::Ok | QDialogButtonBox::Cancel : QDialogButtonBox::Close,
                                         dialog);
    layout->addWidget(buttons);
    const auto refresh = [source, preview, status, buttons] {
        bool ok = false;
        const QString rendered = source->toPlainText().isEmpty() ? tr("(the model has no template)")
                                                                 : render_template_preview(source->toPlainText(), ok);
        preview->setPlainText(ok ? rendered : QString());
        status->setText(ok ? QString() : rendered);
        if (QPushButton* okButton = buttons->button(QDialogButtonBox::Ok)) okButton->setEnabled(ok);
    };
    connect(source, &QPlainTextEdit::textChanged, dialog, refresh);
    connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::reject);
    connect(buttons, &QDialogButtonBox::accepted, dialog, [this, dialog, source] {
        controller_->setTemplateChoice({TemplateChoice::Kind::Custom, source->toPlainText().toStdString()});
        dialog->accept();
    });
    refresh();
    dialog->resize(640, 520);
    dialog->show();
}

} // namespace cflow::ui
