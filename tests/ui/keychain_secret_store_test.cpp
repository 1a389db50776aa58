// KeychainSecretStore against a real Secret Service: a private D-Bus session with GNOME Keyring
// that tests/ui/run_with_secret_service.sh starts (ctest: cflow_ui_keychain). Writes, reads back,
// replaces and deletes a key under a service name of its own; a missing key reads as none. Skips,
// saying why, where no Secret Service could be started, and never runs against the user's own
// keychain (outside the script).
#include <gtest/gtest.h>

#include <QTest>

#include <optional>

#include "cflow/ui/remote/keychain_secret_store.h"

namespace cflow::ui {
namespace {

constexpr int kWaitMs = 30'000;  // a loose bound: the keyring answers in milliseconds

Result<QString> read_key(SecretStore& store, const QString& id) {
    std::optional<Result<QString>> read;
    store.readKey(id, [&](Result<QString> key) { read.emplace(std::move(key)); });
    EXPECT_FALSE(read.has_value()) << "answered inside the call";
    if (!QTest::qWaitFor([&] { return read.has_value(); }, kWaitMs)) return make_error("no answer from the keychain");
    return *read;
}

Status write_key(SecretStore& store, const QString& id, const QString& key) {
    std::optional<Status> done;
    store.writeKey(id, key, [&](Status s) { done.emplace(std::move(s)); });
    if (!QTest::qWaitFor([&] { return done.has_value(); }, kWaitMs)) return make_error("no answer from the keychain");
    return *done;
}

Status delete_key(SecretStore& store, const QString& id) {
    std::optional<Status> done;
    store.deleteKey(id, [&](Status s) { done.emplace(std::move(s)); });
    if (!QTest::qWaitFor([&] { return done.has_value(); }, kWaitMs)) return make_error("no answer from the keychain");
    return *done;
}

TEST(KeychainSecretStore, WriteReadReplaceAndDeleteInARealSecretService) {
    if (qEnvironmentVariable("CFLOW_TEST_SECRET_SERVICE") != QLatin1String("1")) {
        const QString why = qEnvironmentVariable("CFLOW_SECRET_SERVICE_MISSING");
        GTEST_SKIP() << "no private Secret Service: "
                     << (why.isEmpty() ? std::string("this test runs only under tests/ui/run_with_secret_service.sh "
                                                     "(ctest cflow_ui_keychain), never against your own keychain")
                                       : why.toStdString());
    }
    KeychainSecretStore store(QStringLiteral("cflow-studio-test"));
    EXPECT_TRUE(store.describe().contains(QStringLiteral("keychain")));
    const QString id = QStringLiteral("3f0c-profile");

    const auto none = read_key(store, id);
    ASSERT_TRUE(none) << none.error();
    EXPECT_TRUE(none->isEmpty()) << "a profile without a key reads as none";

    const Status wrote = write_key(store, id, QStringLiteral("sk-first"));
    ASSERT_TRUE(wrote) << wrote.error();
    auto read = read_key(store, id);
    ASSERT_TRUE(read) << read.error();
    EXPECT_EQ(*read, QStringLiteral("sk-first"));

    // A second store (the app started again) finds it; a new key replaces the old.
    KeychainSecretStore later(QStringLiteral("cflow-studio-test"));
    ASSERT_TRUE(write_key(later, id, QStringLiteral("sk-second")));
    read = read_key(store, id);
    ASSERT_TRUE(read) << read.error();
    EXPECT_EQ(*read, QStringLiteral("sk-second"));
    // Another service's entry of the same id is another key (the app's keys are not the test's).
    read = read_key(*std::make_unique<KeychainSecretStore>(QStringLiteral("cflow-studio-test-other")), id);
    ASSERT_TRUE(read) << read.error();
    EXPECT_TRUE(read->isEmpty());

    const Status deleted = delete_key(store, id);
    ASSERT_TRUE(deleted) << deleted.error();
    read = read_key(store, id);
    ASSERT_TRUE(read) << read.error();
    EXPECT_TRUE(read->isEmpty()) << "deleted";
    const Status again = delete_key(store, id);
    EXPECT_TRUE(again) << "deleting what is not there: " << again.error();
}

} // namespace
} // namespace cflow::ui
