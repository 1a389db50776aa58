// The local server's API key lives in the keychain (issue 34), not in the settings file: the key
// set in Server > Server settings… goes to the SecretStore (a MemorySecretStore here, answering
// later as a keychain does); an older build's plain server/apiKey moves there and leaves the ini
// only once the keychain took it; a refusing keychain keeps it working and the dialog says so;
// the server the window starts demands the key.
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
#include <QAction>
#include <QFile>
#include <QLineEdit>
#include <QSettings>
#include <QTest>
#include <QTimer>

#include <gtest/gtest.h>

#include <memory>
#include <vector>
#if CFLOW_HAVE_SERVER
#include <httplib.h>
#endif
#include <nlohmann/json.hpp>

#include "cflow/ui/chat_controller.h"
#include "cflow/ui/main_window.h"
#include "cflow/ui/remote/memory_secret_store.h"
#include "cflow/ui/server_controller.h"
#include "cflow/ui/server_settings_dialog.h"
#include "cflow/ui/server_settings_store.h"
#include "cflow/ui/status_area.h"
#include "ui_test_models.h"

namespace {

using cflow::ui::MainWindow;
using cflow::ui::MainWindowOptions;
using cflow::ui::MemorySecretStore;
using cflow::ui::ServerKeyKeeper;
using cflow::ui::ServerSettingsDialog;
using cflow::ui::test::IsolatedSettings;
using cflow::ui::test::ScopedDb;

const QString kServerKeyEntry = QString::fromLatin1(cflow::ui::kServerKeyId);

// The settings file as bytes on disk (what a person opening it would read).
QString server_key_ini_text() {
    QSettings stored;
    stored.sync();
    QFile file(stored.fileName());
    if (!file.open(QIODevice::ReadOnly)) return QString();
    return QString::fromUtf8(file.readAll());
}

MainWindowOptions server_key_window_options(std::shared_ptr<MemorySecretStore> store) {
    MainWindowOptions options;
    options.rememberLayout = true;
    options.secretStore = std::move(store);
    return options;
}

bool server_key_read(const MainWindow& window) {
    return QTest::qWaitFor([&] { return window.serverKey() && !window.serverKey()->pending(); }, 10000);
}

// Opens Server > Server settings… (modal), lets `act` look at or fill the dialog, which it closes.
void server_key_in_dialog(MainWindow& window, const std::function<void(ServerSettingsDialog&)>& act) {
    bool seen = false;
    QTimer::singleShot(0, &window, [&] {
        auto* dialog = window.findChild<ServerSettingsDialog*>();
        if (!dialog) return;
        seen = true;
        act(*dialog);
        if (dialog->isVisible()) dialog->reject();
    });
    auto* action = window.findChild<QAction*>(QStringLiteral("serverSettingsAction"));
    ASSERT_NE(action, nullptr);
    action->trigger();
    EXPECT_TRUE(seen) << "the dialog opened";
}

QLineEdit* server_key_field(ServerSettingsDialog& dialog) {
    for (auto* edit : dialog.findChildren<QLineEdit*>())
        if (edit->accessibleName() == QStringLiteral("API key")) return edit;
    return nullptr;
}

TEST(ServerKey, TheKeySetInTheDialogIsInTheKeychainAndNotInTheSettingsFile) {
    IsolatedSettings settings("server_key_dialog");
    ScopedDb db("server_key_dialog");
    auto store = std::make_shared<MemorySecretStore>();
    MainWindow window(nullptr, server_key_window_options(store));
    ASSERT_TRUE(server_key_read(window));
    EXPECT_TRUE(window.server()->settings().apiKey.isEmpty()) << "nothing saved: no key";

    server_key_in_dialog(window, [](ServerSettingsDialog& dialog) {
        QLineEdit* key = server_key_field(dialog);
        ASSERT_NE(key, nullptr);
        key->setText(QStringLiteral("dialog-key-7f3a"));
        dialog.accept();
    });
    ASSERT_TRUE(QTest::qWaitFor([&] { return store->keys().value(kServerKeyEntry) == QStringLiteral("dialog-key-7f3a"); }, 10000));
    EXPECT_EQ(window.server()->settings().apiKey, QStringLiteral("dialog-key-7f3a")) << "the server uses it at once";
    const QString ini = server_key_ini_text();
    EXPECT_FALSE(ini.isEmpty()) << "the other server settings were written";
    EXPECT_FALSE(ini.contains(QStringLiteral("dialog-key-7f3a"))) << ini.toStdString();
    EXPECT_FALSE(ini.contains(QStringLiteral("apiKey="))) << ini.toStdString();

    // Cleared in the dialog: gone from the keychain too.
    server_key_in_dialog(window, [](ServerSettingsDialog& dialog) {
        server_key_field(dialog)->clear();
        dialog.accept();
    });
    ASSERT_TRUE(QTest::qWaitFor([&] { return !store->keys().contains(kServerKeyEntry); }, 10000));
    EXPECT_TRUE(window.server()->settings().apiKey.isEmpty());
}

TEST(ServerKey, AnOlderBuildsKeyMovesFromTheSettingsFileToTheKeychain) {
    IsolatedSettings settings("server_key_migrate");
    QSettings().setValue(QStringLiteral("server/apiKey"), QStringLiteral("old-plain-key"));
    auto store = std::make_shared<MemorySecretStore>();
    ServerKeyKeeper keeper(store, QString());
    bool answered = false;
    cflow::Status loaded = cflow::make_error("no answer");
    keeper.load([&](cflow::Status status) {
        answered = true;
        loaded = status;
    });
    EXPECT_TRUE(keeper.pending());
    ASSERT_TRUE(QTest::qWaitFor([&] { return answered; }, 10000));
    EXPECT_TRUE(loaded) << loaded.error();
    EXPECT_EQ(keeper.key(), QStringLiteral("old-plain-key"));
    EXPECT_EQ(store->keys().value(kServerKeyEntry), QStringLiteral("old-plain-key"));
    EXPECT_TRUE(keeper.note().isEmpty()) << keeper.note().toStdString();
    EXPECT_FALSE(QSettings().contains(QStringLiteral("server/apiKey")));
    EXPECT_FALSE(server_key_ini_text().contains(QStringLiteral("old-plain-key"))) << server_key_ini_text().toStdString();
}

TEST(ServerKey, ARefusingKeychainKeepsTheOlderKeyWorkingInTheSettingsFileAndTheDialogSaysSo) {
    IsolatedSettings settings("server_key_refused");
    ScopedDb db("server_key_refused");
    QSettings().setValue(QStringLiteral("server/apiKey"), QStringLiteral("kept-plain-key"));
    auto store = std::make_shared<MemorySecretStore>();
    store->setFailure(QStringLiteral("the keychain is locked"));
    {
        MainWindow window(nullptr, server_key_window_options(store));
        ASSERT_TRUE(server_key_read(window));
        EXPECT_EQ(window.server()->settings().apiKey, QStringLiteral("kept-plain-key")) << "it works this session";
        EXPECT_TRUE(server_key_ini_text().contains(QStringLiteral("kept-plain-key"))) << "not lost";
        QString note;
        server_key_in_dialog(window, [&](ServerSettingsDialog& dialog) { note = dialog.keyNoteText(); });
        EXPECT_TRUE(note.contains(QStringLiteral("the keychain is locked"))) << note.toStdString();
        EXPECT_TRUE(note.contains(QStringLiteral("settings file"))) << note.toStdString();
    }
    // The keychain open again: the next start moves it.
    store->setFailure(QString());
    MainWindow window(nullptr, server_key_window_options(store));
    ASSERT_TRUE(server_key_read(window));
    EXPECT_EQ(store->keys().value(kServerKeyEntry), QStringLiteral("kept-plain-key"));
    EXPECT_FALSE(server_key_ini_text().contains(QStringLiteral("kept-plain-key")));
    EXPECT_EQ(window.server()->settings().apiKey, QStringLiteral("kept-plain-key"));
}

TEST(ServerKey, ASavedKeyTheKeychainCannotReadIsNotTakenForNoKey) {
    IsolatedSettings settings("server_key_unreadable");
    auto store = std::make_shared<MemorySecretStore>();
    {
        ServerKeyKeeper keeper(store, QString());
        bool saved = false;
        keeper.save(QStringLiteral("saved-key"), [&](cflow::Status) { saved = true; });
        ASSERT_TRUE(QTest::qWaitFor([&] { return saved; }, 10000));
    }
    store->setFailure(QStringLiteral("no keychain is running"));
    ServerKeyKeeper keeper(store, QString());
    bool answered = false;
    cflow::Status loaded;
    keeper.load([&](cflow::Status status) {
        answered = true;
        loaded = status;
    });
    ASSERT_TRUE(QTest::qWaitFor([&] { return answered; }, 10000));
    EXPECT_FALSE(loaded);
    EXPECT_TRUE(keeper.readFailed());
    EXPECT_TRUE(keeper.note().contains(QStringLiteral("no keychain is running"))) << keeper.note().toStdString();

    // With nothing ever saved, the same failure means no key (as before keys were kept).
    IsolatedSettings fresh("server_key_unreadable_fresh");
    ServerKeyKeeper none(store, QString());
    answered = false;
    none.load([&](cflow::Status status) {
        answered = true;
        loaded = status;
    });
    ASSERT_TRUE(QTest::qWaitFor([&] { return answered; }, 10000));
    EXPECT_TRUE(loaded) << loaded.error();
    EXPECT_FALSE(none.readFailed());
    EXPECT_TRUE(none.key().isEmpty());
}

#if CFLOW_HAVE_SERVER
TEST(ServerKey, TheServerTheWindowStartsDemandsTheKeyFromTheKeychain) {
    if (!cflow::ui::ServerController::available()) GTEST_SKIP() << "this build has no server (no cpp-httplib)";
    IsolatedSettings settings("server_key_serve");
    ScopedDb db("server_key_serve");
    QSettings().setValue(QStringLiteral("server/port"), 0);
    auto store = std::make_shared<MemorySecretStore>();
    {
        ServerKeyKeeper earlier(store, QString());  // as an earlier run's Server settings saved it
        bool saved = false;
        earlier.save(QStringLiteral("window-key-51"), [&](cflow::Status) { saved = true; });
        ASSERT_TRUE(QTest::qWaitFor([&] { return saved; }, 10000));
    }
    MainWindow window(nullptr, server_key_window_options(store));
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    window.openModel(cflow::ui::test::qpath(cflow::ui::test::moe_chatml_model()));
    ASSERT_TRUE(QTest::qWaitFor([&] { return window.controller()->modelReady(); }, 60000));
    ASSERT_TRUE(server_key_read(window));

    window.serveAction()->trigger();
    ASSERT_TRUE(window.server()->isRunning()) << window.statusArea()->message().toStdString();
    const int port = window.server()->url().section(u':', -1).section(u'/', 0, 0).toInt();
    const std::string body = nlohmann::json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 4}}.dump();
    httplib::Client client("127.0.0.1", port);
    auto refused = client.Post("/v1/chat/completions", body, "application/json");
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 401) << refused->body;
    auto wrong = client.Post("/v1/chat/completions", {{"Authorization", "Bearer not-the-key"}}, body, "application/json");
    ASSERT_TRUE(wrong);
    EXPECT_EQ(wrong->status, 401) << wrong->body;
    auto answered =
        client.Post("/v1/chat/completions", {{"Authorization", "Bearer window-key-51"}}, body, "application/json");
    ASSERT_TRUE(answered);
    EXPECT_EQ(answered->status, 200) << answered->body;
    window.serveAction()->trigger();
    EXPECT_FALSE(window.server()->isRunning());
}

// A keychain that answers reads only when the test says so (a locked keyring waiting for the
// user); writes and deletes go to a MemorySecretStore.
class ServerKeyHeldReads : public cflow::ui::SecretStore {
public:
    void readKey(const QString& id, std::function<void(cflow::Result<QString>)> done) override {
        held_.push_back([this, id, done = std::move(done)]() mutable { memory.readKey(id, std::move(done)); });
    }
    void writeKey(const QString& id, const QString& key, std::function<void(cflow::Status)> done) override {
        memory.writeKey(id, key, std::move(done));
    }
    void deleteKey(const QString& id, std::function<void(cflow::Status)> done) override {
        memory.deleteKey(id, std::move(done));
    }
    QString describe() const override { return QStringLiteral("a test keychain that holds reads"); }
    size_t heldReads() const { return held_.size(); }
    void release() {
        for (auto& answer : held_) answer();
        held_.clear();
    }
    MemorySecretStore memory;

private:
    std::vector<std::function<void()>> held_;
};

TEST(ServerKey, ServeChosenWhileTheKeychainIsReadStartsWhenItAnswersWithTheKey) {
    if (!cflow::ui::ServerController::available()) GTEST_SKIP() << "this build has no server (no cpp-httplib)";
    IsolatedSettings settings("server_key_held");
    ScopedDb db("server_key_held");
    QSettings().setValue(QStringLiteral("server/port"), 0);
    auto store = std::make_shared<ServerKeyHeldReads>();
    {
        ServerKeyKeeper earlier(store, QString());
        bool saved = false;
        earlier.save(QStringLiteral("held-key-90"), [&](cflow::Status) { saved = true; });
        ASSERT_TRUE(QTest::qWaitFor([&] { return saved; }, 10000));
    }
    MainWindowOptions options;
    options.rememberLayout = true;
    options.secretStore = store;
    MainWindow window(nullptr, options);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    window.openModel(cflow::ui::test::qpath(cflow::ui::test::moe_chatml_model()));
    ASSERT_TRUE(QTest::qWaitFor([&] { return window.controller()->modelReady(); }, 60000));
    ASSERT_EQ(store->heldReads(), 1u);
    ASSERT_TRUE(window.serverKey()->pending());

    bool keyFieldReadOnly = false;
    server_key_in_dialog(window, [&](ServerSettingsDialog& dialog) { keyFieldReadOnly = server_key_field(dialog)->isReadOnly(); });
    EXPECT_TRUE(keyFieldReadOnly) << "the field does not pass for the key before the keychain answered";

    window.serveAction()->trigger();
    EXPECT_FALSE(window.server()->isRunning()) << "not without the key it was given";
    EXPECT_TRUE(window.statusArea()->message().contains(QStringLiteral("keychain"))) << window.statusArea()->message().toStdString();
    store->release();
    ASSERT_TRUE(QTest::qWaitFor([&] { return window.server()->isRunning(); }, 10000)) << window.statusArea()->message().toStdString();
    EXPECT_EQ(window.server()->settings().apiKey, QStringLiteral("held-key-90"));
    httplib::Client client("127.0.0.1", window.server()->url().section(u':', -1).section(u'/', 0, 0).toInt());
    auto refused = client.Get("/v1/models");
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 401) << refused->body;
    window.serveAction()->trigger();
}

#endif  // CFLOW_HAVE_SERVER

} // namespace
#endif  // CFLOW_HAVE_QT_NETWORK_TRANSPORT
