// The Prompt panel's reply format (issue 33): free text, one JSON object, or JSON under a schema
// the user pastes or loads, checked on entry with the JSON pointer of what is wrong; the choice is
// stored with the conversation, the reply is sampled under its grammar (from the bundled model: a
// reply that starts an object, and a whole object valid under a bounded schema), the chat marks
// the reply with its format, and the inspector marks the grammar-masked tokens.
#include <filesystem>
#include <fstream>

#include <QComboBox>
#include <QDialogButtonBox>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QTest>

#include <gtest/gtest.h>

#include "cflow/ui/chat_controller.h"
#include "cflow/ui/chat_panel.h"
#include "cflow/ui/chat_view.h"
#include "cflow/ui/conversation_store.h"
#include "cflow/ui/inspector/inspector_dock.h"
#include "cflow/ui/inspector/stall_panel.h"
#include "cflow/ui/inspector/stall_totals_chart.h"
#include "cflow/ui/main_window.h"
#include "cflow/ui/prompt_panel.h"
#include "cflow/ui/sampling_panel.h"
#include "cflow/ui/schema_dialog.h"
#include "test_support.h"
#include "ui_test_models.h"

namespace {

using cflow::ui::MainWindow;
using cflow::ui::ReplyFormat;
using cflow::ui::ReplyFormatKind;
using cflow::ui::test::qpath;

constexpr int kReplyFormatTimeoutMs = 60000;
const std::filesystem::path kReplyFormatModel = std::filesystem::path(CFLOW_SOURCE_DIR) / "resources" / "default-model.cflow";

bool reply_format_open(MainWindow& window) {
    window.openModel(qpath(kReplyFormatModel));
    return QTest::qWaitFor([&] { return window.controller()->modelReady(); }, kReplyFormatTimeoutMs);
}

bool reply_format_idle(MainWindow& window) {
    return QTest::qWaitFor([&] { return !window.controller()->isGenerating(); }, kReplyFormatTimeoutMs);
}

cflow::ui::SchemaDialog* open_schema_dialog(MainWindow& window) {
    cflow::ui::PromptPanel* prompt = window.promptPanel();
    const int schemaIndex = prompt->replyFormatBox()->findData(int(ReplyFormatKind::JsonSchema));
    EXPECT_GE(schemaIndex, 0);
    emit prompt->replyFormatBox()->activated(schemaIndex);
    return prompt->findChild<cflow::ui::SchemaDialog*>(QStringLiteral("schemaDialog"));
}

TEST(ReplyFormat, TheSetupKeepsTheFormatAndTheSchemaWithTheConversation) {
    cflow::ui::ConversationSetup setup;
    setup.replyFormat = {ReplyFormatKind::JsonSchema, QStringLiteral(R"({"type": "integer"})")};
    const QString json = cflow::ui::setup_into_json(setup, QStringLiteral(R"({"temperature": 0.5})"));
    const cflow::ui::ConversationSetup back = cflow::ui::setup_from_json(json);
    EXPECT_EQ(back.replyFormat, setup.replyFormat);
    EXPECT_EQ(QJsonDocument::fromJson(json.toUtf8()).object().value(QStringLiteral("temperature")).toDouble(), 0.5);
    EXPECT_EQ(cflow::ui::setup_from_json(QStringLiteral("{}")).replyFormat.kind, ReplyFormatKind::FreeText);
}

TEST(ReplyFormat, AJsonObjectReplyIsSampledUnderTheGrammarAndMarkedInTheChatAndTheInspector) {
    cflow::ui::test::ScopedDb db("reply_format_json_object");
    cflow::ui::test::IsolatedSettings isolated("reply_format_json_object");
    MainWindow window;
    ASSERT_TRUE(reply_format_open(window));
    cflow::ui::GenerationSettings s;
    s.sampling.temperature = 0;
    s.maxTokens = 40;
    s.threads = 1;
    window.samplingPanel()->setSettings(s);

    cflow::ui::PromptPanel* prompt = window.promptPanel();
    const int objectIndex = prompt->replyFormatBox()->findData(int(ReplyFormatKind::JsonObject));
    ASSERT_GE(objectIndex, 0);
    prompt->replyFormatBox()->setCurrentIndex(objectIndex);
    emit prompt->replyFormatBox()->activated(objectIndex);
    EXPECT_EQ(window.controller()->setup().replyFormat.kind, ReplyFormatKind::JsonObject);
    const auto grammar = window.controller()->replyGrammar();
    ASSERT_NE(grammar, nullptr);

    ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("Describe a cat as JSON.")));
    ASSERT_TRUE(reply_format_idle(window));
    ASSERT_EQ(window.controller()->entries().size(), 2u);
    // This small story model writes long keys, so within max tokens the object may be cut: the
    // reply is then a prefix of one (a whole object for a bounded schema is checked below).
    const QString reply = window.controller()->entries()[1].content;
    EXPECT_TRUE(reply.startsWith(QLatin1Char('{'))) << reply.toStdString();
    EXPECT_EQ(window.chatPanel()->view()->card(1)->replyFormat(), QStringLiteral("JSON object"));
    EXPECT_EQ(window.controller()->replyGrammar(), grammar) << "built once per choice, not per reply";

    // The inspector's per-token bars mark the masked tokens.
    window.show();
    window.inspector()->show();
    window.inspector()->tabs()->setCurrentWidget(window.inspector()->stallPanel());
    window.inspector()->drainNow();
    cflow::ui::StallTotalsChart* totals = window.inspector()->stallPanel()->findChild<cflow::ui::StallTotalsChart*>();
    ASSERT_NE(totals, nullptr);
    const int newest = totals->slotCount() - 1;
    for (int ago = 0; ago < 20; ++ago) {  // the reply's last 20 tokens, all sampled under the grammar
        EXPECT_GT(totals->grammarAllowed(newest - ago), 0) << ago << " tokens ago";
        EXPECT_GT(totals->grammarVocab(newest - ago), totals->grammarAllowed(newest - ago)) << ago << " tokens ago";
    }

    // Stored with the conversation: a new window's controller reads the format back.
    auto info = window.store()->conversation(window.controller()->conversationId());
    ASSERT_TRUE(info);
    EXPECT_EQ(cflow::ui::setup_from_json(info->settingsJson).replyFormat.kind, ReplyFormatKind::JsonObject);

    // Back to free text: the next reply has no mark and no grammar.
    const int freeIndex = prompt->replyFormatBox()->findData(int(ReplyFormatKind::FreeText));
    emit prompt->replyFormatBox()->activated(freeIndex);
    EXPECT_EQ(window.controller()->replyGrammar(), nullptr);
    ASSERT_TRUE(window.controller()->regenerate());
    ASSERT_TRUE(reply_format_idle(window));
    EXPECT_TRUE(window.chatPanel()->view()->card(1)->replyFormat().isEmpty());
}

TEST(ReplyFormat, ASchemaIsCheckedOnEntryWithItsPointerAndLoadedFromAFile) {
    cflow::ui::test::ScopedDb db("reply_format_schema");
    cflow::ui::test::IsolatedSettings isolated("reply_format_schema");
    MainWindow window;
    ASSERT_TRUE(reply_format_open(window));
    cflow::ui::SchemaDialog* dialog = open_schema_dialog(window);
    ASSERT_NE(dialog, nullptr);
    QPushButton* ok = dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
    EXPECT_FALSE(ok->isEnabled()) << "an empty schema cannot be used";

    dialog->editor()->setPlainText(QStringLiteral(R"({"type": "object", "properties": {"age": {"type": "frobnicate"}}})"));
    EXPECT_FALSE(dialog->isUsable());
    EXPECT_FALSE(ok->isEnabled());
    EXPECT_TRUE(dialog->statusText().contains(QStringLiteral("/properties/age"))) << dialog->statusText().toStdString();

    const std::filesystem::path file = cflow::test::temp_dir("reply_format_schema") / "person.json";
    std::ofstream(file) << R"({"type": "object", "properties": {"animal": {"enum": ["cat", "dog", "bird"]},
                           "legs": {"type": "integer", "minimum": 0, "maximum": 8}},
                           "required": ["animal", "legs"], "additionalProperties": false})";
    ASSERT_TRUE(dialog->loadFile(qpath(file)));
    EXPECT_TRUE(dialog->isUsable()) << dialog->statusText().toStdString();
    EXPECT_TRUE(ok->isEnabled());
    EXPECT_FALSE(dialog->loadFile(qpath(file.parent_path() / "missing.json")));
    ok->click();
    EXPECT_EQ(window.controller()->setup().replyFormat.kind, ReplyFormatKind::JsonSchema);
    EXPECT_TRUE(window.controller()->setup().replyFormat.schema.contains(QStringLiteral("additionalProperties")));
    EXPECT_NE(window.controller()->replyGrammar(), nullptr);
    EXPECT_EQ(window.promptPanel()->replyFormatBox()->currentData().toInt(), int(ReplyFormatKind::JsonSchema));
    EXPECT_TRUE(window.promptPanel()->schemaButton()->isVisibleTo(window.promptPanel()));

    // A reply under the schema is a whole JSON value valid under it, marked in the chat.
    cflow::ui::GenerationSettings s;
    s.sampling.temperature = 0;
    s.maxTokens = 120;
    s.threads = 1;
    window.samplingPanel()->setSettings(s);
    ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("Which animal has four legs?")));
    ASSERT_TRUE(reply_format_idle(window));
    ASSERT_EQ(window.controller()->entries().size(), 2u);
    const QString reply = window.controller()->entries()[1].content;
    const QJsonObject answer = QJsonDocument::fromJson(reply.toUtf8()).object();
    EXPECT_EQ(answer.size(), 2) << reply.toStdString();
    EXPECT_TRUE(QStringList({"cat", "dog", "bird"}).contains(answer.value(QStringLiteral("animal")).toString()))
        << reply.toStdString();
    EXPECT_TRUE(answer.value(QStringLiteral("legs")).isDouble()) << reply.toStdString();
    EXPECT_GE(answer.value(QStringLiteral("legs")).toInt(-1), 0) << reply.toStdString();
    EXPECT_LE(answer.value(QStringLiteral("legs")).toInt(99), 8) << reply.toStdString();
    EXPECT_EQ(window.chatPanel()->view()->card(1)->replyFormat(), QStringLiteral("JSON Schema"));

    // The controller refuses a schema the grammar cannot hold, and keeps the format it had.
    const auto before = window.controller()->replyGrammar();
    const cflow::Status refused =
        window.controller()->setReplyFormat({ReplyFormatKind::JsonSchema, QStringLiteral(R"({"enum": []})")});
    EXPECT_FALSE(refused.ok());
    EXPECT_EQ(window.controller()->replyGrammar(), before);
    EXPECT_EQ(window.controller()->setup().replyFormat.kind, ReplyFormatKind::JsonSchema);
}

} // namespace
