// One source of truth for the desktop app: the races and disagreements a user hit on the
// real window (switching while a reply streams, the context gauge, the raw prompt, the
// inspector and the title after a model switch, a conversation made with another model), and
// the prompt and context controls (completion mode, template choice, the ignored system
// prompt, max tokens from the context, dropped turns, regenerate with versions, stop, edit).
#include <QComboBox>
#include <QSettings>
#include <QDialog>
#include <QLineEdit>
#include <QLabel>
#include <QListWidget>
#include <QMenu>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QToolButton>
#include <QSignalSpy>
#include <QTest>
#include <QThread>

#include <gtest/gtest.h>

#include "cflow/engine/chat/chat_session.h"
#include "cflow/ui/chat_controller.h"
#include "cflow/ui/chat_panel.h"
#include "cflow/ui/chat_view.h"
#include "cflow/ui/context_gauge.h"
#include "cflow/ui/conversation_sidebar.h"
#include "cflow/ui/conversation_store.h"
#include "cflow/ui/engine_worker.h"
#include "cflow/ui/inspector/inspector_dock.h"
#include "cflow/ui/main_window.h"
#include "cflow/ui/prompt_panel.h"
#include "cflow/ui/sampling_panel.h"
#include "cflow/ui/status_area.h"
#include "cflow/ui/tools/conversation_toolbox.h"
#include "ui_test_models.h"

namespace {

using cflow::ui::ChatController;
using cflow::ui::MainWindow;
using cflow::ui::test::qpath;
using cflow::ui::test::ScopedDb;

constexpr int kControllerTimeoutMs = 60000;

bool open_model(MainWindow& window, const std::filesystem::path& path) {
    window.openModel(qpath(path));
    return QTest::qWaitFor(
        [&] { return window.controller()->modelReady() && window.controller()->model().path == qpath(path); }, kControllerTimeoutMs);
}

void settings(MainWindow& window, int maxTokens, bool ignoreEos = true) {
    cflow::ui::GenerationSettings s;
    s.sampling.temperature = 0;
    s.maxTokens = maxTokens;
    s.threads = 1;
    s.ignoreEos = ignoreEos;
    window.samplingPanel()->setSettings(s);
}

bool idle(MainWindow& window) {
    return QTest::qWaitFor([&] { return !window.controller()->isGenerating() && !window.controller()->switchPending(); },
                           kControllerTimeoutMs);
}

// A reply slow enough to act while it streams.
struct SlowSteps {
    MainWindow& window;
    explicit SlowSteps(MainWindow& w) : window(w) {
        window.engine()->setTelemetrySink([](const cflow::TokenTelemetry&) { QThread::msleep(3); });
    }
    ~SlowSteps() { window.engine()->setTelemetrySink({}); }
};

qint64 chat_once(MainWindow& window, const QString& text) {
    window.controller()->newConversation();
    EXPECT_TRUE(window.controller()->send(text));
    EXPECT_TRUE(idle(window));
    return window.controller()->conversationId();
}

void click_conversation(MainWindow& window, qint64 id) {
    QListWidget* list = window.sidebar()->list();
    for (int i = 0; i < list->count(); ++i) {
        if (list->item(i)->data(Qt::UserRole).toLongLong() != id) continue;
        QTest::mouseClick(list->viewport(), Qt::LeftButton, {}, list->visualItemRect(list->item(i)).center());
        return;
    }
    ADD_FAILURE() << "conversation " << id << " is not in the list";
}

// Every view shows the controller's conversation.
void expect_window_consistent(MainWindow& window) {
    ChatController* c = window.controller();
    EXPECT_EQ(window.sidebar()->selectedId(), c->conversationId()) << "the list highlights another conversation";
    ASSERT_EQ(window.chatPanel()->view()->count(), int(c->entries().size()));
    for (size_t i = 0; i < c->entries().size(); ++i)
        EXPECT_EQ(window.chatPanel()->view()->card(int(i))->text(), c->entries()[i].content);
    if (c->conversationId() == 0) return;
    auto stored = window.store()->messages(c->conversationId());
    ASSERT_TRUE(stored);
    ASSERT_EQ(stored->size(), c->entries().size());
    for (size_t i = 0; i < stored->size(); ++i) EXPECT_EQ((*stored)[i].content, c->entries()[i].content);
}

int list_row(MainWindow& window, qint64 id) {
    QListWidget* list = window.sidebar()->list();
    for (int i = 0; i < list->count(); ++i)
        if (list->item(i)->data(Qt::UserRole).toLongLong() == id) return i;
    return -1;
}

QString stored_reply(MainWindow& window, qint64 id, size_t index) {
    auto stored = window.store()->messages(id);
    return stored && stored->size() > index ? stored->at(index).content : QString();
}

// Issue 37: clicking another conversation used to stop the reply.
TEST(ChatControllerTest, AReplyKeepsStreamingInItsConversationWhileAnotherIsShown) {
    ScopedDb db("controller_regenerate_switch");
    MainWindow window;
    ASSERT_TRUE(open_model(window, cflow::ui::test::chatml_model()));
    settings(window, 6);
    const qint64 a = chat_once(window, QStringLiteral("first chat"));
    const qint64 b = chat_once(window, QStringLiteral("second chat"));
    ASSERT_NE(a, b);
    settings(window, 100000, true);
    SlowSteps slow(window);
    ASSERT_TRUE(window.chatPanel()->regenerate());
    QTest::qWait(100);
    click_conversation(window, a);
    // A is shown at once, and the reply goes on into B.
    EXPECT_EQ(window.controller()->conversationId(), a);
    expect_window_consistent(window);
    EXPECT_TRUE(window.controller()->isGenerating());
    EXPECT_FALSE(window.controller()->isReplyShown());
    EXPECT_EQ(window.sidebar()->busyConversation(), b);
    const int rowB = list_row(window, b);
    ASSERT_GE(rowB, 0);
    EXPECT_TRUE(window.sidebar()->list()->item(rowB)->text().endsWith(QStringLiteral("writing…")))
        << window.sidebar()->list()->item(rowB)->text().toStdString();
    EXPECT_TRUE(window.chatPanel()->noticeText().contains(QStringLiteral("A reply is being written in")))
        << window.chatPanel()->noticeText().toStdString();
    EXPECT_FALSE(window.chatPanel()->sendButton()->isEnabled()) << "one engine: sending waits for the reply";
    EXPECT_FALSE(window.chatPanel()->findChild<QPushButton*>(QStringLiteral("stopButton"))->isEnabled())
        << "Stop here would stop a reply the user does not see";
    EXPECT_TRUE(window.chatPanel()->contextText().contains(QStringLiteral("measured when the other reply ends")))
        << window.chatPanel()->contextText().toStdString() << " used " << window.controller()->contextUsed()
        << " gauge prompt " << window.chatPanel()->contextGauge()->promptTokens();
    const QString early = stored_reply(window, b, 1);
    ASSERT_TRUE(QTest::qWaitFor([&] { return stored_reply(window, b, 1).size() > early.size() + 8; }, kControllerTimeoutMs))
        << "the reply in B keeps growing while A is shown";
    EXPECT_EQ(window.store()->messages(a)->size(), 2u) << "nothing lands in A";

    // Back in B: the reply is where it has got to, and goes on in view.
    click_conversation(window, b);
    ASSERT_TRUE(window.controller()->isReplyShown());
    const int index = window.controller()->replyIndex();
    ASSERT_EQ(index, 1);
    const QString shown = window.chatPanel()->view()->card(index)->text();
    EXPECT_GE(shown.size(), stored_reply(window, b, 1).size() - 32);
    ASSERT_TRUE(QTest::qWaitFor([&] { return window.chatPanel()->view()->card(index)->text().size() > shown.size(); },
                                kControllerTimeoutMs));
    EXPECT_TRUE(window.chatPanel()->findChild<QPushButton*>(QStringLiteral("stopButton"))->isEnabled());
    EXPECT_GT(window.chatPanel()->contextGauge()->replyTokens(), 0) << "the gauge's reply part grows";

    // Stopped from the list (A shown again): kept, marked stopped, the first version still there.
    click_conversation(window, a);
    QMenu* menu = window.sidebar()->contextMenuFor(list_row(window, b));
    ASSERT_NE(menu, nullptr);
    auto* stop = menu->findChild<QAction*>(QStringLiteral("stopReplyAction"));
    ASSERT_NE(stop, nullptr);
    stop->trigger();
    menu->close();
    ASSERT_TRUE(idle(window));
    EXPECT_EQ(window.controller()->conversationId(), a);
    EXPECT_EQ(window.sidebar()->busyConversation(), 0);
    EXPECT_FALSE(window.chatPanel()->noticeText().contains(QStringLiteral("A reply is being written")));
    auto inB = window.store()->messages(b);
    ASSERT_EQ(inB->size(), 2u);
    EXPECT_TRUE(inB->at(1).stopped) << "the interrupted version is marked stopped";
    EXPECT_TRUE(inB->at(1).complete);
    EXPECT_EQ(inB->at(1).versions.size(), 2) << "the first reply stays as a version";

    // The next message lands in the shown conversation.
    settings(window, 4);
    ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("third message")));
    ASSERT_TRUE(idle(window));
    EXPECT_EQ(window.store()->messages(a)->size(), 4u);
    EXPECT_EQ(window.store()->messages(a)->at(2).content, QStringLiteral("third message"));
    EXPECT_EQ(window.store()->messages(b)->size(), 2u);
    EXPECT_EQ(window.sidebar()->selectedId(), a);
    expect_window_consistent(window);
}

TEST(ChatControllerTest, MessageSentFromANewChatStaysThereWhenAnotherIsClickedRightAway) {
    ScopedDb db("controller_new_send_click");
    MainWindow window;
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    ASSERT_TRUE(open_model(window, cflow::ui::test::chatml_model()));
    settings(window, 4);
    const qint64 a = chat_once(window, QStringLiteral("older chat"));
    settings(window, 400);
    SlowSteps slow(window);
    QTest::keyClick(&window, Qt::Key_N, Qt::ControlModifier);
    EXPECT_EQ(window.controller()->conversationId(), 0);
    QPlainTextEdit* input = window.chatPanel()->input();
    input->setFocus();
    QTest::keyClicks(input, QStringLiteral("typed in the new chat"));
    QTest::keyClick(input, Qt::Key_Return, Qt::ControlModifier);
    ASSERT_TRUE(window.controller()->isGenerating())
        << "Ctrl+Enter sends; input: '" << input->toPlainText().toStdString() << "' send enabled "
        << window.chatPanel()->sendButton()->isEnabled();
    const qint64 created = window.controller()->conversationId();
    ASSERT_NE(created, 0);
    click_conversation(window, a);
    EXPECT_EQ(window.controller()->conversationId(), a) << "shown at once; the reply goes on in the new chat";
    ASSERT_TRUE(idle(window));
    EXPECT_EQ(window.controller()->conversationId(), a);
    expect_window_consistent(window);
    auto inNew = window.store()->messages(created);
    ASSERT_EQ(inNew->size(), 2u);
    EXPECT_EQ(inNew->at(0).content, QStringLiteral("typed in the new chat"));
    EXPECT_FALSE(inNew->at(1).content.isEmpty());
    EXPECT_FALSE(inNew->at(1).stopped) << "it ran to its end";
    EXPECT_TRUE(inNew->at(1).complete);
    EXPECT_EQ(window.store()->messages(a)->size(), 2u) << "the other chat got nothing";
}

int tokens_of(const std::filesystem::path& model, const std::vector<cflow::ChatMessage>& messages) {
    auto loaded = cflow::Model::load(model.string());
    auto session = cflow::Session::create(*loaded, {});
    cflow::ChatSession chat(*loaded, std::move(session).value());
    return int(chat.prepare(messages)->ids.size());
}

TEST(ChatControllerTest, ContextGaugeAndRawPromptFollowTheShownConversationAndModel) {
    ScopedDb db("controller_context_gauge");
    MainWindow window;
    ASSERT_TRUE(open_model(window, cflow::ui::test::chatml_model()));
    settings(window, 40);
    const qint64 a = chat_once(window, QStringLiteral("the cat sat on the mat"));
    const QString replyA = window.controller()->entries()[1].content;
    chat_once(window, QStringLiteral("dogs"));

    window.controller()->newConversation();
    EXPECT_TRUE(QTest::qWaitFor([&] { return window.chatPanel()->contextText() == QStringLiteral("Context: 0 / 1024 tokens"); }, 5000))
        << window.chatPanel()->contextText().toStdString();

    ASSERT_TRUE(window.controller()->openConversation(a));
    const int expected = tokens_of(cflow::ui::test::chatml_model(),
                                   {{"user", "the cat sat on the mat", ""}, {"assistant", replyA.toStdString(), ""}});
    EXPECT_TRUE(QTest::qWaitFor([&] { return window.controller()->contextUsed() == expected; }, 5000))
        << window.controller()->contextUsed() << " vs " << expected;
    EXPECT_EQ(window.chatPanel()->contextText(), QStringLiteral("Context: %1 / 1024 tokens").arg(expected));

    window.chatPanel()->showRawPrompt();
    auto* dialog = window.chatPanel()->findChild<QDialog*>(QStringLiteral("rawPromptDialog"));
    ASSERT_NE(dialog, nullptr);
    const QString raw = dialog->findChild<QPlainTextEdit*>()->toPlainText();
    EXPECT_TRUE(raw.contains(QStringLiteral("the cat sat on the mat"))) << raw.toStdString();
    EXPECT_FALSE(raw.contains(QStringLiteral("dogs"))) << "the raw prompt is the shown conversation's";
    dialog->close();

    // Another model: the gauge is measured again, not reset to 0.
    ASSERT_TRUE(open_model(window, cflow::ui::test::moe_chatml_model()));
    EXPECT_TRUE(QTest::qWaitFor([&] { return window.controller()->contextUsed() == expected; }, 5000))
        << window.chatPanel()->contextText().toStdString();
}

TEST(ChatControllerTest, OpeningAModelWhileGeneratingAsksThenWaitsForTheReplyAndEveryViewFollows) {
    ScopedDb db("controller_model_switch");
    cflow::ui::MainWindowOptions options;
    int asked = 0;
    bool answer = false;
    QString askedModel;
    options.confirmStopReply = [&](const QString&, const QString& model) {
        ++asked;
        askedModel = model;
        return answer;
    };
    MainWindow window(nullptr, options);
    ASSERT_TRUE(open_model(window, cflow::ui::test::chatml_model()));
    EXPECT_EQ(asked, 0) << "nothing streams: nothing to ask";
    EXPECT_TRUE(window.inspector()->statusText().startsWith(QString::fromStdString(
        cflow::Model::load(cflow::ui::test::chatml_model().string()).value()->name())));
    settings(window, 600);
    {
        SlowSteps slow(window);
        ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("go on")));
        QTest::qWait(50);
        // "Keep writing": nothing changes.
        window.openModel(qpath(cflow::ui::test::moe_chatml_model()));
        EXPECT_EQ(asked, 1);
        EXPECT_EQ(askedModel, qpath(cflow::ui::test::moe_chatml_model()));
        QTest::qWait(100);
        EXPECT_TRUE(window.controller()->isGenerating()) << "the reply goes on";
        EXPECT_FALSE(window.controller()->switchPending());
        answer = true;
        window.openModel(qpath(cflow::ui::test::moe_chatml_model()));
        EXPECT_EQ(asked, 2);
        QTest::qWait(50);
        if (window.controller()->isGenerating()) {
            EXPECT_TRUE(window.windowTitle().startsWith(QStringLiteral("chatml.cflow"))) << "renamed while the old model ran";
        }
        ASSERT_TRUE(QTest::qWaitFor([&] { return window.controller()->model().path == qpath(cflow::ui::test::moe_chatml_model()); },
                                    kControllerTimeoutMs));
    }
    EXPECT_TRUE(window.windowTitle().startsWith(QStringLiteral("moe_chatml.cflow"))) << window.windowTitle().toStdString();
    EXPECT_EQ(window.inspector()->inspectorGeometry().experts, 4u);
    const std::string moeName = cflow::Model::load(cflow::ui::test::moe_chatml_model().string()).value()->name();
    EXPECT_TRUE(window.inspector()->statusText().startsWith(QString::fromStdString(moeName)))
        << window.inspector()->statusText().toStdString();
    EXPECT_TRUE(window.controller()->entries().back().stopped);
}

TEST(ChatControllerTest, AConversationMadeWithAnotherModelSaysSoInsteadOfReloadingIt) {
    ScopedDb db("controller_other_model");
    MainWindow window;
    ASSERT_TRUE(open_model(window, cflow::ui::test::chatml_model()));
    settings(window, 4);
    const qint64 a = chat_once(window, QStringLiteral("hello"));
    ASSERT_TRUE(open_model(window, cflow::ui::test::moe_chatml_model()));
    window.controller()->newConversation();
    click_conversation(window, a);
    ASSERT_EQ(window.controller()->conversationId(), a);
    QTest::qWait(200);
    EXPECT_EQ(window.controller()->model().path, qpath(cflow::ui::test::moe_chatml_model())) << "no silent reload";
    EXPECT_TRUE(window.chatPanel()->noticeText().contains(QStringLiteral("chatml.cflow")))
        << window.chatPanel()->noticeText().toStdString();

    // Going on with the loaded model records it, per reply and for the conversation.
    ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("again")));
    ASSERT_TRUE(idle(window));
    auto messages = window.store()->messages(a);
    EXPECT_EQ(messages->at(1).modelPath, qpath(cflow::ui::test::chatml_model()));
    EXPECT_EQ(messages->at(3).modelPath, qpath(cflow::ui::test::moe_chatml_model()));
    EXPECT_EQ(window.store()->conversation(a)->modelPath, qpath(cflow::ui::test::moe_chatml_model()));
    EXPECT_FALSE(window.chatPanel()->noticeText().contains(QStringLiteral("was made with")));

    // Its "Load chatml.cflow" link opens that model as File > Open does: the window's header and
    // title follow (it used to load the engine alone, past the header, the card and the question).
    click_conversation(window, chat_once(window, QStringLiteral("with the other one")));
    ASSERT_TRUE(open_model(window, cflow::ui::test::chatml_model()));
    click_conversation(window, a);
    auto* info = window.chatPanel()->findChild<QLabel*>(QStringLiteral("info"));
    ASSERT_NE(info, nullptr);
    ASSERT_TRUE(info->text().contains(QStringLiteral("load-model"))) << info->text().toStdString();
    QSignalSpy opened(&window, &MainWindow::modelOpened);
    emit info->linkActivated(QStringLiteral("load-model"));
    ASSERT_TRUE(QTest::qWaitFor([&] { return window.controller()->model().path == qpath(cflow::ui::test::moe_chatml_model()); },
                                kControllerTimeoutMs));
    EXPECT_EQ(opened.count(), 1);
    EXPECT_TRUE(window.windowTitle().startsWith(QStringLiteral("moe_chatml.cflow"))) << window.windowTitle().toStdString();
}

TEST(ChatControllerTest, BaseModelsContinueTextAndTemplatesAreChosenWithTheirEffectShown) {
    ScopedDb db("controller_prompt_control");
    MainWindow window;
    ASSERT_TRUE(open_model(window, cflow::ui::test::model_with_template("no_template", "")));
    EXPECT_EQ(window.controller()->setup().mode, cflow::ui::PromptMode::Completion) << "a base model continues text";
    settings(window, 4);
    ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("Once upon a time")));
    ASSERT_TRUE(idle(window));
    EXPECT_EQ(window.chatPanel()->lastPrompt().text, QStringLiteral("Once upon a time")) << "no \"user:\" wrapping";
    const QString continuation = window.controller()->entries()[1].content;
    ASSERT_TRUE(window.chatPanel()->send(QStringLiteral(" and then")));
    ASSERT_TRUE(idle(window));
    EXPECT_EQ(window.chatPanel()->lastPrompt().text, QStringLiteral("Once upon a time") + continuation + QStringLiteral(" and then"));
    EXPECT_GT(window.chatPanel()->lastPrompt().reusedTokens, 0) << "the continuation is in the cache";

    // Chat mode with a built-in template chosen in the Prompt panel. That template renders the
    // conversation's tools, which would take most of this byte-level model's 1024 tokens and push
    // the turns out: this check is about the turns, so the tools are off.
    for (cflow::ui::ToolProvider* provider : window.toolbox()->registry()->providers())
        ASSERT_TRUE(window.toolbox()->setProviderEnabled(provider->name(), false).ok());
    cflow::ui::PromptPanel* prompt = window.promptPanel();
    prompt->modeBox()->setCurrentIndex(0);
    emit prompt->modeBox()->activated(0);
    const int chatml = prompt->templateBox()->findData(QStringLiteral("chatml"));
    ASSERT_GT(chatml, 0);
    emit prompt->templateBox()->activated(chatml);
    EXPECT_TRUE(QTest::qWaitFor([&] { return window.controller()->visiblePrompt().text.contains(QStringLiteral("<|im_start|>user\nOnce")); }, 5000))
        << window.controller()->visiblePrompt().text.toStdString();

    // A template that drops the system prompt says so.
    ASSERT_TRUE(open_model(window, cflow::ui::test::model_with_template(
                                       "drops_system", "{% for m in messages %}{% if m['role'] != 'system' %}{{ m['content'] }}"
                                                       "\n{% endif %}{% endfor %}")));
    window.controller()->newConversation();
    window.chatPanel()->systemPromptField()->setText(QStringLiteral("You are terse."));
    EXPECT_TRUE(QTest::qWaitFor([&] { return window.chatPanel()->noticeText().contains(QStringLiteral("ignores the system prompt")); }, 5000))
        << window.chatPanel()->noticeText().toStdString();
}

TEST(ChatControllerTest, MaxTokensDefaultsToAQuarterOfTheContextAndOldTurnsAreDropped) {
    ScopedDb db("controller_context_policy");
    MainWindow window;
    ASSERT_TRUE(open_model(window, cflow::ui::test::chatml_model()));
    settings(window, 0);  // auto
    QSignalSpy finished(window.controller(), &ChatController::replyFinished);
    window.controller()->newConversation();
    ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("one")));
    ASSERT_TRUE(idle(window));
    ASSERT_EQ(finished.count(), 1);
    const auto stats = finished.takeFirst().at(0).value<cflow::ui::ReplyStats>();
    EXPECT_EQ(stats.generatedTokens, 1024 / 4);
    // Turns keep coming past the context: the oldest are left out, nothing stops.
    for (int turn = 0; turn < 4; ++turn) {
        ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("next %1").arg(turn)));
        ASSERT_TRUE(idle(window));
        const auto s = finished.takeLast().at(0).value<cflow::ui::ReplyStats>();
        EXPECT_FALSE(!s.cancelled && s.stopReason == cflow::StopReason::ContextFull) << "turn " << turn;
    }
    EXPECT_GT(window.chatPanel()->lastPrompt().droppedMessages, 0);
    EXPECT_TRUE(window.chatPanel()->noticeText().contains(QStringLiteral("left out")))
        << window.chatPanel()->noticeText().toStdString();
}

TEST(ChatControllerTest, RegenerateReusesTheCacheKeepsVersionsAndStopAndEditAreVisible) {
    ScopedDb db("controller_versions");
    MainWindow window;
    ASSERT_TRUE(open_model(window, cflow::ui::test::chatml_model()));
    cflow::ui::GenerationSettings s;
    s.maxTokens = 8;
    s.threads = 1;
    s.ignoreEos = true;
    window.samplingPanel()->setSettings(s);
    window.controller()->newConversation();
    ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("Hello there")));
    ASSERT_TRUE(idle(window));
    const QString first = window.controller()->entries()[1].content;
    ASSERT_TRUE(window.chatPanel()->regenerate());
    ASSERT_TRUE(idle(window));
    const auto& sent = window.chatPanel()->lastPrompt();
    EXPECT_EQ(sent.reusedTokens, sent.promptTokens - 1) << "only the last prompt token is fed again";
    const QString second = window.controller()->entries()[1].content;
    EXPECT_EQ(window.controller()->entries()[1].versions, (QStringList{first, second}));
    // The card offers both versions; ‹ shows the first again, in the store too.
    cflow::ui::ChatMessageCard* card = window.chatPanel()->view()->card(1);
    auto* previous = card->findChild<QToolButton*>(QStringLiteral("previousAlternative"));
    ASSERT_NE(previous, nullptr);
    EXPECT_TRUE(previous->isVisibleTo(card));
    EXPECT_TRUE(card->findChild<QLabel*>(QStringLiteral("alternativeLabel"))->text().contains(QStringLiteral("2")));
    previous->click();
    EXPECT_EQ(window.controller()->entries()[1].version, 0);
    EXPECT_EQ(window.chatPanel()->view()->card(1)->text(), first);
    EXPECT_EQ(window.store()->messages(window.controller()->conversationId())->at(1).content, first);

    // Stop marks the reply.
    s.maxTokens = 600;
    window.samplingPanel()->setSettings(s);
    {
        SlowSteps slow(window);
        ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("tell me more")));
        ASSERT_TRUE(QTest::qWaitFor([&] { return window.engine()->tokensGenerated() >= 3; }, kControllerTimeoutMs));
        window.chatPanel()->stop();
        ASSERT_TRUE(idle(window));
    }
    EXPECT_TRUE(window.controller()->entries()[3].stopped);
    EXPECT_TRUE(window.chatPanel()->view()->card(3)->isStopped()) << "the card is marked stopped";
    EXPECT_TRUE(window.store()->messages(window.controller()->conversationId())->at(3).stopped);

    // Edit says what it drops before it does.
    window.chatPanel()->beginEdit(0);
    EXPECT_TRUE(window.chatPanel()->noticeText().contains(QStringLiteral("deletes the 3 later")))
        << window.chatPanel()->noticeText().toStdString();
    window.chatPanel()->cancelEdit();
    EXPECT_FALSE(window.chatPanel()->noticeText().contains(QStringLiteral("Editing")));
    EXPECT_EQ(window.controller()->entries().size(), 4u);
}

// Issue 37: Esc did not cancel editing (Chat > Stop owns Esc as the window's shortcut). In the
// input it leaves edit mode, and the input gets back the draft it held before (as Cancel edit).
TEST(ChatControllerTest, EscapeCancelsEditingAndGivesBackTheDraft) {
    ScopedDb db("controller_escape_edit");
    MainWindow window;
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    ASSERT_TRUE(open_model(window, cflow::ui::test::chatml_model()));
    settings(window, 4);
    chat_once(window, QStringLiteral("hello"));
    cflow::ui::ChatPanel* panel = window.chatPanel();
    panel->input()->setPlainText(QStringLiteral("half a thought"));
    panel->beginEdit(0);
    EXPECT_EQ(panel->input()->toPlainText(), QStringLiteral("hello"));
    QTest::keyClicks(panel->input(), QStringLiteral(" again"));
    QTest::keyClick(panel->input(), Qt::Key_Escape);
    EXPECT_EQ(panel->editingIndex(), -1);
    EXPECT_FALSE(panel->noticeText().contains(QStringLiteral("Editing"))) << panel->noticeText().toStdString();
    EXPECT_EQ(panel->sendButton()->text(), QStringLiteral("Send"));
    EXPECT_EQ(panel->input()->toPlainText(), QStringLiteral("half a thought"));

    panel->beginEdit(0);
    panel->findChild<QPushButton*>(QStringLiteral("cancelEditButton"))->click();
    EXPECT_EQ(panel->editingIndex(), -1);
    EXPECT_EQ(panel->input()->toPlainText(), QStringLiteral("half a thought"));
    EXPECT_EQ(window.controller()->entries().size(), 2u) << "nothing was sent or dropped";
}

// Issue 37: the status bar kept the previous model's reply figures after a switch.
TEST(ChatControllerTest, SwitchingModelsClearsTheLastReplysFigures) {
    ScopedDb db("controller_switch_clears_metrics");
    MainWindow window;
    ASSERT_TRUE(open_model(window, cflow::ui::test::chatml_model()));
    settings(window, 4);
    chat_once(window, QStringLiteral("hello"));
    ASSERT_TRUE(QTest::qWaitFor([&] { return !window.statusArea()->metrics().isEmpty(); }, kControllerTimeoutMs));
    EXPECT_TRUE(window.statusArea()->metrics().contains(QStringLiteral("decode")));
    ASSERT_TRUE(open_model(window, cflow::ui::test::moe_chatml_model()));
    EXPECT_TRUE(window.statusArea()->metrics().isEmpty()) << window.statusArea()->metrics().toStdString();
    EXPECT_TRUE(window.statusArea()->message().contains(QStringLiteral("ready"))) << window.statusArea()->message().toStdString();
}

// Issue 37: a restart reopened neither the last model nor its conversation.
TEST(ChatControllerTest, ARestartReopensTheLastModelAndConversation) {
    ScopedDb db("controller_restart_reopens");
    cflow::ui::test::IsolatedSettings own_settings("restart_reopens");
    const auto forget = [] {
        QSettings settings;
        settings.remove(QStringLiteral("session"));
        settings.remove(QStringLiteral("recentModels"));
        settings.remove(QStringLiteral("mainWindow"));
    };
    forget();
    cflow::ui::MainWindowOptions options;
    options.rememberLayout = true;
    const QString fallback = QStringLiteral("default-model.cflow");
    qint64 id = 0;
    {
        MainWindow window(nullptr, options);
        EXPECT_EQ(window.startupModel(fallback), fallback) << "a first start opens the default model";
        ASSERT_TRUE(open_model(window, cflow::ui::test::moe_chatml_model()));
        settings(window, 2);
        id = chat_once(window, QStringLiteral("hello"));
        ASSERT_NE(id, 0);
        chat_once(window, QStringLiteral("a later one"));
        ASSERT_TRUE(window.controller()->openConversation(id));  // the user goes back to the first
    }
    MainWindow again(nullptr, options);
    const QString chosen = again.startupModel(fallback);
    EXPECT_EQ(chosen, qpath(cflow::ui::test::moe_chatml_model()));
    ASSERT_TRUE(open_model(again, cflow::ui::test::moe_chatml_model()));
    EXPECT_TRUE(QTest::qWaitFor([&] { return again.controller()->conversationId() == id; }, 5000))
        << again.controller()->conversationId() << " instead of " << id;
    EXPECT_EQ(again.controller()->entries().size(), 2u);
    forget();

    MainWindow without(nullptr, {});  // tests and the self-test: always the given default
    EXPECT_EQ(without.startupModel(fallback), fallback);
}

TEST(ChatControllerTest, StatusClearsOldErrorsAndShowsPromptProgress) {
    ScopedDb db("controller_status");
    MainWindow window;
    window.openModel(QStringLiteral("/nonexistent/model.cflow"));
    ASSERT_TRUE(QTest::qWaitFor([&] { return window.statusArea()->showsError(); }, kControllerTimeoutMs));
    for (QWidget* box : window.findChildren<QDialog*>()) box->close();
    ASSERT_TRUE(open_model(window, cflow::ui::test::chatml_model()));
    EXPECT_FALSE(window.statusArea()->showsError()) << window.statusArea()->message().toStdString();

    settings(window, 2);
    QSignalSpy progress(window.controller(), &ChatController::promptProgress);
    SlowSteps slow(window);
    QString longPrompt;
    for (int i = 0; i < 20; ++i) longPrompt += QStringLiteral("the cat and the dog ");
    window.controller()->newConversation();
    ASSERT_TRUE(window.chatPanel()->send(longPrompt));
    // The empty reply is not a blank bubble: it says the prompt is being read.
    EXPECT_TRUE(window.chatPanel()->view()->card(1)->activity().startsWith(QStringLiteral("reading the prompt")));
    ASSERT_TRUE(idle(window));
    EXPECT_TRUE(window.chatPanel()->view()->card(1)->activity().isEmpty());
    ASSERT_GE(progress.count(), 1);
    const int total = progress.last().at(1).toInt();
    EXPECT_GT(total, 100);
    EXPECT_EQ(progress.last().at(0).toInt(), total) << "the last report is the whole prompt";
}

TEST(ChatControllerTest, ANewWindowDecodesWithTheF16CacheByDefault) {
    ScopedDb db("controller_kv_cache_default");
    MainWindow window;
    ASSERT_TRUE(open_model(window, cflow::ui::test::chatml_model()));
    EXPECT_EQ(window.samplingPanel()->settings().kvCache, cflow::KvCacheType::F16);
    const auto* combo = window.samplingPanel()->findChild<QComboBox*>(QStringLiteral("kvCache"));
    ASSERT_NE(combo, nullptr);
    EXPECT_EQ(combo->currentData().toInt(), int(cflow::KvCacheType::F16));
    QSignalSpy finished(window.controller(), &ChatController::replyFinished);
    window.controller()->newConversation();
    ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("hello")));
    ASSERT_TRUE(idle(window));
    ASSERT_FALSE(finished.isEmpty());
    EXPECT_EQ(finished.last().at(0).value<cflow::ui::ReplyStats>().kvCache, QStringLiteral("f16"));
}

TEST(ChatControllerTest, TheKvCacheSettingReachesTheEngine) {
    ScopedDb db("controller_kv_cache");
    MainWindow window;
    ASSERT_TRUE(open_model(window, cflow::ui::test::chatml_model()));
    cflow::ui::GenerationSettings s;
    s.sampling.temperature = 0;
    s.maxTokens = 4;
    s.threads = 1;
    s.kvCache = cflow::KvCacheType::F16;
    window.samplingPanel()->setSettings(s);
    EXPECT_EQ(window.samplingPanel()->settings().kvCache, cflow::KvCacheType::F16);
    QSignalSpy finished(window.controller(), &ChatController::replyFinished);
    window.controller()->newConversation();
    ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("hello")));
    ASSERT_TRUE(idle(window));
    EXPECT_EQ(finished.last().at(0).value<cflow::ui::ReplyStats>().kvCache, QStringLiteral("f16"));
    EXPECT_TRUE(window.metricsText().contains(QStringLiteral("KV f16"))) << window.metricsText().toStdString();
    ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("again")));
    ASSERT_TRUE(idle(window));
    EXPECT_GT(window.chatPanel()->lastPrompt().reusedTokens, 0) << "the same cache type keeps the cache";
    s.kvCache = cflow::KvCacheType::F32;
    window.samplingPanel()->setSettings(s);
    ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("and f32")));
    ASSERT_TRUE(idle(window));
    EXPECT_EQ(finished.last().at(0).value<cflow::ui::ReplyStats>().kvCache, QStringLiteral("f32"));
    EXPECT_EQ(window.chatPanel()->lastPrompt().reusedTokens, 0) << "a new cache type starts from an empty cache";
    EXPECT_TRUE(window.store()->conversation(window.controller()->conversationId())->settingsJson.contains(QStringLiteral("\"kv_cache\":\"f32\"")));
}

} // namespace

namespace {

// Expert reads (Sampling panel): an MoE model's reply is the same whichever way its experts are
// read; the metrics name the arm, and the choice is stored with the conversation.
TEST(ChatControllerTest, TheExpertFetchSettingReachesTheEngineAndChangesNothingButTheReads) {
    ScopedDb db("controller_expert_fetch");
    MainWindow window;
    ASSERT_TRUE(open_model(window, cflow::ui::test::moe_chatml_model()));
    cflow::ui::GenerationSettings s;
    s.sampling.temperature = 0;
    s.maxTokens = 8;
    s.threads = 1;
    QSignalSpy finished(window.controller(), &ChatController::replyFinished);
    QStringList replies;
    for (cflow::ExpertFetch fetch : {cflow::ExpertFetch::Mapped, cflow::ExpertFetch::Sync, cflow::ExpertFetch::Staged}) {
        s.expertFetch = fetch;
        window.samplingPanel()->setSettings(s);
        EXPECT_EQ(window.samplingPanel()->settings().expertFetch, fetch);
        window.controller()->newConversation();
        ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("hello")));
        ASSERT_TRUE(idle(window));
        const auto stats = finished.last().at(0).value<cflow::ui::ReplyStats>();
        EXPECT_EQ(stats.expertFetch.toStdString(), std::string(cflow::expert_fetch_name(fetch)));
        EXPECT_TRUE(window.metricsText().contains(QStringLiteral("experts ") + stats.expertFetch)) << window.metricsText().toStdString();
        // Direct reads name what read them (io_uring here, or the reader threads where it cannot start).
        EXPECT_EQ(stats.ioBackend.isEmpty(), fetch == cflow::ExpertFetch::Mapped) << stats.ioBackend.toStdString();
        if (!stats.ioBackend.isEmpty()) {
            EXPECT_TRUE(window.metricsText().contains(QStringLiteral(" via ") + stats.ioBackend)) << window.metricsText().toStdString();
        }
        replies << window.controller()->entries().back().content;
        EXPECT_TRUE(window.store()->conversation(window.controller()->conversationId())->settingsJson.contains(
            QStringLiteral("\"expert_fetch\":\"%1\"").arg(stats.expertFetch)));
    }
    EXPECT_EQ(replies[1], replies[0]) << "sync reads give the mapped reply";
    EXPECT_EQ(replies[2], replies[0]) << "staged reads give the mapped reply";
}

} // namespace

namespace {

// Qwen3's thinking switch in the Prompt panel: offered only when the template reads
// enable_thinking, it reaches the rendered prompt, and the conversation keeps it.
// Issue 37: the note read "This model has no chat template (the model has no chat template)".
TEST(ChatControllerTest, AModelWithoutATemplateIsSaidOnce) {
    ScopedDb db("controller_no_template");
    MainWindow window;
    ASSERT_TRUE(open_model(window, cflow::ui::test::model_with_template("no_template", "")));
    const auto* note = window.promptPanel()->findChild<QLabel*>(QStringLiteral("templateNote"));
    ASSERT_NE(note, nullptr);
    window.controller()->newConversation();
    QComboBox* mode = window.promptPanel()->modeBox();
    mode->setCurrentIndex(0);  // Chat, as a user picks it (a model without a template opens in Completion)
    emit mode->activated(0);
    QComboBox* box = window.promptPanel()->templateBox();
    box->setCurrentIndex(0);  // the model's own (it has none)
    emit box->activated(0);
    EXPECT_TRUE(QTest::qWaitFor([&] { return note->text().contains(QStringLiteral("chat template")); }, 5000));
    EXPECT_TRUE(note->text().startsWith(QStringLiteral("This model has no chat template: replies use"))) << note->text().toStdString();
    EXPECT_EQ(note->text().count(QStringLiteral("chat template")), 1) << note->text().toStdString();
}

TEST(ChatControllerTest, TheThinkingSwitchReachesTheTemplateAndIsStoredWithTheConversation) {
    ScopedDb db("controller_thinking");
    MainWindow window;
    const std::string qwen3_like = cflow::ui::test::kChatMlTemplate +
                                   "{% if add_generation_prompt and enable_thinking is defined and enable_thinking is false %}"
                                   "<think>\n\n</think>\n\n{% endif %}";
    ASSERT_TRUE(open_model(window, cflow::ui::test::model_with_template("thinking_switch", qwen3_like)));
    window.controller()->newConversation();
    cflow::ui::PromptPanel* prompt = window.promptPanel();
    QComboBox* box = prompt->thinkingBox();
    EXPECT_TRUE(box->isEnabled());
    window.chatPanel()->systemPromptField()->setText(QStringLiteral("Be brief."));
    EXPECT_TRUE(QTest::qWaitFor([&] { return window.controller()->visiblePrompt().text.contains(QStringLiteral("<|im_start|>assistant\n")); }, 5000));
    EXPECT_FALSE(window.controller()->visiblePrompt().text.contains(QStringLiteral("</think>")));
    box->setCurrentIndex(2);  // Answer directly
    emit box->activated(2);
    EXPECT_EQ(window.controller()->setup().thinking, std::optional<bool>(false));
    EXPECT_TRUE(QTest::qWaitFor([&] { return window.controller()->visiblePrompt().text.contains(QStringLiteral("assistant\n<think>\n\n</think>")); }, 5000))
        << window.controller()->visiblePrompt().text.toStdString();
    settings(window, 2);
    ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("hello")));  // the conversation is stored from its first message
    ASSERT_TRUE(idle(window));
    EXPECT_TRUE(window.chatPanel()->lastPrompt().text.contains(QStringLiteral("assistant\n<think>\n\n</think>")))
        << window.chatPanel()->lastPrompt().text.toStdString();
    const qint64 id = window.controller()->conversationId();
    ASSERT_NE(id, 0);
    window.controller()->newConversation();
    EXPECT_EQ(window.controller()->setup().thinking, std::optional<bool>(false)) << "like the context policy, the choice carries over";
    box->setCurrentIndex(1);  // Think first, in the new conversation
    emit box->activated(1);
    EXPECT_EQ(window.controller()->setup().thinking, std::optional<bool>(true));
    ASSERT_TRUE(window.controller()->openConversation(id));
    EXPECT_EQ(window.controller()->setup().thinking, std::optional<bool>(false)) << "the switch is stored with the conversation";
    EXPECT_EQ(box->currentIndex(), 2);

    // A template without the switch disables it.
    ASSERT_TRUE(open_model(window, cflow::ui::test::chatml_model()));
    EXPECT_FALSE(box->isEnabled());
}

} // namespace
