#pragma once
// A SecretStore in memory, for tests: it answers as a keychain does, later (a queued call on the
// thread that made it), never inside the call, so callers that assume a synchronous answer fail
// their tests as they would fail against the Secret Service.
#include <QMap>
#include <QObject>
#include <QString>

#include <memory>

#include "cflow/ui/remote/endpoint_profile.h"

namespace cflow::ui {

class MemorySecretStore : public SecretStore {
public:
    MemorySecretStore();
    ~MemorySecretStore() override;

    void readKey(const QString& profileId, std::function<void(Result<QString>)> done) override;
    void writeKey(const QString& profileId, const QString& key, std::function<void(Status)> done) override;
    void deleteKey(const QString& profileId, std::function<void(Status)> done) override;
    QString describe() const override;

    // What a test looks at directly (synchronously): the stored keys by profile id.
    const QMap<QString, QString>& keys() const { return keys_; }
    // The next calls fail with this message (a locked or absent keychain) until it is cleared with "".
    void setFailure(const QString& message) { failure_ = message; }

private:
    // Runs `answer` on the next turn of this thread's event loop, unless the store is gone by then.
    void later(std::function<void()> answer);

    QMap<QString, QString> keys_;
    QString failure_;
    std::unique_ptr<QObject> context_;  // the queued answers die with the store
};

} // namespace cflow::ui
