// Model > Connect to a server… (issue 34) on the offscreen platform: the Connect dialog against a
// real `cflow serve` with an API key (401 with a wrong key, the model list with the right one,
// Connect saves the profile and puts the key in the SecretStore, not in the settings file), the
// diagnoses of a refused port and of a base URL without /v1, https trusted only with the CA file
// given (stunnel4), a keychain that fails (reported, then a Connect for this session only), and a
// dialog closed while its connection test waits on a stalling server. The MemorySecretStore stands
// in for the system keychain (keychain_secret_store_test.cpp tests that one).
#include <gtest/gtest.h>

#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>

#include <atomic>
#include <memory>

#include "cflow/ui/layout_audit.h"
#include "cflow/ui/remote/connect_dialog.h"
#include "cflow/ui/remote/memory_secret_store.h"
#include "loopback_server.h"
#include "serve_process.h"
#include "tls_fixture.h"

namespace cflow::ui {
namespace {

constexpr int kWaitMs = 60'000;  // a loose bound: the bundled model's server answers in well under a second

template <class T>
T* child(QWidget& dialog, const char* name) {
    T* found = dialog.findChild<T*>(QString::fromLatin1(name));
    EXPECT_NE(found, nullptr) << name;
    return found;
}

struct Fixture {
    QTemporaryDir dir;
    QString ini = dir.filePath(QStringLiteral("endpoints.ini"));
    EndpointProfileStore profiles{ini};
    MemorySecretStore secrets;
};

// Types the form and runs Test connection; true when it connected.
bool test_connection(ConnectDialog& dialog, const QString& url, const QString& key) {
    child<QLineEdit>(dialog, "baseUrl")->setText(url);
    child<QLineEdit>(dialog, "apiKey")->setText(key);
    QSignalSpy finished(&dialog, &ConnectDialog::testFinished);
    QPushButton* test = child<QPushButton>(dialog, "testConnection");
    EXPECT_TRUE(test->isEnabled());
    test->click();
    EXPECT_FALSE(test->isEnabled()) << "one test at a time";
    EXPECT_TRUE(finished.wait(kWaitMs)) << "no answer to the connection test";
    return !finished.isEmpty() && finished.takeFirst().at(0).toBool();
}

int closed_port() {
    QTcpServer server;
    if (!server.listen(QHostAddress::LocalHost, 0)) return 0;
    const int port = server.serverPort();
    server.close();  // nothing listens there now
    return port;
}

TEST(ConnectDialog, AgainstCflowServeAWrongKeyIsRefusedAndTheRightOneListsModelsAndConnects) {
    cflow::test::ServeProcess serve({}, "127.0.0.1", {"--api-key", "right-key-4711"});
    ASSERT_TRUE(serve.started()) << serve.log();
    const QString url = QString::fromStdString(serve.base_url());
    Fixture f;
    ConnectDialog dialog(&f.profiles, &f.secrets);
    dialog.show();
    child<QLineEdit>(dialog, "endpointName")->setText(QStringLiteral("loopback serve"));

    EXPECT_FALSE(test_connection(dialog, url, QStringLiteral("wrong-key")));
    EXPECT_TRUE(dialog.statusText().contains(QStringLiteral("401"))) << dialog.statusText().toStdString();
    EXPECT_TRUE(dialog.statusText().contains(QStringLiteral("Model > Connect to a server"))) << "the desktop's advice";
    EXPECT_FALSE(dialog.statusText().contains(QStringLiteral("--api-key-env"))) << "not the CLI's flag";
    EXPECT_TRUE(dialog.statusText().contains(QStringLiteral("API key"))) << dialog.statusText().toStdString();

    ASSERT_TRUE(test_connection(dialog, url, QStringLiteral("right-key-4711"))) << dialog.statusText().toStdString();
    EXPECT_EQ(dialog.statusText(), QStringLiteral("Connected: 1 model"));
    QComboBox* model = child<QComboBox>(dialog, "model");
    ASSERT_EQ(model->count(), 1);
    const QString served = model->itemText(0);
    EXPECT_FALSE(served.isEmpty());
    EXPECT_EQ(model->currentText(), served);

    QSignalSpy accepted(&dialog, &QDialog::accepted);
    child<QPushButton>(dialog, "connectButton")->click();
    ASSERT_TRUE(accepted.count() == 1 || accepted.wait(kWaitMs)) << dialog.statusText().toStdString();
    EXPECT_EQ(dialog.result(), QDialog::Accepted);
    const EndpointChoice choice = dialog.chosen();
    EXPECT_EQ(choice.apiKey, QStringLiteral("right-key-4711"));
    EXPECT_EQ(choice.profile.model, served);
    EXPECT_EQ(choice.profile.baseUrl, url);
    EXPECT_EQ(choice.profile.name, QStringLiteral("loopback serve"));
    EXPECT_TRUE(choice.profile.hasKey);
    ASSERT_FALSE(choice.profile.id.isEmpty());

    // The key is in the SecretStore under the profile's id, and nowhere in the settings file.
    EXPECT_EQ(f.secrets.keys().value(choice.profile.id), QStringLiteral("right-key-4711"));
    QFile ini(f.ini);
    ASSERT_TRUE(ini.open(QIODevice::ReadOnly)) << f.ini.toStdString();
    const QByteArray bytes = ini.readAll();
    EXPECT_TRUE(bytes.contains(url.toUtf8())) << "the profile itself was saved: " << bytes.toStdString();
    EXPECT_FALSE(bytes.contains("right-key-4711")) << bytes.toStdString();
    const std::vector<EndpointProfile> saved = f.profiles.profiles();
    ASSERT_EQ(saved.size(), 1u);
    EXPECT_EQ(saved[0].model, served);

    // Opened again, the saved profile is shown and its key arrives from the store later, not at once.
    ConnectDialog again(&f.profiles, &f.secrets);
    QSignalSpy keyLoaded(&again, &ConnectDialog::keyLoaded);
    EXPECT_EQ(child<QListWidget>(again, "endpointList")->count(), 1);
    EXPECT_EQ(child<QLineEdit>(again, "baseUrl")->text(), url);
    EXPECT_EQ(child<QComboBox>(again, "model")->currentText(), served);
    EXPECT_TRUE(child<QLineEdit>(again, "apiKey")->text().isEmpty()) << "the keychain has not answered yet";
    EXPECT_FALSE(child<QPushButton>(again, "connectButton")->isEnabled()) << "Connect waits for the key";
    ASSERT_TRUE(keyLoaded.wait(kWaitMs));
    EXPECT_EQ(child<QLineEdit>(again, "apiKey")->text(), QStringLiteral("right-key-4711"));
    EXPECT_TRUE(child<QPushButton>(again, "connectButton")->isEnabled());
    EXPECT_TRUE(test_connection(again, url, child<QLineEdit>(again, "apiKey")->text())) << again.statusText().toStdString();
}

TEST(ConnectDialog, ARefusedPortAndABaseUrlWithoutV1AreDiagnosed) {
    Fixture f;
    ConnectDialog dialog(&f.profiles, &f.secrets);
    dialog.show();
    const int port = closed_port();
    ASSERT_GT(port, 0);
    EXPECT_FALSE(test_connection(dialog, QStringLiteral("http://127.0.0.1:%1/v1").arg(port), QString()));
    EXPECT_TRUE(dialog.statusText().contains(QStringLiteral("refused"))) << dialog.statusText().toStdString();

    cflow::test::ServeProcess serve({}, "127.0.0.1");
    ASSERT_TRUE(serve.started()) << serve.log();
    const QString origin = QStringLiteral("http://127.0.0.1:%1").arg(serve.port());
    EXPECT_FALSE(test_connection(dialog, origin, QString()));
    EXPECT_TRUE(dialog.statusText().contains(QStringLiteral("404"))) << dialog.statusText().toStdString();
    EXPECT_TRUE(dialog.statusText().contains(QStringLiteral("wrong path"))) << dialog.statusText().toStdString();
    EXPECT_TRUE(dialog.statusText().contains(origin + QStringLiteral("/v1"))) << "says what to try: "
                                                                              << dialog.statusText().toStdString();

    // An unreadable URL is refused before any request, with what is wrong with it.
    child<QLineEdit>(dialog, "baseUrl")->setText(QStringLiteral("gpu-box:8080/v1"));
    child<QPushButton>(dialog, "connectButton")->click();
    EXPECT_EQ(dialog.result(), QDialog::Rejected);
    EXPECT_TRUE(dialog.statusText().contains(QStringLiteral("gpu-box:8080/v1"))) << dialog.statusText().toStdString();
    EXPECT_TRUE(f.profiles.profiles().empty());
}

// The CA file field reaches the transport: https through stunnel4 is refused with a CA that signed
// nothing, and connects with the CA that signed the server's certificate.
TEST(ConnectDialog, HttpsIsTrustedOnlyWithTheCaFileGiven) {
    std::string why;
    if (!cflow::test::have_tls_tools(why))
        GTEST_SKIP() << "stunnel4 or openssl is missing (apt-get install stunnel4 openssl): " << why;
    cflow::test::TestCertificates certs;
    ASSERT_TRUE(certs.ok()) << certs.why();
    cflow::test::ServeProcess serve({}, "127.0.0.1");
    ASSERT_TRUE(serve.started()) << serve.log();
    cflow::test::Stunnel stunnel(certs, serve.port());
    ASSERT_TRUE(stunnel.up()) << "stunnel4 did not listen on " << stunnel.port();
    const QString url = QStringLiteral("https://localhost:%1/v1").arg(stunnel.port());

    Fixture f;
    ConnectDialog dialog(&f.profiles, &f.secrets);
    dialog.show();
    QLineEdit* caFile = child<QLineEdit>(dialog, "caFile");
    EXPECT_FALSE(test_connection(dialog, url, QString()));  // the system's CAs do not know it
    EXPECT_TRUE(dialog.statusText().contains(QStringLiteral("endpoint's CA file"))) << dialog.statusText().toStdString();
    EXPECT_FALSE(dialog.statusText().contains(QStringLiteral("--ca-file"))) << "the desktop's advice, not the CLI's flag";
    caFile->setText(QString::fromStdString(certs.other_ca()));
    EXPECT_FALSE(test_connection(dialog, url, QString()));
    EXPECT_TRUE(dialog.statusText().contains(QStringLiteral("not trusted"))) << dialog.statusText().toStdString();

    caFile->setText(QString::fromStdString(certs.ca()));
    EXPECT_TRUE(test_connection(dialog, url, QString())) << dialog.statusText().toStdString();
    child<QPushButton>(dialog, "connectButton")->click();
    EXPECT_EQ(dialog.result(), QDialog::Accepted) << dialog.statusText().toStdString();
    EXPECT_EQ(dialog.chosen().profile.caFile, QString::fromStdString(certs.ca()));
}

TEST(ConnectDialog, AKeychainThatFailsKeepsTheDialogOpenThenConnectsWithoutSavingTheKey) {
    Fixture f;
    f.secrets.setFailure(QStringLiteral("no keychain is running"));
    ConnectDialog dialog(&f.profiles, &f.secrets);
    dialog.show();
    child<QLineEdit>(dialog, "baseUrl")->setText(QStringLiteral("http://127.0.0.1:9/v1"));
    child<QLineEdit>(dialog, "apiKey")->setText(QStringLiteral("secret"));
    child<QPushButton>(dialog, "connectButton")->click();
    QTRY_VERIFY_WITH_TIMEOUT(!dialog.statusText().isEmpty(), kWaitMs);
    EXPECT_TRUE(dialog.statusText().contains(QStringLiteral("no keychain is running"))) << dialog.statusText().toStdString();
    EXPECT_EQ(dialog.result(), QDialog::Rejected);
    EXPECT_TRUE(dialog.isVisible());
    EXPECT_TRUE(f.profiles.profiles().empty()) << "no profile claims a key the keychain does not have";
    EXPECT_EQ(child<QLineEdit>(dialog, "apiKey")->text(), QStringLiteral("secret")) << "what was typed is kept";

    // Connect again: the button says what it does now, and the key is used for this session only.
    QPushButton* connectButton = child<QPushButton>(dialog, "connectButton");
    EXPECT_TRUE(connectButton->text().contains(QStringLiteral("without saving the key"))) << connectButton->text().toStdString();
    connectButton->click();
    EXPECT_EQ(dialog.result(), QDialog::Accepted);
    EXPECT_EQ(dialog.chosen().apiKey, QStringLiteral("secret"));
    EXPECT_FALSE(dialog.chosen().profile.hasKey);
    ASSERT_EQ(f.profiles.profiles().size(), 1u);
    EXPECT_FALSE(f.profiles.profiles()[0].hasKey);
    EXPECT_TRUE(f.secrets.keys().isEmpty());
    QFile ini(f.ini);
    ASSERT_TRUE(ini.open(QIODevice::ReadOnly));
    EXPECT_FALSE(ini.readAll().contains("secret"));
}

TEST(ConnectDialog, WithoutAKeychainTheKeyIsForThisSessionOnly) {
    Fixture f;
    ConnectDialog dialog(&f.profiles, nullptr);
    dialog.show();
    EXPECT_TRUE(child<QLabel>(dialog, "keyNote")->text().contains(QStringLiteral("Not saved")));
    child<QLineEdit>(dialog, "baseUrl")->setText(QStringLiteral("http://127.0.0.1:9/v1"));
    child<QLineEdit>(dialog, "apiKey")->setText(QStringLiteral("typed-per-session"));
    child<QPushButton>(dialog, "connectButton")->click();
    EXPECT_EQ(dialog.result(), QDialog::Accepted);
    EXPECT_EQ(dialog.chosen().apiKey, QStringLiteral("typed-per-session"));
    EXPECT_FALSE(dialog.chosen().profile.hasKey);
    QFile ini(f.ini);
    ASSERT_TRUE(ini.open(QIODevice::ReadOnly));
    EXPECT_FALSE(ini.readAll().contains("typed-per-session"));
}

TEST(ConnectDialog, DeleteForgetsTheProfileAndItsKey) {
    Fixture f;
    EndpointProfile profile;
    profile.name = QStringLiteral("old box");
    profile.baseUrl = QStringLiteral("http://10.0.0.9:8080/v1");
    profile.hasKey = true;
    const auto saved = f.profiles.save(profile);
    ASSERT_TRUE(saved) << saved.error();
    bool written = false;
    f.secrets.writeKey(saved->id, QStringLiteral("k"), [&](Status s) { written = s.ok(); });
    QTRY_VERIFY_WITH_TIMEOUT(written, kWaitMs);

    ConnectDialog dialog(&f.profiles, &f.secrets);
    dialog.show();
    ASSERT_EQ(child<QListWidget>(dialog, "endpointList")->count(), 1);
    // Asked first; No keeps the profile and its key.
    child<QPushButton>(dialog, "deleteEndpoint")->click();
    auto* question = dialog.findChild<QMessageBox*>(QStringLiteral("confirmDeleteEndpoint"));
    ASSERT_NE(question, nullptr);
    EXPECT_TRUE(question->text().contains(QStringLiteral("old box"))) << question->text().toStdString();
    EXPECT_TRUE(question->text().contains(QStringLiteral("API key"))) << question->text().toStdString();
    question->button(QMessageBox::No)->click();
    EXPECT_EQ(f.profiles.profiles().size(), 1u);
    EXPECT_TRUE(f.secrets.keys().contains(saved->id));
    QTRY_VERIFY_WITH_TIMEOUT(dialog.findChild<QMessageBox*>(QStringLiteral("confirmDeleteEndpoint")) == nullptr, kWaitMs);
    child<QPushButton>(dialog, "deleteEndpoint")->click();
    question = dialog.findChild<QMessageBox*>(QStringLiteral("confirmDeleteEndpoint"));
    ASSERT_NE(question, nullptr);
    question->button(QMessageBox::Yes)->click();
    EXPECT_TRUE(f.profiles.profiles().empty());
    EXPECT_EQ(child<QListWidget>(dialog, "endpointList")->count(), 0);
    QTRY_VERIFY_WITH_TIMEOUT(!f.secrets.keys().contains(saved->id), kWaitMs);
    EXPECT_TRUE(child<QLineEdit>(dialog, "baseUrl")->text().isEmpty()) << "the form is a new profile's";
}

TEST(ConnectDialog, ClosingTheDialogWhileATestWaitsOnAStallingServerDoesNotCrash) {
    cflow::test::LoopbackServer server;
    std::atomic<int> asked{0};
    server.http.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
        ++asked;
        server.stall(30'000);  // never answers while the test runs (teardown releases it)
        res.set_content("{\"data\":[]}", "application/json");
    });
    server.start();
    Fixture f;
    auto dialog = std::make_unique<ConnectDialog>(&f.profiles, &f.secrets);
    dialog->show();
    child<QLineEdit>(*dialog, "baseUrl")->setText(QString::fromStdString(server.base_url()));
    child<QSpinBox>(*dialog, "readTimeout")->setValue(1);
    // Waited for, a stall is a time-out with the profile's read time-out in its message.
    EXPECT_FALSE(test_connection(*dialog, QString::fromStdString(server.base_url()), QString()));
    EXPECT_TRUE(dialog->statusText().contains(QStringLiteral("time-out"))) << dialog->statusText().toStdString();
    EXPECT_EQ(asked.load(), 1);

    // New while a test runs: the form is another profile's, and the old answer does not land on it.
    child<QPushButton>(*dialog, "testConnection")->click();
    QTRY_VERIFY_WITH_TIMEOUT(asked.load() == 2, kWaitMs);
    child<QPushButton>(*dialog, "newEndpoint")->click();
    EXPECT_TRUE(child<QPushButton>(*dialog, "testConnection")->isEnabled());
    QTest::qWait(2500);  // past the old test's 1 s time-out
    EXPECT_TRUE(dialog->statusText().isEmpty()) << dialog->statusText().toStdString();

    child<QLineEdit>(*dialog, "baseUrl")->setText(QString::fromStdString(server.base_url()));
    child<QSpinBox>(*dialog, "readTimeout")->setValue(1);
    child<QPushButton>(*dialog, "testConnection")->click();
    QTRY_VERIFY_WITH_TIMEOUT(asked.load() == 3, kWaitMs);
    dialog.reset();  // closed while the worker waits for the server
    // The worker gives up at its 1 s read time-out and posts its answer to a dialog that is gone.
    QTest::qWait(2500);
    EXPECT_EQ(asked.load(), 3);
}

TEST(DialogAudit, TheConnectDialog) {
    Fixture f;
    EndpointProfile profile;
    profile.name = QStringLiteral("GPU box");
    profile.baseUrl = QStringLiteral("http://10.0.0.2:8080/v1");
    ASSERT_TRUE(f.profiles.save(profile));
    ConnectDialog dialog(&f.profiles, &f.secrets);
    dialog.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&dialog));
    QTest::qWait(30);  // the last layout pass
    const QStringList problems = layout_problems(&dialog) + accessibility_problems(&dialog);
    EXPECT_TRUE(problems.isEmpty()) << problems.join(u'\n').toStdString();
}

} // namespace
} // namespace cflow::ui
