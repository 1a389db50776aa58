// The composed main window chatting end to end on the offscreen platform: a real model in
// the engine thread, messages persisted in a per-test SQLite file, and the --self-test run
// of the real cflow-studio binary.
#include <QFileInfo>
#include <QMetaObject>
#include <QImage>
#include <QLineEdit>
#include <QListWidget>
#include <QThread>
#include <QLabel>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTest>

#include <gtest/gtest.h>

#include "cflow/ui/chat_panel.h"
#include "cflow/ui/chat_view.h"
#include "cflow/ui/conversation_sidebar.h"
#include "cflow/ui/conversation_store.h"
#include "cflow/ui/engine_worker.h"
#include "cflow/ui/main_window.h"
#include "cflow/ui/sampling_panel.h"
#include "test_support.h"
#include "ui_test_models.h"

namespace {

using cflow::ui::ChatPanel;
using cflow::ui::MainWindow;
using cflow::ui::test::qpath;

constexpr int kTimeoutMs = 60000;

using cflow::ui::test::ScopedDb;

bool ready(MainWindow& window) {
    window.openModel(qpath(cflow::ui::test::chatml_model()));
    return QTest::qWaitFor([&] { return window.chatPanel()->modelReady(); }, kTimeoutMs);
}

void greedy(MainWindow& window, int maxTokens) {
    cflow::ui::GenerationSettings s;
    s.sampling.temperature = 0;
    s.maxTokens = maxTokens;
    s.threads = 2;
    window.samplingPanel()->setSettings(s);
}

bool wait_idle(ChatPanel* chat) { return QTest::qWaitFor([&] { return !chat->isGenerating(); }, kTimeoutMs); }

TEST(ChatWindowTest, ChatTurnIsStreamedShownAndPersisted) {
    ScopedDb db("chat_turn");
    qint64 conversation = 0;
    QString reply;
    {
        MainWindow window;
        ASSERT_TRUE(ready(window));
        greedy(window, 12);
        window.chatPanel()->systemPromptField()->setText(QStringLiteral("Be terse."));
        ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("Hello")));
        EXPECT_TRUE(window.chatPanel()->isGenerating());
        EXPECT_FALSE(window.chatPanel()->send(QStringLiteral("again"))) << "one reply at a time";
        ASSERT_TRUE(wait_idle(window.chatPanel()));
        conversation = window.chatPanel()->conversationId();
        ASSERT_NE(conversation, 0);
        ASSERT_EQ(window.chatPanel()->view()->count(), 2);
        reply = window.chatPanel()->view()->card(1)->text();
        EXPECT_FALSE(reply.isEmpty());
        EXPECT_EQ(window.chatPanel()->lastPrompt().text,
                  QStringLiteral("<|im_start|>system\nBe terse.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
                                 "<|im_start|>assistant\n"));
        EXPECT_TRUE(window.metricsText().contains(QStringLiteral("decode"))) << window.metricsText().toStdString();
        EXPECT_TRUE(window.chatPanel()->contextText().contains(QStringLiteral("/ 1024"))) << window.chatPanel()->contextText().toStdString();
        ASSERT_EQ(window.sidebar()->list()->count(), 1);
        EXPECT_EQ(window.sidebar()->list()->item(0)->text(), QStringLiteral("Hello"));
    }
    // A second store on the same file (as after a restart) sees the same conversation.
    auto store = cflow::ui::ConversationStore::open(db.path);
    ASSERT_TRUE(store) << store.error();
    auto messages = (*store)->messages(conversation);
    ASSERT_TRUE(messages);
    ASSERT_EQ(messages->size(), 2u);
    EXPECT_EQ(messages->at(0).content, QStringLiteral("Hello"));
    EXPECT_EQ(messages->at(1).role, QStringLiteral("assistant"));
    EXPECT_EQ(messages->at(1).content, reply);
    EXPECT_TRUE(messages->at(1).complete);
    EXPECT_TRUE((*store)->conversation(conversation)->settingsJson.contains(QStringLiteral("Be terse.")));

    // And a new window restores it into the chat view.
    MainWindow again;
    ASSERT_TRUE(again.chatPanel()->openConversation(conversation));
    ASSERT_EQ(again.chatPanel()->view()->count(), 2);
    EXPECT_EQ(again.chatPanel()->view()->card(1)->text(), reply);
    EXPECT_EQ(again.chatPanel()->systemPromptField()->text(), QStringLiteral("Be terse."));
}

TEST(ChatWindowTest, StopRegenerateAndEdit) {
    ScopedDb db("chat_stop_edit");
    MainWindow window;
    ASSERT_TRUE(ready(window));
    greedy(window, 800);
    ChatPanel* chat = window.chatPanel();
    window.engine()->setTelemetrySink([](const cflow::TokenTelemetry&) { QThread::msleep(2); });
    ASSERT_TRUE(chat->send(QStringLiteral("Tell me everything")));
    ASSERT_TRUE(QTest::qWaitFor([&] { return window.engine()->tokensGenerated() >= 5; }, kTimeoutMs));
    chat->stop();
    ASSERT_TRUE(wait_idle(chat));
    window.engine()->setTelemetrySink({});
    auto messages = window.store()->messages(chat->conversationId());
    ASSERT_EQ(messages->size(), 2u);
    EXPECT_TRUE(messages->at(1).complete) << "a stopped reply is kept as complete";
    EXPECT_TRUE(window.metricsText().contains(QStringLiteral("cancelled"))) << window.metricsText().toStdString();

    // Regenerate replaces the last reply (no extra rows).
    greedy(window, 8);
    ASSERT_TRUE(chat->regenerate());
    ASSERT_TRUE(wait_idle(chat));
    messages = window.store()->messages(chat->conversationId());
    ASSERT_EQ(messages->size(), 2u);
    EXPECT_EQ(chat->view()->count(), 2);
    EXPECT_EQ(chat->view()->card(1)->text(), messages->at(1).content);

    // Edit the user message: it and everything after it are replaced.
    ASSERT_TRUE(chat->editAndResend(0, QStringLiteral("Edited question")));
    ASSERT_TRUE(wait_idle(chat));
    messages = window.store()->messages(chat->conversationId());
    ASSERT_EQ(messages->size(), 2u);
    EXPECT_EQ(messages->at(0).content, QStringLiteral("Edited question"));
    EXPECT_TRUE(chat->lastPrompt().text.contains(QStringLiteral("Edited question")));
    EXPECT_FALSE(chat->lastPrompt().text.contains(QStringLiteral("Tell me everything")));
    EXPECT_FALSE(chat->editAndResend(1, QStringLiteral("not a user message")));
}

// A Stop pressed while the request still waits in the worker's queue used to be lost: the
// worker started the reply with a fresh cancel token and ran to the token limit.
TEST(ChatWindowTest, StopBeforeTheReplyStartsIsNotLost) {
    ScopedDb db("chat_stop_queued");
    MainWindow window;
    ASSERT_TRUE(ready(window));
    greedy(window, 800);
    ChatPanel* chat = window.chatPanel();
    // Keep the engine thread busy so the request below is still queued when Stop is pressed.
    cflow::ui::EngineWorker* worker = window.engine();
    QMetaObject::invokeMethod(worker, [] { QThread::msleep(300); });
    ASSERT_TRUE(chat->send(QStringLiteral("Tell me everything")));
    chat->stop();
    EXPECT_EQ(worker->tokensGenerated(), 0) << "the reply must not have started yet for this test to mean anything";
    ASSERT_TRUE(wait_idle(chat));
    EXPECT_TRUE(window.metricsText().contains(QStringLiteral("cancelled"))) << window.metricsText().toStdString();
    EXPECT_EQ(worker->tokensGenerated(), 0) << "the reply ends before its first token";
}

TEST(ChatWindowTest, SidebarSearchRenameDeleteAndPresets) {
    ScopedDb db("chat_sidebar");
    MainWindow window;
    auto* store = window.store();
    const qint64 a = *store->createConversation(QStringLiteral("About tiles"));
    const qint64 b = *store->createConversation(QStringLiteral("Cats"));
    window.sidebar()->refresh();
    EXPECT_EQ(window.sidebar()->list()->count(), 2);
    window.sidebar()->setFilter(QStringLiteral("tile"));
    ASSERT_EQ(window.sidebar()->list()->count(), 1);
    EXPECT_EQ(window.sidebar()->list()->item(0)->text(), QStringLiteral("About tiles"));
    window.sidebar()->setFilter(QString());
    ASSERT_TRUE(window.sidebar()->renameConversation(b, QStringLiteral("Dogs")));
    EXPECT_EQ(store->conversation(b)->title, QStringLiteral("Dogs"));
    // Deleting goes through the controller (it stops a reply into the conversation first); the
    // sidebar follows its list change.
    ASSERT_TRUE(window.controller()->deleteConversation(a));
    EXPECT_EQ(window.sidebar()->list()->count(), 1);

    cflow::ui::GenerationSettings s;
    s.sampling.temperature = 0.3f;
    s.sampling.top_k = 7;
    s.maxTokens = 99;
    window.samplingPanel()->setSettings(s);
    window.samplingPanel()->savePreset(QStringLiteral("precise"));
    window.samplingPanel()->setSettings(cflow::ui::GenerationSettings{});
    EXPECT_NE(window.samplingPanel()->settings().sampling.top_k, 7);
    EXPECT_TRUE(window.samplingPanel()->presetNames().contains(QStringLiteral("precise")));
    ASSERT_TRUE(window.samplingPanel()->loadPreset(QStringLiteral("precise")));
    EXPECT_EQ(window.samplingPanel()->settings().sampling.top_k, 7);
    EXPECT_EQ(window.samplingPanel()->settings().maxTokens, 99);
    EXPECT_FLOAT_EQ(window.samplingPanel()->settings().sampling.temperature, 0.3f);
    EXPECT_FALSE(window.samplingPanel()->loadPreset(QStringLiteral("no such preset")));
}

#ifdef CFLOW_STUDIO_PATH
// With no display at all (no DISPLAY, WAYLAND_DISPLAY or platform plugin setting), as on a server or
// in an SSH session: --help and --version still print and exit 0.
TEST(StudioCommandLine, HelpAndVersionPrintWithoutADisplay) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) env.remove(QString::fromLatin1(name));
    for (const auto& [arg, expected] : {std::pair{"--help", "--self-test <MODEL>"}, std::pair{"--version", CFLOW_PROJECT_VERSION_FOR_TESTS}}) {
        QProcess studio;
        studio.setProcessEnvironment(env);
        studio.start(QStringLiteral(CFLOW_STUDIO_PATH), {QString::fromLatin1(arg)});
        ASSERT_TRUE(studio.waitForFinished(30000)) << arg;
        const QString output = QString::fromLocal8Bit(studio.readAllStandardOutput() + studio.readAllStandardError());
        EXPECT_EQ(studio.exitStatus(), QProcess::NormalExit) << arg << ": " << output.toStdString();
        EXPECT_EQ(studio.exitCode(), 0) << arg << ": " << output.toStdString();
        EXPECT_TRUE(output.contains(QString::fromLatin1(expected))) << arg << ": " << output.toStdString();
    }
}

TEST(StudioSelfTest, ChatsOneTurnAndSavesANonTrivialScreenshot) {
    const auto dir = cflow::test::temp_dir("studio_self_test");
    const QString png = qpath(dir / "shot.png");
    QProcess studio;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    env.insert(QStringLiteral("CFLOW_STUDIO_DB"), qpath(dir / "studio.sqlite"));
    env.insert(QStringLiteral("HOME"), qpath(dir));  // its log and settings stay in the test folder
    env.insert(QStringLiteral("XDG_DATA_HOME"), qpath(dir / "data"));
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), qpath(dir / "config"));
    studio.setProcessEnvironment(env);
    studio.start(QStringLiteral(CFLOW_STUDIO_PATH),
                 {QStringLiteral("--self-test"), qpath(cflow::ui::test::chatml_model()), QStringLiteral("--screenshot"), png});
    ASSERT_TRUE(studio.waitForFinished(90000)) << "cflow-studio --self-test did not exit";
    const QString output = QString::fromLocal8Bit(studio.readAllStandardOutput() + studio.readAllStandardError());
    ASSERT_EQ(studio.exitStatus(), QProcess::NormalExit) << output.toStdString();
    ASSERT_EQ(studio.exitCode(), 0) << output.toStdString();

    const QImage image(png);
    ASSERT_FALSE(image.isNull()) << "no PNG at " << png.toStdString();
    EXPECT_GT(QFileInfo(png).size(), 4096);
    EXPECT_GE(image.width(), 400);
    EXPECT_GE(image.height(), 300);
    // Not one flat colour: the luminance varies across the window.
    double sum = 0, sumSq = 0;
    int n = 0;
    for (int y = 0; y < image.height(); y += 2)
        for (int x = 0; x < image.width(); x += 2) {
            const double v = qGray(image.pixel(x, y));
            sum += v;
            sumSq += v * v;
            ++n;
        }
    const double mean = sum / n;
    const double variance = sumSq / n - mean * mean;
    EXPECT_GT(variance, 50.0) << "mean " << mean;

    // The self-test's turn is in the database it was given.
    auto store = cflow::ui::ConversationStore::open(qpath(dir / "studio.sqlite"));
    ASSERT_TRUE(store) << store.error();
    auto list = (*store)->conversations();
    ASSERT_EQ(list->size(), 1u);
    auto messages = (*store)->messages(list->at(0).id);
    ASSERT_EQ(messages->size(), 2u);
    EXPECT_EQ(messages->at(0).content, QStringLiteral("Hello"));
    EXPECT_TRUE(messages->at(1).complete);
}
#endif

} // namespace

#ifdef CFLOW_STUDIO_PATH
// `--size WxH` gives a window and a screenshot of exactly that size, whose layout the app
// itself checked (it fails on clipped or overlapping text).
class StudioSelfTestSizes : public ::testing::TestWithParam<QSize> {};

TEST_P(StudioSelfTestSizes, ScreenshotHasExactlyTheAskedSize) {
    const QSize size = GetParam();
    const auto dir = cflow::test::temp_dir("studio_self_test_size");
    const QString png = qpath(dir / QStringLiteral("shot-%1x%2.png").arg(size.width()).arg(size.height()).toStdString());
    QProcess studio;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    env.insert(QStringLiteral("CFLOW_STUDIO_DB"), qpath(dir / "studio.sqlite"));
    env.insert(QStringLiteral("HOME"), qpath(dir));
    env.insert(QStringLiteral("XDG_DATA_HOME"), qpath(dir / "data"));
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), qpath(dir / "config"));
    studio.setProcessEnvironment(env);
    studio.start(QStringLiteral(CFLOW_STUDIO_PATH),
                 {QStringLiteral("--self-test"), qpath(cflow::ui::test::moe_chatml_model()), QStringLiteral("--size"),
                  QStringLiteral("%1x%2").arg(size.width()).arg(size.height()), QStringLiteral("--screenshot"), png});
    ASSERT_TRUE(studio.waitForFinished(90000));
    const QString output = QString::fromLocal8Bit(studio.readAllStandardOutput() + studio.readAllStandardError());
    ASSERT_EQ(studio.exitCode(), 0) << output.toStdString();
    EXPECT_EQ(QImage(png).size(), size);
}

INSTANTIATE_TEST_SUITE_P(CommonScreens, StudioSelfTestSizes,
                         ::testing::Values(QSize(800, 600), QSize(1366, 768), QSize(1920, 1080)));

TEST(StudioSelfTest, RejectsASizeBelowTheMinimumOrMalformed) {
    for (const QString& bad : {QStringLiteral("640x480"), QStringLiteral("wide"), QStringLiteral("800x")}) {
        QProcess studio;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        studio.setProcessEnvironment(env);
        studio.start(QStringLiteral(CFLOW_STUDIO_PATH), {QStringLiteral("--self-test"), QStringLiteral("x.cflow"),
                                                         QStringLiteral("--size"), bad, QStringLiteral("--screenshot"),
                                                         QStringLiteral("/dev/null")});
        ASSERT_TRUE(studio.waitForFinished(30000));
        EXPECT_EQ(studio.exitCode(), 2) << bad.toStdString();
        EXPECT_TRUE(studio.readAllStandardError().contains("--size")) << bad.toStdString();
    }
}
#endif
