#pragma once
// API keys in the OS keychain through QtKeychain (Debian's qtkeychain-qt6): the Secret Service
// (GNOME Keyring, KWallet) on Linux, the Credential Manager on Windows. Service "cflow-studio",
// one entry per profile id. Never falls back to a plain-text file: without a keychain, calls fail
// and say so. Built only where Qt6Keychain was found (CFLOW_HAVE_KEYCHAIN).
#include <QObject>

#include <memory>

#include "cflow/ui/remote/endpoint_profile.h"

namespace cflow::ui {

class KeychainSecretStore : public SecretStore {
public:
    // service: the keychain's service name; tests pass their own so they never touch the app's keys.
    explicit KeychainSecretStore(QString service = QStringLiteral("cflow-studio"));
    ~KeychainSecretStore() override;

    void readKey(const QString& profileId, std::function<void(Result<QString>)> done) override;
    void writeKey(const QString& profileId, const QString& key, std::function<void(Status)> done) override;
    void deleteKey(const QString& profileId, std::function<void(Status)> done) override;
    QString describe() const override;

private:
    QString service_;
    std::unique_ptr<QObject> context_;  // jobs' answers arriving after the store is gone are dropped
};

// The app's key store: the system keychain, or nullptr where this build has none (Qt6Keychain was
// not found): then keys are typed for each session and never saved (the Connect dialog says so).
std::unique_ptr<SecretStore> make_system_secret_store();

} // namespace cflow::ui
