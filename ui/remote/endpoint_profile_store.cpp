// EndpointProfileStore: the profiles in QSettings, group "endpoints", one sub-group per profile
// named after its position so that the order saved is the order read back. Keys never go here.
#include <QSettings>
#include <QUuid>

#include <memory>

#include "cflow/remote/endpoint_url.h"
#include "cflow/ui/remote/endpoint_profile.h"

namespace cflow::ui {

namespace {

constexpr auto kEndpointsGroup = "endpoints";

std::unique_ptr<QSettings> open_endpoint_settings(const QString& settingsFile) {
    if (settingsFile.isEmpty()) return std::make_unique<QSettings>();
    return std::make_unique<QSettings>(settingsFile, QSettings::IniFormat);
}

void write_endpoint_profiles(QSettings& settings, const std::vector<EndpointProfile>& profiles) {
    settings.remove(QString::fromLatin1(kEndpointsGroup));
    settings.beginWriteArray(QString::fromLatin1(kEndpointsGroup), static_cast<int>(profiles.size()));
    for (int i = 0; i < static_cast<int>(profiles.size()); ++i) {
        const EndpointProfile& profile = profiles[static_cast<size_t>(i)];
        settings.setArrayIndex(i);
        settings.setValue(QStringLiteral("id"), profile.id);
        settings.setValue(QStringLiteral("name"), profile.name);
        settings.setValue(QStringLiteral("baseUrl"), profile.baseUrl);
        settings.setValue(QStringLiteral("model"), profile.model);
        settings.setValue(QStringLiteral("caFile"), profile.caFile);
        settings.setValue(QStringLiteral("readTimeoutS"), profile.readTimeoutS);
        settings.setValue(QStringLiteral("hasKey"), profile.hasKey);
    }
    settings.endArray();
    settings.sync();
}

} // namespace

EndpointProfileStore::EndpointProfileStore(QString settingsFile) : settingsFile_(std::move(settingsFile)) {}

std::vector<EndpointProfile> EndpointProfileStore::profiles() const {
    const std::unique_ptr<QSettings> settings = open_endpoint_settings(settingsFile_);
    std::vector<EndpointProfile> out;
    const int count = settings->beginReadArray(QString::fromLatin1(kEndpointsGroup));
    for (int i = 0; i < count; ++i) {
        settings->setArrayIndex(i);
        EndpointProfile profile;
        profile.id = settings->value(QStringLiteral("id")).toString();
        if (profile.id.isEmpty()) continue;  // a hand-edited entry without an id cannot hold a key
        profile.name = settings->value(QStringLiteral("name")).toString();
        profile.baseUrl = settings->value(QStringLiteral("baseUrl")).toString();
        profile.model = settings->value(QStringLiteral("model")).toString();
        profile.caFile = settings->value(QStringLiteral("caFile")).toString();
        profile.readTimeoutS = settings->value(QStringLiteral("readTimeoutS"), 120).toInt();
        if (profile.readTimeoutS <= 0) profile.readTimeoutS = 120;
        profile.hasKey = settings->value(QStringLiteral("hasKey"), false).toBool();
        out.push_back(std::move(profile));
    }
    settings->endArray();
    return out;
}

Result<EndpointProfile> EndpointProfileStore::save(EndpointProfile profile) {
    profile.baseUrl = profile.baseUrl.trimmed();
    profile.name = profile.name.trimmed();
    const auto url = cflow::remote::parse_endpoint_url(profile.baseUrl.toStdString());
    if (!url) return make_error(url.error());
    if (profile.readTimeoutS <= 0)
        return make_error("endpoint '" + profile.name.toStdString() + "': the read time-out must be at least 1 s");
    if (profile.name.isEmpty()) profile.name = profile.baseUrl;
    if (profile.id.isEmpty()) profile.id = QUuid::createUuid().toString(QUuid::WithoutBraces);

    std::vector<EndpointProfile> all = profiles();
    bool replaced = false;
    for (EndpointProfile& existing : all) {
        if (existing.id != profile.id) continue;
        existing = profile;
        replaced = true;
    }
    if (!replaced) all.push_back(profile);
    const std::unique_ptr<QSettings> settings = open_endpoint_settings(settingsFile_);
    write_endpoint_profiles(*settings, all);
    if (settings->status() != QSettings::NoError)
        return make_error(ErrorKind::Io, "endpoint profiles: cannot write " + settings->fileName().toStdString());
    return profile;
}

void EndpointProfileStore::remove(const QString& id) {
    std::vector<EndpointProfile> all = profiles();
    std::erase_if(all, [&](const EndpointProfile& profile) { return profile.id == id; });
    const std::unique_ptr<QSettings> settings = open_endpoint_settings(settingsFile_);
    write_endpoint_profiles(*settings, all);
}

} // namespace cflow::ui
