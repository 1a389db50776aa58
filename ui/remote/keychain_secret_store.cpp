// KeychainSecretStore on QtKeychain's jobs (keychain_secret_store.h).
#include "cflow/ui/remote/keychain_secret_store.h"


#include <qt6keychain/keychain.h>

namespace cflow::ui {

namespace {

// "reading the key of endpoint profile ID from the system keychain: <what QtKeychain said>".
Error keychain_error(const char* doing, const QString& profileId, const QKeychain::Job& job) {
    QString why = job.errorString();
    if (job.error() == QKeychain::NoBackendAvailable)
        why = QStringLiteral("no keychain is running (a Secret Service such as GNOME Keyring or KWallet): ") + why;
    else if (job.error() == QKeychain::AccessDeniedByUser || job.error() == QKeychain::AccessDenied)
        why = QStringLiteral("the keychain refused access (is it locked?): ") + why;
    return make_error(ErrorKind::Io, std::string(doing) + " the key of endpoint profile " + profileId.toStdString() +
                                         " in the system keychain: " + why.toStdString());
}

template <class JobT>
JobT* make_job(const QString& service, const QString& profileId) {
    auto* job = new JobT(service);
    job->setAutoDelete(true);
    job->setInsecureFallback(false);  // never a plain-text copy of a key
    job->setKey(profileId);
    return job;
}

} // namespace

KeychainSecretStore::KeychainSecretStore(QString service)
    : service_(std::move(service)), context_(std::make_unique<QObject>()) {}

KeychainSecretStore::~KeychainSecretStore() = default;

void KeychainSecretStore::readKey(const QString& profileId, std::function<void(Result<QString>)> done) {
    auto* job = make_job<QKeychain::ReadPasswordJob>(service_, profileId);
    QObject::connect(job, &QKeychain::Job::finished, context_.get(),
                     [job, profileId, done = std::move(done)](QKeychain::Job*) {
                         if (job->error() == QKeychain::NoError) done(job->textData());
                         else if (job->error() == QKeychain::EntryNotFound) done(QString());  // no key saved
                         else done(keychain_error("reading", profileId, *job));
                     });
    job->start();
}

void KeychainSecretStore::writeKey(const QString& profileId, const QString& key, std::function<void(Status)> done) {
    auto* job = make_job<QKeychain::WritePasswordJob>(service_, profileId);
    job->setTextData(key);
    QObject::connect(job, &QKeychain::Job::finished, context_.get(),
                     [job, profileId, done = std::move(done)](QKeychain::Job*) {
                         if (job->error() == QKeychain::NoError) done(Status::success());
                         else done(keychain_error("saving", profileId, *job));
                     });
    job->start();
}

void KeychainSecretStore::deleteKey(const QString& profileId, std::function<void(Status)> done) {
    auto* job = make_job<QKeychain::DeletePasswordJob>(service_, profileId);
    QObject::connect(job, &QKeychain::Job::finished, context_.get(),
                     [job, profileId, done = std::move(done)](QKeychain::Job*) {
                         // Nothing to delete is what deleting asked for.
                         if (job->error() == QKeychain::NoError || job->error() == QKeychain::EntryNotFound)
                             done(Status::success());
                         else done(keychain_error("deleting", profileId, *job));
                     });
    job->start();
}

QString KeychainSecretStore::describe() const {
#if defined(Q_OS_WIN)
    return QStringLiteral("the Windows Credential Manager");
#elif defined(Q_OS_MACOS)
    return QStringLiteral("the macOS Keychain");
#else
    return QStringLiteral("the system keychain (Secret Service)");
#endif
}

std::unique_ptr<SecretStore> make_system_secret_store() { return std::make_unique<KeychainSecretStore>(); }

} // namespace cflow::ui
