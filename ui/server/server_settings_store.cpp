#include "cflow/ui/server_settings_store.h"

#include <QPointer>
#include <QSettings>
#include <QTimer>

#include "cflow/ui/remote/endpoint_profile.h"

namespace cflow::ui {
namespace {

const QString kLegacyApiKeySetting = QStringLiteral("server/apiKey");  // older builds kept the key here, in plain text
const QString kHasApiKeySetting = QStringLiteral("server/hasApiKey");

QString server_key_text(const char* text) { return QObject::tr(text); }

} // namespace

ServerSettings read_server_settings(const QSettings& stored) {
    ServerSettings s;
    s.host = stored.value(QStringLiteral("server/host"), s.host).toString();
    s.port = stored.value(QStringLiteral("server/port"), s.port).toInt();
    s.parallel = stored.value(QStringLiteral("server/parallel"), s.parallel).toInt();
    return s;
}

void write_server_settings(QSettings& stored, const ServerSettings& settings) {
    stored.setValue(QStringLiteral("server/host"), settings.host);
    stored.setValue(QStringLiteral("server/port"), settings.port);
    stored.setValue(QStringLiteral("server/parallel"), settings.parallel);
}

ServerKeyKeeper::ServerKeyKeeper(std::shared_ptr<SecretStore> secrets, QString settingsFile, QObject* parent)
    : QObject(parent), secrets_(std::move(secrets)), settingsFile_(std::move(settingsFile)) {}

std::unique_ptr<QSettings> ServerKeyKeeper::settings() const {
    return settingsFile_.isEmpty() ? std::make_unique<QSettings>()
                                   : std::make_unique<QSettings>(settingsFile_, QSettings::IniFormat);
}

void ServerKeyKeeper::finishLoad(Status status, std::function<void(Status)> done) {
    --pending_;
    if (done) done(std::move(status));
}

void ServerKeyKeeper::load(std::function<void(Status)> done) {
    ++pending_;
    const QString legacy = settings()->value(kLegacyApiKeySetting).toString();
    QPointer<ServerKeyKeeper> self(this);
    if (!secrets_) {
        // Nowhere safer to put it: an older build's key keeps working from where it is.
        key_ = legacy;
        note_ = legacy.isEmpty() ? QString()
                                 : server_key_text("This build has no keychain: the key stays in the settings file, "
                                                   "as older versions kept it");
        QTimer::singleShot(0, this, [this, done = std::move(done)] { finishLoad(Status::success(), done); });
        return;
    }
    if (!legacy.isEmpty()) {
        secrets_->writeKey(QString::fromLatin1(kServerKeyId), legacy, [self, legacy, done = std::move(done)](Status written) {
            if (!self) return;
            self->key_ = legacy;  // works either way; only where it is kept differs
            if (written) {
                auto stored = self->settings();
                stored->remove(kLegacyApiKeySetting);  // only now that the keychain holds it
                stored->setValue(kHasApiKeySetting, true);
                self->note_.clear();
            } else {
                self->note_ = server_key_text("The keychain (%1) did not take the key from the settings file: %2. "
                                              "It works for this session and stays in the settings file until the "
                                              "keychain takes it.")
                                  .arg(self->secrets_->describe(), QString::fromStdString(written.error()));
            }
            self->finishLoad(Status::success(), done);
        });
        return;
    }
    if (!settings()->value(kHasApiKeySetting, false).toBool()) {
        // None was saved: the keychain is not asked (a locked one would ask the user to unlock it
        // at every start, for nothing).
        key_.clear();
        note_.clear();
        QTimer::singleShot(0, this, [this, done = std::move(done)] { finishLoad(Status::success(), done); });
        return;
    }
    secrets_->readKey(QString::fromLatin1(kServerKeyId), [self, done = std::move(done)](Result<QString> read) {
        if (!self) return;
        if (read.ok()) {
            self->key_ = read.value();
            self->readFailed_ = false;
            self->note_.clear();
            self->finishLoad(Status::success(), done);
            return;
        }
        self->key_.clear();
        // A key was saved but cannot be read: starting without it would open the server to anyone.
        self->readFailed_ = true;
        self->note_ = server_key_text("The saved key could not be read from the keychain (%1): %2. The server does not "
                                      "start until it can be read, or a key (or none) is set here.")
                          .arg(self->secrets_->describe(), QString::fromStdString(read.error()));
        self->finishLoad(make_error(ErrorKind::Io, self->note_.toStdString()), done);
    });
}

void ServerKeyKeeper::save(const QString& key, std::function<void(Status)> done) {
    key_ = key;  // the running session uses it at once, whatever the keychain answers
    readFailed_ = false;
    QPointer<ServerKeyKeeper> self(this);
    if (!secrets_) {
        if (key.isEmpty()) settings()->remove(kLegacyApiKeySetting);  // the user chose no key
        note_ = key.isEmpty() ? QString()
                              : server_key_text("This build has no keychain: the key lasts until the app closes "
                                                "(it is not saved)");
        QTimer::singleShot(0, this, [done = std::move(done)] {
            if (done) done(Status::success());
        });
        return;
    }
    auto saved = [self, key, done = std::move(done)](Status status) {
        if (!self) return;
        if (status) {
            auto stored = self->settings();
            stored->remove(kLegacyApiKeySetting);
            stored->setValue(kHasApiKeySetting, !key.isEmpty());
            self->note_.clear();
        } else if (key.isEmpty()) {
            self->note_ = server_key_text("The keychain (%1) did not delete the saved key: %2. The server runs without "
                                          "a key this session; the old key may be back next time.")
                              .arg(self->secrets_->describe(), QString::fromStdString(status.error()));
        } else {
            self->note_ = server_key_text("The keychain (%1) refused the key: %2. It works until the app closes; set "
                                          "it again to save it.")
                              .arg(self->secrets_->describe(), QString::fromStdString(status.error()));
        }
        if (done) done(std::move(status));
    };
    if (key.isEmpty())
        secrets_->deleteKey(QString::fromLatin1(kServerKeyId), std::move(saved));
    else
        secrets_->writeKey(QString::fromLatin1(kServerKeyId), key, std::move(saved));
}

} // namespace cflow::ui
