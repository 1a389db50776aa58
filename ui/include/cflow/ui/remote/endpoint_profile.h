#pragma once
// A saved OpenAI-compatible endpoint (Model > Connect to a server…, issue 34): where it is, which
// model it serves, and how to trust it. The API key is never part of a profile and never goes into
// QSettings: it lives in the OS keychain (SecretStore), looked up by the profile's id.
#include <functional>
#include <vector>

#include <QString>

#include "cflow/base/result.h"

namespace cflow::ui {

struct EndpointProfile {
    QString id;        // stable key (a UUID); the keychain entry is named after it
    QString name;      // what the user calls it ("GPU box"); shown in menus and on replies
    QString baseUrl;   // http(s)://host[:port]/v1, as cflow::remote::parse_endpoint_url reads it
    QString model;     // the model id sent with each request ("" = the server's only model)
    QString caFile;    // https: trust this PEM instead of the system's CAs ("" = system)
    int readTimeoutS = 120;  // the longest silence a reply may have (a long prompt's prefill)
    bool hasKey = false;     // whether a key was saved in the keychain for it (the key itself is not here)
};

// What a reply records as the thing that wrote it, beside a local model's file path:
// "endpoint:" + baseUrl + "#" + model (model may be empty). Stable across renames of the profile.
QString endpoint_identity(const EndpointProfile& profile);
// True for a recorded identity of that form (a reply written through an endpoint).
bool is_endpoint_identity(const QString& modelPath);
// The identity shown to people: "model @ host:port" (or "host:port" without a model).
QString endpoint_identity_label(const QString& identity);

// The profiles, in QSettings (group "endpoints"), without keys.
class EndpointProfileStore {
public:
    // settings file: "" = the app's QSettings; tests pass a path of their own (an ini file).
    explicit EndpointProfileStore(QString settingsFile = QString());

    std::vector<EndpointProfile> profiles() const;  // in the order saved
    // Adds or replaces (by id; a new id is made when it is empty) and returns the saved profile.
    // Refuses an unreadable base URL with parse_endpoint_url's message.
    Result<EndpointProfile> save(EndpointProfile profile);
    void remove(const QString& id);

private:
    QString settingsFile_;
};

// Where API keys are kept. Keychains answer asynchronously (a D-Bus Secret Service, Windows
// Credential Manager): every call answers through its callback, later, on the calling thread.
class SecretStore {
public:
    virtual ~SecretStore() = default;
    // Errors say what the keychain said ("no keychain is running: ..."), never the key.
    // A profile with no key saved reads as "" (not an error).
    virtual void readKey(const QString& profileId, std::function<void(Result<QString>)> done) = 0;
    virtual void writeKey(const QString& profileId, const QString& key, std::function<void(Status)> done) = 0;
    // Deleting a key that is not there succeeds.
    virtual void deleteKey(const QString& profileId, std::function<void(Status)> done) = 0;
    // For the dialog: "the system keychain (Secret Service)", "a test keychain in memory".
    virtual QString describe() const = 0;
};

} // namespace cflow::ui
