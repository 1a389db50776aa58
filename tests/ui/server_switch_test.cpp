// The desktop app's Server switch: Server > Serve the loaded model starts the same OpenAI
// server as `cflow serve` on the chat's model; the status bar shows its URL and counts the
// requests; the inspector charts the server's generations; the switch stops it, and it follows
// the chat to another model.
#include <QAction>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <gtest/gtest.h>

#include <atomic>
#if CFLOW_HAVE_SERVER
#include <httplib.h>
#endif
#include <nlohmann/json.hpp>

#include "cflow/engine/forward/model.h"
#include "cflow/ui/chat_controller.h"
#include "cflow/ui/inspector/inspector_dock.h"
#include "cflow/ui/main_window.h"
#include "cflow/ui/server_controller.h"
#include "cflow/ui/server_settings_store.h"
#include "cflow/ui/server_settings_dialog.h"
#include "cflow/ui/status_area.h"
#include "ui_test_models.h"

namespace {

using cflow::ui::MainWindow;
using cflow::ui::ServerController;
using cflow::ui::ServerSettings;
using cflow::ui::test::ScopedDb;
using nlohmann::json;

#if CFLOW_HAVE_SERVER
int port_of(const QString& url) { return url.section(u':', -1).section(u'/', 0, 0).toInt(); }

std::string chat_request(bool stream) {
    return json{{"messages", {{{"role", "user"}, {"content", "What can you do?"}}}},
                {"max_tokens", 12}, {"seed", 4}, {"stream", stream}}.dump();
}

TEST(ServerSwitch, TheControllerServesAModelAndReportsEachRequest) {
    if (!ServerController::available()) GTEST_SKIP() << "this build has no server (no cpp-httplib)";
    auto model = cflow::Model::load(cflow::ui::test::moe_chatml_model().string());
    ASSERT_TRUE(model.ok()) << model.error();
    ServerController controller;
    ServerSettings settings;
    settings.port = 0;
    settings.apiKey = QStringLiteral("k");
    settings.threadsPerSlot = 1;
    controller.setSettings(settings);
    std::atomic<int> steps{0};
    controller.setTelemetrySink([&](const cflow::TokenTelemetry&) { steps.fetch_add(1); });
    QSignalSpy served(&controller, &ServerController::requestServed);
    const cflow::Status started = controller.start(model.value(), cflow::ui::test::qpath(cflow::ui::test::moe_chatml_model()));
    ASSERT_TRUE(started) << started.error();
    EXPECT_TRUE(controller.isRunning());
    EXPECT_TRUE(controller.url().startsWith(QStringLiteral("http://127.0.0.1:")));
    EXPECT_TRUE(controller.url().endsWith(QStringLiteral("/v1")));

    httplib::Client client("127.0.0.1", port_of(controller.url()));
    auto reply = client.Post("/v1/chat/completions", {{"Authorization", "Bearer k"}}, chat_request(false), "application/json");
    ASSERT_TRUE(reply);
    ASSERT_EQ(reply->status, 200) << reply->body;
    EXPECT_EQ(json::parse(reply->body)["model"], controller.modelId().toStdString());
    ASSERT_TRUE(served.wait(10000)) << "requestServed arrives on the GUI thread";
    EXPECT_EQ(served.last().at(1).toULongLong(), 1u);
    EXPECT_TRUE(served.last().at(0).toString().contains(QStringLiteral("/v1/chat/completions")));
    EXPECT_GT(steps.load(), 2) << "every forward step reaches the telemetry sink";

    const int port = port_of(controller.url());
    controller.stop();
    EXPECT_FALSE(controller.isRunning());
    httplib::Client gone("127.0.0.1", port);
    gone.set_connection_timeout(2, 0);
    EXPECT_FALSE(gone.Get("/v1/models")) << "nothing listens after stop";
}

TEST(ServerSwitch, AnAddressInUseIsReportedAndNothingRuns) {
    if (!ServerController::available()) GTEST_SKIP() << "this build has no server (no cpp-httplib)";
    auto model = cflow::Model::load(cflow::ui::test::moe_chatml_model().string());
    ASSERT_TRUE(model.ok());
    ServerController first, second;
    ServerSettings settings;
    settings.port = 0;
    first.setSettings(settings);
    ASSERT_TRUE(first.start(model.value(), QStringLiteral("a.cflow")));
    settings.port = port_of(first.url());
    second.setSettings(settings);
    const cflow::Status taken = second.start(model.value(), QStringLiteral("b.cflow"));
    ASSERT_FALSE(taken);
    EXPECT_FALSE(second.isRunning());
    EXPECT_EQ(taken.kind(), cflow::ErrorKind::Io) << taken.error();
    EXPECT_NE(taken.error().find(std::to_string(settings.port)), std::string::npos) << taken.error();
    const cflow::Status noModel = second.start(nullptr, QStringLiteral("c.cflow"));
    ASSERT_FALSE(noModel);
    EXPECT_EQ(noModel.kind(), cflow::ErrorKind::InvalidInput) << noModel.error();
}

TEST(ServerSwitch, TheMenuStartsTheServerTheStatusBarShowsItAndTheInspectorChartsIt) {
    if (!ServerController::available()) GTEST_SKIP() << "this build has no server (no cpp-httplib)";
    ScopedDb db("server_switch");
    MainWindow window;
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    EXPECT_FALSE(window.serveAction()->isEnabled()) << "nothing to serve before a model is loaded";
    window.openModel(cflow::ui::test::qpath(cflow::ui::test::moe_chatml_model()));
    ASSERT_TRUE(QTest::qWaitFor([&] { return window.controller()->modelReady(); }, 60000));
    ASSERT_TRUE(window.serveAction()->isEnabled());
    ServerSettings settings;
    settings.port = 0;
    window.server()->setSettings(settings);

    window.serveAction()->trigger();
    ASSERT_TRUE(window.server()->isRunning()) << window.statusArea()->message().toStdString();
    EXPECT_TRUE(window.serveAction()->isChecked());
    EXPECT_TRUE(window.statusArea()->server().contains(window.server()->url())) << window.statusArea()->server().toStdString();
    EXPECT_TRUE(window.statusArea()->server().contains(QStringLiteral("0 requests")));

    int drained = 0;
    QObject::connect(window.inspector(), &cflow::ui::InspectorDock::tokensDrained, [&](int n) { drained += n; });
    httplib::Client client("127.0.0.1", port_of(window.server()->url()));
    auto reply = client.Post("/v1/chat/completions", chat_request(true), "application/json");
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 200);
    ASSERT_TRUE(QTest::qWaitFor([&] { return window.statusArea()->server().contains(QStringLiteral("1 request")); }, 10000))
        << window.statusArea()->server().toStdString();
    ASSERT_TRUE(QTest::qWaitFor([&] { return drained > 2; }, 5000)) << "the inspector drained the server's steps";

    window.serveAction()->trigger();
    EXPECT_FALSE(window.server()->isRunning());
    EXPECT_FALSE(window.serveAction()->isChecked());
    EXPECT_TRUE(window.statusArea()->server().isEmpty());
}

#endif  // CFLOW_HAVE_SERVER

TEST(ServerSwitch, SettingsAreKeptBetweenRunsUnderTheirKeys) {
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    QSettings stored(dir.filePath(QStringLiteral("studio.ini")), QSettings::IniFormat);
    EXPECT_EQ(cflow::ui::read_server_settings(stored), ServerSettings{}) << "nothing stored: the defaults";
    ServerSettings chosen;
    chosen.host = QStringLiteral("0.0.0.0");
    chosen.port = 9191;
    chosen.parallel = 3;
    cflow::ui::write_server_settings(stored, chosen);
    stored.sync();
    QSettings reread(dir.filePath(QStringLiteral("studio.ini")), QSettings::IniFormat);
    EXPECT_EQ(cflow::ui::read_server_settings(reread), chosen);
    chosen.apiKey = QStringLiteral("k-1");
    cflow::ui::write_server_settings(stored, chosen);
    stored.sync();
    EXPECT_FALSE(QSettings(dir.filePath(QStringLiteral("studio.ini")), QSettings::IniFormat).contains(QStringLiteral("server/apiKey")))
        << "the key goes to the keychain (ServerKeyKeeper), never to the settings file";
    EXPECT_EQ(reread.value(QStringLiteral("server/port")).toInt(), 9191) << "the key earlier versions wrote";
}

TEST(ServerSwitch, TheSettingsDialogWarnsAboutAnAddressOthersCanReach) {
    ServerSettings settings;
    cflow::ui::ServerSettingsDialog loopback(settings);
    EXPECT_TRUE(loopback.warningText().isEmpty());
    settings.host = QStringLiteral("0.0.0.0");
    cflow::ui::ServerSettingsDialog open(settings);
    EXPECT_TRUE(open.warningText().contains(QStringLiteral("without an API key")));
    settings.apiKey = QStringLiteral("secret");
    cflow::ui::ServerSettingsDialog keyed(settings);
    EXPECT_FALSE(keyed.warningText().isEmpty());
    EXPECT_FALSE(keyed.warningText().contains(QStringLiteral("without an API key")));
    EXPECT_EQ(keyed.settings(), settings);
}

} // namespace
