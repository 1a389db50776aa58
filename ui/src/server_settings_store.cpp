#include "cflow/ui/server_settings_store.h"

#include <QSettings>

namespace cflow::ui {

ServerSettings read_server_settings(const QSettings& stored) {
    ServerSettings s;
    s.host = stored.value(QStringLiteral("server/host"), s.host).toString();
    s.port = stored.value(QStringLiteral("server/port"), s.port).toInt();
    s.apiKey = stored.value(QStringLiteral("server/apiKey"), s.apiKey).toString();
    s.parallel = stored.value(QStringLiteral("server/parallel"), s.parallel).toInt();
    return s;
}

void write_server_settings(QSettings& stored, const ServerSettings& settings) {
    stored.setValue(QStringLiteral("server/host"), settings.host);
    stored.setValue(QStringLiteral("server/port"), settings.port);
    stored.setValue(QStringLiteral("server/apiKey"), settings.apiKey);
    stored.setValue(QStringLiteral("server/parallel"), settings.parallel);
}

} // namespace cflow::ui
