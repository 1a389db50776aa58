// Tools in the desktop chat, end to end (issue 33): the conversation's enabled tools reach the
// model's template, a reply's calls show as cards under it, nothing runs before Approve, the
// decisions go back to the model as tool messages and the next reply starts by itself, the calls
// and results survive reopening the database, and Stop / another conversation / deleting it end
// waiting calls without running them. A random-weight model would never call a tool by chance: a
// named tool choice samples its first reply under the call grammar (tool_call_grammar), so the
// reply is one well-formed call in the built-in "chatml" template's Hermes syntax.
#include <memory>

#include <QApplication>
#include <QComboBox>
#include <QTimer>

#include <QCoro/QCoroTimer>
#include <QPushButton>
#include <QTest>

#include <gtest/gtest.h>

#include "cflow/ui/chat_controller.h"
#include "cflow/ui/chat_panel.h"
#include "cflow/ui/chat_view.h"
#include "cflow/ui/conversation_store.h"
#include "cflow/ui/layout_audit.h"
#include "cflow/ui/main_window.h"
#include "cflow/ui/prompt_panel.h"
#include "cflow/ui/reply_format.h"
#include "cflow/ui/sampling_panel.h"
#include "cflow/ui/tool_call_card.h"
#include "cflow/ui/tools/calculator_tool.h"
#include "cflow/ui/tools/conversation_toolbox.h"
#include "cflow/ui/tools/tool_registry.h"
#include "ui_test_models.h"

namespace {

using cflow::ui::ChatController;
using cflow::ui::MainWindow;
using cflow::ui::ToolCallCard;
using cflow::ui::test::qpath;

constexpr int kToolsTimeoutMs = 60000;

// The chat tests' ChatML model with room for the tools section (about a token per character).
const std::filesystem::path& tools_model() {
    static const std::filesystem::path path =
        cflow::ui::test::model_with_template("tools_chatml", cflow::ui::test::kChatMlTemplate, 0, 4096);
    return path;
}

// A tool that counts its runs, to prove a call that was not approved never ran. Its arguments
// can only be {} (so a forced call is short and always whole).
class CountingTool : public cflow::ui::ToolProvider {
public:
    int* runs;
    explicit CountingTool(int* counter) : runs(counter) {}
    QString name() const override { return QStringLiteral("Counting"); }
    QString summary() const override { return QStringLiteral("counts its runs"); }
    std::vector<cflow::ToolDefinition> tools() const override {
        return {{"count_me", "Counts.", R"({"type":"object","properties":{},"additionalProperties":false})"}};
    }
    QCoro::Task<cflow::ui::ToolResult> call(cflow::ToolCall) override {
        ++*runs;
        co_return cflow::ui::ToolResult{true, QStringLiteral("counted")};
    }
};

// A tool that takes a while (timeMs), to stop the chat while it runs.
class SlowTool : public cflow::ui::ToolProvider {
public:
    int* runs;
    int timeMs;
    SlowTool(int* counter, int ms) : runs(counter), timeMs(ms) {}
    QString name() const override { return QStringLiteral("Slow"); }
    QString summary() const override { return QStringLiteral("answers late"); }
    std::vector<cflow::ToolDefinition> tools() const override {
        return {{"slow_one", "Answers late.", R"({"type":"object","properties":{},"additionalProperties":false})"}};
    }
    QCoro::Task<cflow::ui::ToolResult> call(cflow::ToolCall) override {
        ++*runs;
        QTimer timer;
        timer.setSingleShot(true);
        timer.start(timeMs);
        co_await timer;
        co_return cflow::ui::ToolResult{true, QStringLiteral("late")};
    }
};

bool wait_model(MainWindow& window, const std::filesystem::path& model) {
    window.openModel(qpath(model));
    if (!QTest::qWaitFor([&] { return window.controller()->modelReady(); }, kToolsTimeoutMs)) return false;
    cflow::ui::GenerationSettings s;
    s.sampling.temperature = 0;
    s.maxTokens = 200;
    s.threads = 1;
    window.samplingPanel()->setSettings(s);
    return true;
}

// A stored conversation shown in the window, rendered with the built-in chatml template (which
// renders tools), whose first reply must call `tool`; only the providers named stay enabled.
qint64 tool_conversation(MainWindow& window, const std::string& tool, const QStringList& enabled) {
    auto id = window.store()->createConversation(QStringLiteral("tools"));
    EXPECT_TRUE(id) << id.error();
    if (!id) return 0;
    EXPECT_TRUE(window.controller()->openConversation(*id));
    window.controller()->setTemplateChoice({cflow::TemplateChoice::Kind::Builtin, "chatml"});
    window.controller()->setToolChoice({cflow::ToolChoice::Kind::Named, tool});
    cflow::ui::ToolRegistry* registry = window.toolbox()->registry();
    for (cflow::ui::ToolProvider* provider : registry->providers())
        EXPECT_TRUE(registry->setEnabled(provider->name(), enabled.contains(provider->name())).ok());
    return *id;
}

bool wait_calls(MainWindow& window) {
    return QTest::qWaitFor([&] { return window.controller()->toolCallsPending(); }, kToolsTimeoutMs);
}

bool wait_idle(MainWindow& window) {
    return QTest::qWaitFor(
        [&] { return !window.controller()->isGenerating() && !window.controller()->toolCallsPending(); }, kToolsTimeoutMs);
}

std::vector<ToolCallCard*> cards_of(MainWindow& window, int index) {
    cflow::ui::ChatView* view = window.chatPanel()->view();
    if (index >= view->count()) return {};
    return view->card(index)->toolCallCards();
}

ToolCallCard* only_card(MainWindow& window, int index) {
    const std::vector<ToolCallCard*> cards = cards_of(window, index);
    EXPECT_EQ(cards.size(), 1u);
    return cards.size() == 1 ? cards.front() : nullptr;
}

TEST(ChatTools, ADeniedCallRunsNothingAndTheNextReplyIsToldItWasDenied) {
    cflow::ui::test::ScopedDb db("chat_tools_deny");
    cflow::ui::test::IsolatedSettings isolated("chat_tools_deny");
    MainWindow window;
    window.show();
    window.activateWindow();
    ASSERT_TRUE(QTest::qWaitForWindowActive(&window));
    ASSERT_TRUE(wait_model(window, tools_model()));
    int runs = 0;
    const qint64 id = tool_conversation(window, "count_me", {});
    ASSERT_TRUE(window.toolbox()->registry()->addProvider(std::make_unique<CountingTool>(&runs)).ok());
    ChatController* c = window.controller();

    window.chatPanel()->input()->setFocus();
    // While the call streams, the transcript holds it back (its card comes at the end).
    QStringList streamed;
    QObject::connect(c, &ChatController::replyStreamed, &window, [&](int index) {
        streamed << window.chatPanel()->view()->card(index)->browser()->toPlainText();
    });
    ASSERT_TRUE(c->send(QStringLiteral("count, please")));
    ASSERT_TRUE(wait_calls(window));
    ASSERT_FALSE(streamed.isEmpty());
    for (const QString& shown : streamed) EXPECT_FALSE(shown.contains(QStringLiteral("tool_call"))) << shown.toStdString();
    // The tool was offered in the template's own tools section.
    EXPECT_TRUE(c->lastSentPrompt().text.contains(QStringLiteral("<tools>"))) << c->lastSentPrompt().text.toStdString();
    EXPECT_TRUE(c->lastSentPrompt().text.contains(QStringLiteral("\"count_me\"")));
    EXPECT_EQ(c->lastSentPrompt().toolFormat, cflow::ToolCallFormat::Hermes);
    ASSERT_EQ(c->entries().size(), 2u);
    const cflow::ui::ChatEntry reply = c->entries()[1];  // a copy: entries grow below
    ASSERT_EQ(reply.toolCalls.size(), 1u);
    EXPECT_EQ(reply.toolCalls[0].name, "count_me");
    EXPECT_FALSE(reply.content.contains(QStringLiteral("<tool_call>"))) << "the call markers stay out of the shown text";
    ToolCallCard* card = only_card(window, 1);
    ASSERT_NE(card, nullptr);
    EXPECT_EQ(card->state(), ToolCallCard::State::Waiting);
    EXPECT_TRUE(card->approveButton()->hasFocus()) << "the keyboard goes to the waiting call";
    EXPECT_FALSE(window.chatPanel()->sendButton()->isEnabled()) << "a new message waits for the decisions";
    // The waiting card fits and every control on it can be named and reached by a screen-reader user.
    QApplication::processEvents();
    EXPECT_TRUE(cflow::ui::layout_problems(card).isEmpty()) << cflow::ui::layout_problems(card).join(u'\n').toStdString();
    EXPECT_TRUE(cflow::ui::accessibility_problems(card).isEmpty())
        << cflow::ui::accessibility_problems(card).join(u'\n').toStdString();
    QTest::qWait(200);
    EXPECT_EQ(runs, 0) << "nothing runs before Approve";
    EXPECT_FALSE(c->isGenerating()) << "the next reply waits for the decisions";

    // Deny from the keyboard: Tab from Approve, Space.
    QTest::keyClick(card->approveButton(), Qt::Key_Tab);
    ASSERT_TRUE(card->denyButton()->hasFocus());
    QTest::keyClick(card->denyButton(), Qt::Key_Space);
    ASSERT_TRUE(QTest::qWaitFor([&] { return c->entries().size() == 4u && !c->isGenerating(); }, kToolsTimeoutMs));
    EXPECT_EQ(runs, 0);
    EXPECT_TRUE(window.chatPanel()->input()->hasFocus()) << "the keyboard comes back to the message box";
    EXPECT_EQ(c->entries()[2].role, QStringLiteral("tool"));
    EXPECT_EQ(c->entries()[2].content, cflow::ui::denied_tool_call_text());
    EXPECT_EQ(c->entries()[3].role, QStringLiteral("assistant"));
    // The next reply started by itself with the call and the denial in its prompt.
    const QString prompt = c->lastSentPrompt().text;
    EXPECT_TRUE(prompt.contains(QStringLiteral("<tool_call>\n{\"name\": \"count_me\""))) << prompt.toStdString();
    EXPECT_TRUE(prompt.contains(QStringLiteral("<tool_response>\n") + cflow::ui::denied_tool_call_text() +
                                QStringLiteral("\n</tool_response>")))
        << prompt.toStdString();
    // The card now shows the decision, read-only.
    ToolCallCard* settled = only_card(window, 1);
    ASSERT_NE(settled, nullptr);
    EXPECT_EQ(settled->state(), ToolCallCard::State::Denied);
    EXPECT_FALSE(settled->approveButton()->isEnabled());
    auto stored = window.store()->messages(id);
    ASSERT_TRUE(stored);
    ASSERT_EQ(stored->size(), 4u);
    EXPECT_TRUE((*stored)[1].extraJson.contains(QStringLiteral("\"tool_calls\"")));
    EXPECT_EQ(cflow::ui::tool_result_call_id((*stored)[2].extraJson), QString::fromStdString(reply.toolCalls[0].id));

    // Regenerating the answer to the results is not the message's first reply: no call is forced.
    ASSERT_TRUE(c->regenerate());
    ASSERT_TRUE(wait_idle(window));
    EXPECT_FALSE(c->toolCallsPending());
    EXPECT_TRUE(c->entries().back().toolCalls.empty());
    EXPECT_EQ(c->entries().size(), 4u);
}

TEST(ChatTools, AnApprovedCalculatorCallRunsAndItsResultReachesTheNextPromptAndSurvivesReopening) {
    cflow::ui::test::ScopedDb db("chat_tools_approve");
    cflow::ui::test::IsolatedSettings isolated("chat_tools_approve");
    qint64 id = 0;
    cflow::ToolCall call;
    QString result;
    {
        MainWindow window;
        window.show();
        ASSERT_TRUE(wait_model(window, tools_model()));
        id = tool_conversation(window, "calculator", {QStringLiteral("Calculator")});
        ChatController* c = window.controller();
        ASSERT_TRUE(c->send(QStringLiteral("what is (2+3)*4?")));
        ASSERT_TRUE(wait_calls(window));
        ToolCallCard* card = only_card(window, 1);
        ASSERT_NE(card, nullptr);
        call = card->call();
        EXPECT_EQ(call.name, "calculator");
        QTest::mouseClick(card->approveButton(), Qt::LeftButton);
        ASSERT_TRUE(QTest::qWaitFor([&] { return c->entries().size() == 4u; }, kToolsTimeoutMs));
        ASSERT_TRUE(wait_idle(window));

        // What the calculator says for these arguments, asked directly.
        cflow::ui::ToolRegistry direct;
        ASSERT_TRUE(direct.addProvider(std::make_unique<cflow::ui::CalculatorTool>()).ok());
        bool answered = false;
        cflow::ui::ToolResult expected;
        direct.call(call).then([&](const cflow::ui::ToolResult& r) {
            expected = r;
            answered = true;
        });
        ASSERT_TRUE(QTest::qWaitFor([&] { return answered; }, 5000));
        result = c->entries()[2].content;
        EXPECT_EQ(result, expected.text) << "the tool message is the calculator's answer";
        EXPECT_FALSE(result.isEmpty());
        const QString prompt = c->lastSentPrompt().text;
        EXPECT_TRUE(prompt.contains(QStringLiteral("<tool_response>\n") + result + QStringLiteral("\n</tool_response>")))
            << prompt.toStdString();
        ToolCallCard* settled = only_card(window, 1);
        ASSERT_NE(settled, nullptr);
        EXPECT_EQ(settled->state(), ToolCallCard::State::Done);
    }
    // A restart: the calls and the result come back, the cards read-only, and the prompt the next
    // reply would see renders them again.
    MainWindow window;
    window.show();
    ASSERT_TRUE(wait_model(window, tools_model()));
    ChatController* c = window.controller();
    ASSERT_TRUE(c->openConversation(id));
    ASSERT_EQ(c->entries().size(), 4u);
    ASSERT_EQ(c->entries()[1].toolCalls.size(), 1u);
    EXPECT_EQ(c->entries()[1].toolCalls[0].id, call.id);
    EXPECT_EQ(c->entries()[1].toolCalls[0].name, "calculator");
    EXPECT_EQ(c->entries()[2].role, QStringLiteral("tool"));
    EXPECT_EQ(c->entries()[2].content, result);
    EXPECT_EQ(cflow::ui::tool_result_call_id(c->entries()[2].extraJson), QString::fromStdString(call.id));
    EXPECT_EQ(window.chatPanel()->view()->card(2)->heading(), QStringLiteral("tool · calculator"));
    ToolCallCard* card = only_card(window, 1);
    ASSERT_NE(card, nullptr);
    EXPECT_EQ(card->state(), ToolCallCard::State::Done);
    EXPECT_TRUE(card->approveButton()->isHidden()) << "a decided call offers nothing to press";
    EXPECT_TRUE(card->statusText().contains(result)) << card->statusText().toStdString();
    EXPECT_FALSE(c->toolCallsPending());
    ASSERT_TRUE(QTest::qWaitFor([&] { return c->visiblePrompt().text.contains(QStringLiteral("<tool_response>")); },
                                kToolsTimeoutMs));
    const QString prompt = c->visiblePrompt().text;
    EXPECT_TRUE(prompt.contains(QStringLiteral("<tool_call>\n{\"name\": \"calculator\""))) << prompt.toStdString();
    EXPECT_TRUE(prompt.contains(QStringLiteral("<tool_response>\n") + result + QStringLiteral("\n</tool_response>")));
}

TEST(ChatTools, StopAnotherConversationOrDeletingEndsWaitingCallsWithoutRunningThem) {
    cflow::ui::test::ScopedDb db("chat_tools_stop");
    cflow::ui::test::IsolatedSettings isolated("chat_tools_stop");
    MainWindow window;
    window.show();
    ASSERT_TRUE(wait_model(window, tools_model()));
    int runs = 0;
    const qint64 id = tool_conversation(window, "count_me", {});
    ASSERT_TRUE(window.toolbox()->registry()->addProvider(std::make_unique<CountingTool>(&runs)).ok());
    ChatController* c = window.controller();

    // Stop: the waiting call does not run, no reply follows, the chat can send again.
    ASSERT_TRUE(c->send(QStringLiteral("count")));
    ASSERT_TRUE(wait_calls(window));
    auto* stopButton = window.chatPanel()->findChild<QPushButton*>(QStringLiteral("stopButton"));
    ASSERT_NE(stopButton, nullptr);
    EXPECT_TRUE(stopButton->isEnabled()) << "Stop ends the waiting calls";
    QTest::mouseClick(stopButton, Qt::LeftButton);
    EXPECT_FALSE(c->toolCallsPending());
    QTest::qWait(300);
    EXPECT_FALSE(c->isGenerating()) << "no reply starts after a Stop";
    EXPECT_EQ(runs, 0);
    ASSERT_EQ(c->entries().size(), 3u);
    EXPECT_EQ(c->entries()[2].content, cflow::ui::cancelled_tool_call_text());
    ToolCallCard* card = only_card(window, 1);
    ASSERT_NE(card, nullptr);
    EXPECT_NE(card->state(), ToolCallCard::State::Waiting);
    card->approve();  // a settled card runs nothing
    QTest::qWait(100);
    EXPECT_EQ(runs, 0);
    EXPECT_TRUE(window.chatPanel()->sendButton()->isEnabled());
    EXPECT_FALSE(stopButton->isEnabled());

    // Another conversation shown: the same, written into the conversation left.
    ASSERT_TRUE(c->send(QStringLiteral("count again")));
    ASSERT_TRUE(wait_calls(window));
    c->newConversation();
    EXPECT_FALSE(c->toolCallsPending());
    QTest::qWait(300);
    EXPECT_FALSE(c->isGenerating());
    EXPECT_EQ(runs, 0);
    auto stored = window.store()->messages(id);
    ASSERT_TRUE(stored);
    ASSERT_EQ(stored->size(), 6u);
    EXPECT_EQ((*stored)[5].role, QStringLiteral("tool"));
    EXPECT_EQ((*stored)[5].content, cflow::ui::cancelled_tool_call_text());

    // Deleted while its calls wait: nothing runs, nothing is left.
    ASSERT_TRUE(c->openConversation(id));
    window.controller()->setToolChoice({cflow::ToolChoice::Kind::Named, "count_me"});
    ASSERT_TRUE(window.toolbox()->registry()->addProvider(std::make_unique<CountingTool>(&runs)).ok());
    for (cflow::ui::ToolProvider* provider : window.toolbox()->registry()->providers())
        ASSERT_TRUE(window.toolbox()->registry()->setEnabled(provider->name(), provider->name() == QLatin1String("Counting")).ok());
    ASSERT_TRUE(c->send(QStringLiteral("count once more")));
    ASSERT_TRUE(wait_calls(window));
    ASSERT_TRUE(c->deleteConversation(id));
    EXPECT_FALSE(c->toolCallsPending());
    EXPECT_EQ(c->conversationId(), 0);
    QTest::qWait(300);
    EXPECT_FALSE(c->isGenerating());
    EXPECT_EQ(runs, 0);
    EXPECT_FALSE(window.store()->conversation(id));

    // Stopped while an approved call runs: the model is told it may have run, and its late result
    // starts nothing.
    int slowRuns = 0;
    const qint64 slowId = tool_conversation(window, "slow_one", {});
    ASSERT_TRUE(window.toolbox()->registry()->addProvider(std::make_unique<SlowTool>(&slowRuns, 400)).ok());
    ASSERT_TRUE(c->send(QStringLiteral("take your time")));
    ASSERT_TRUE(wait_calls(window));
    ToolCallCard* slow = only_card(window, 1);
    ASSERT_NE(slow, nullptr);
    slow->approve();
    EXPECT_EQ(slow->state(), ToolCallCard::State::Running);
    c->stop();
    EXPECT_FALSE(c->toolCallsPending());
    ASSERT_EQ(c->entries().size(), 3u);
    EXPECT_EQ(c->entries()[2].content, cflow::ui::interrupted_tool_call_text());
    QTest::qWait(700);  // the late result arrives
    EXPECT_EQ(slowRuns, 1);
    EXPECT_FALSE(c->isGenerating()) << "a late result starts no reply";
    EXPECT_EQ(c->entries().size(), 3u);
    auto slowStored = window.store()->messages(slowId);
    ASSERT_TRUE(slowStored);
    EXPECT_EQ(slowStored->size(), 3u);
}

// The Prompt panel's "Tool calls" choice: "Must call a tool" forces the first reply to a call of
// one of the enabled tools, and the conversation keeps the choice.
TEST(ChatTools, ThePromptPanelCanRequireACallAndTheConversationKeepsTheChoice) {
    cflow::ui::test::ScopedDb db("chat_tools_prompt_panel");
    cflow::ui::test::IsolatedSettings isolated("chat_tools_prompt_panel");
    MainWindow window;
    window.show();
    ASSERT_TRUE(wait_model(window, tools_model()));
    const qint64 id = tool_conversation(window, "calculator", {QStringLiteral("Calculator")});
    ChatController* c = window.controller();
    QComboBox* box = window.promptPanel()->toolChoiceBox();
    ASSERT_TRUE(box->isEnabled());
    EXPECT_EQ(box->currentText(), QStringLiteral("Must call calculator")) << "a named tool set by code shows as such";
    const int required = box->findText(QStringLiteral("Must call a tool"));
    ASSERT_GE(required, 0);
    box->setCurrentIndex(required);
    emit box->activated(required);
    EXPECT_EQ(c->toolChoice().kind, cflow::ToolChoice::Kind::Required);
    auto info = window.store()->conversation(id);
    ASSERT_TRUE(info);
    EXPECT_TRUE(info->settingsJson.contains(QStringLiteral("\"tool_choice\":\"required\""))) << info->settingsJson.toStdString();

    ASSERT_TRUE(c->send(QStringLiteral("compute something")));
    ASSERT_TRUE(wait_calls(window));
    ToolCallCard* card = only_card(window, 1);
    ASSERT_NE(card, nullptr);
    EXPECT_EQ(card->call().name, "calculator") << "required: a call of the one enabled tool";
    c->stop();

    c->newConversation();
    const int decides = box->findText(QStringLiteral("The model decides"));
    box->setCurrentIndex(decides);
    emit box->activated(decides);
    EXPECT_EQ(c->toolChoice().kind, cflow::ToolChoice::Kind::Auto);
    ASSERT_TRUE(c->openConversation(id));
    EXPECT_EQ(c->toolChoice().kind, cflow::ToolChoice::Kind::Required) << "the conversation keeps its choice";
    EXPECT_EQ(box->currentText(), QStringLiteral("Must call a tool"));
    c->setMode(cflow::ui::PromptMode::Completion);
    EXPECT_FALSE(box->isEnabled()) << "completion mode calls no tools";
}

// A model that calls a tool in every reply stops being asked after kMaxToolRounds rounds. The
// built-in llama3 template reads a bare JSON reply {"name": ..., "parameters": ...} as a call
// (Llama 3.1's format), and the reply format holds every reply, not just the first, to that shape.
TEST(ChatTools, AModelThatKeepsCallingIsNotAskedAgainAfterEightRounds) {
    cflow::ui::test::ScopedDb db("chat_tools_cap");
    cflow::ui::test::IsolatedSettings isolated("chat_tools_cap");
    MainWindow window;
    window.show();
    ASSERT_TRUE(wait_model(window, tools_model()));
    int runs = 0;
    tool_conversation(window, "count_me", {});
    ASSERT_TRUE(window.toolbox()->registry()->addProvider(std::make_unique<CountingTool>(&runs)).ok());
    ChatController* c = window.controller();
    c->setTemplateChoice({cflow::TemplateChoice::Kind::Builtin, "llama3"});
    c->setToolChoice({});  // auto: only the reply format makes the model call
    const QString schema = QStringLiteral(
        R"({"type":"object","properties":{"name":{"const":"count_me"},"parameters":{"type":"object","properties":{},)"
        R"("additionalProperties":false}},"required":["name","parameters"],"additionalProperties":false})");
    ASSERT_TRUE(c->setReplyFormat({cflow::ui::ReplyFormatKind::JsonSchema, schema}).ok());

    ASSERT_TRUE(c->send(QStringLiteral("count forever")));
    int rounds = 0;
    while (rounds < cflow::ui::kMaxToolRounds + 1 && wait_calls(window)) {
        EXPECT_EQ(c->lastSentPrompt().toolFormat, cflow::ToolCallFormat::Llama31);
        ToolCallCard* card = only_card(window, static_cast<int>(c->entries().size()) - 1);
        ASSERT_NE(card, nullptr);
        card->approve();
        ++rounds;
        ASSERT_TRUE(QTest::qWaitFor([&] { return runs == rounds; }, 5000));
        ASSERT_TRUE(QTest::qWaitFor([&] { return !c->toolCallsPending(); }, 5000));
        if (rounds == cflow::ui::kMaxToolRounds) break;
    }
    ASSERT_EQ(rounds, cflow::ui::kMaxToolRounds);
    QTest::qWait(300);
    EXPECT_FALSE(c->isGenerating()) << "no ninth reply";
    EXPECT_FALSE(c->toolCallsPending());
    EXPECT_EQ(runs, cflow::ui::kMaxToolRounds);
    ASSERT_EQ(c->entries().size(), size_t(1 + 2 * cflow::ui::kMaxToolRounds));
    EXPECT_EQ(c->entries().back().role, QStringLiteral("tool"));
    EXPECT_TRUE(window.chatPanel()->noticeText().contains(QStringLiteral("8 times in a row")))
        << window.chatPanel()->noticeText().toStdString();
    EXPECT_TRUE(window.chatPanel()->sendButton()->isEnabled());
}

TEST(ChatTools, ATemplateThatCannotCallToolsSaysSoAndRendersNone) {
    cflow::ui::test::ScopedDb db("chat_tools_unsupported");
    cflow::ui::test::IsolatedSettings isolated("chat_tools_unsupported");
    MainWindow window;
    window.show();
    ASSERT_TRUE(wait_model(window, cflow::ui::test::chatml_model()));  // its template never reads `tools`
    ChatController* c = window.controller();
    ASSERT_FALSE(window.toolbox()->registry()->enabledTools().empty()) << "the calculator is on by default";
    // The default tools on a model that cannot call them: nothing to say.
    ASSERT_TRUE(c->send(QStringLiteral("hi")));
    ASSERT_TRUE(wait_idle(window));
    EXPECT_TRUE(c->lastSentPrompt().toolsUnsupported);
    EXPECT_TRUE(c->entries().back().toolsNote.isEmpty()) << "the default tools were not asked for";
    c->newConversation();
    // Asked for (a required call): said on the reply.
    c->setToolChoice({cflow::ToolChoice::Kind::Named, "calculator"});
    ASSERT_TRUE(c->send(QStringLiteral("hello")));
    ASSERT_TRUE(wait_idle(window));
    EXPECT_FALSE(c->lastSentPrompt().text.contains(QStringLiteral("calculator")));
    EXPECT_TRUE(c->lastSentPrompt().toolsUnsupported);
    EXPECT_TRUE(c->entries().back().toolCalls.empty());
    // Said once, plainly, on the reply: its mark's tooltip and accessible name give the reason.
    cflow::ui::ChatView* view = window.chatPanel()->view();
    ASSERT_EQ(view->count(), 2);
    EXPECT_TRUE(view->card(1)->toolsNote().contains(QStringLiteral("cannot call tools"))) << view->card(1)->toolsNote().toStdString();
    ASSERT_TRUE(c->send(QStringLiteral("again")));
    ASSERT_TRUE(wait_idle(window));
    ASSERT_EQ(view->count(), 4);
    EXPECT_TRUE(view->card(3)->toolsNote().isEmpty()) << "once per conversation, not on every reply";
    EXPECT_TRUE(view->card(1)->toolsNote().contains(QStringLiteral("cannot call tools")));
}

} // namespace
