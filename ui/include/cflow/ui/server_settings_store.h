#pragma once
// The local server's settings as the app keeps them between runs: QSettings keys server/host,
// server/port and server/parallel (the threads per slot are not kept: they follow the machine).
// Absent keys read as ServerSettings' defaults. The API key is not among them: it lives in the OS
// keychain (ServerKeyKeeper, the SecretStore entry kServerKeyId); only whether one was saved is in
// QSettings (server/hasApiKey), so that a keychain that cannot be read does not pass for "no key".
#include <functional>
#include <memory>

#include <QObject>
#include <QString>

#include "cflow/base/result.h"
#include "cflow/ui/server_controller.h"

class QSettings;

namespace cflow::ui {

class SecretStore;

// The keychain entry of the local server's key (beside the endpoint profiles' UUIDs).
inline constexpr const char* kServerKeyId = "local-server";

// Reads host, port and parallel; apiKey is left empty (the keeper supplies it).
ServerSettings read_server_settings(const QSettings& stored);
// Writes host, port and parallel; never the key (an older build's server/apiKey is left for the
// keeper to move into the keychain).
void write_server_settings(QSettings& stored, const ServerSettings& settings);

// The server's key between runs: read from the SecretStore, moving an older build's plain
// server/apiKey into it (removed from the ini only once the keychain took it). Every answer
// comes later through the callback, on the GUI thread, and not at all once the keeper is gone.
class ServerKeyKeeper : public QObject {
public:
    // secrets null: a build without a keychain; keys then last for the session only (an older
    // build's key is used and left where it is). settingsFile "" = the app's QSettings.
    ServerKeyKeeper(std::shared_ptr<SecretStore> secrets, QString settingsFile, QObject* parent = nullptr);

    // Reads the key (migrating an older build's); the keychain is asked only when a key was saved.
    // done(Status): failed when a saved key could not be read; key() is then empty and the server
    // must not start as if it had none.
    void load(std::function<void(Status)> done);
    // Saves a key the user chose ("" deletes it). done(Status): failed when the keychain refused;
    // the key then lasts for this session only (note() says so).
    void save(const QString& key, std::function<void(Status)> done);

    bool pending() const { return pending_ > 0; }  // load() has not answered yet
    const QString& key() const { return key_; }
    bool readFailed() const { return readFailed_; }
    // What the Server settings dialog says about where the key is; "" when it is in the keychain
    // (or there is none).
    const QString& note() const { return note_; }

private:
    std::unique_ptr<QSettings> settings() const;
    void finishLoad(Status status, std::function<void(Status)> done);

    std::shared_ptr<SecretStore> secrets_;
    QString settingsFile_;
    QString key_;
    QString note_;
    int pending_ = 0;
    bool readFailed_ = false;
};

} // namespace cflow::ui
