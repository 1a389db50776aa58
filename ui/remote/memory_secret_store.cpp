// MemorySecretStore: keys in a QMap, answered through queued calls (memory_secret_store.h).
#include "cflow/ui/remote/memory_secret_store.h"

#include <QMetaObject>

namespace cflow::ui {

MemorySecretStore::MemorySecretStore() : context_(std::make_unique<QObject>()) {}

MemorySecretStore::~MemorySecretStore() = default;

void MemorySecretStore::later(std::function<void()> answer) {
    QMetaObject::invokeMethod(context_.get(), std::move(answer), Qt::QueuedConnection);
}

void MemorySecretStore::readKey(const QString& profileId, std::function<void(Result<QString>)> done) {
    // The answer is decided now (as a keychain answers from its state when asked), delivered later.
    if (!failure_.isEmpty()) {
        later([done = std::move(done), message = failure_] { done(make_error(ErrorKind::Io, message.toStdString())); });
        return;
    }
    later([done = std::move(done), key = keys_.value(profileId)] { done(key); });
}

void MemorySecretStore::writeKey(const QString& profileId, const QString& key, std::function<void(Status)> done) {
    if (!failure_.isEmpty()) {
        later([done = std::move(done), message = failure_] { done(make_error(ErrorKind::Io, message.toStdString())); });
        return;
    }
    keys_.insert(profileId, key);
    later([done = std::move(done)] { done(Status::success()); });
}

void MemorySecretStore::deleteKey(const QString& profileId, std::function<void(Status)> done) {
    if (!failure_.isEmpty()) {
        later([done = std::move(done), message = failure_] { done(make_error(ErrorKind::Io, message.toStdString())); });
        return;
    }
    keys_.remove(profileId);
    later([done = std::move(done)] { done(Status::success()); });
}

QString MemorySecretStore::describe() const { return QStringLiteral("a test keychain in memory"); }

} // namespace cflow::ui
