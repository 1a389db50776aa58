#include "cflow/ui/tools/mcp_server_config.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace cflow::ui {

QJsonObject McpServerConfig::toJson() const {
    return {{QStringLiteral("name"), name},
            {QStringLiteral("command"), command},
            {QStringLiteral("arguments"), QJsonArray::fromStringList(arguments)},
            {QStringLiteral("environment"), QJsonArray::fromStringList(environment)}};
}

McpServerConfig McpServerConfig::fromJson(const QJsonObject& object) {
    McpServerConfig config;
    config.name = object.value(QStringLiteral("name")).toString();
    config.command = object.value(QStringLiteral("command")).toString();
    for (const QJsonValue& v : object.value(QStringLiteral("arguments")).toArray()) config.arguments << v.toString();
    for (const QJsonValue& v : object.value(QStringLiteral("environment")).toArray()) config.environment << v.toString();
    return config;
}

QString McpServerConfig::problem() const {
    if (name.trimmed().isEmpty()) return QStringLiteral("the name is empty");
    if (command.trimmed().isEmpty()) return QStringLiteral("the command is empty");
    for (const QString& variable : environment) {
        const qsizetype eq = variable.indexOf(QLatin1Char('='));
        if (eq <= 0) return QStringLiteral("the environment entry \"%1\" is not NAME=value").arg(variable);
    }
    return {};
}

QByteArray mcp_servers_to_json(const QList<McpServerConfig>& servers) {
    QJsonArray array;
    for (const McpServerConfig& s : servers) array.append(s.toJson());
    return QJsonDocument(array).toJson(QJsonDocument::Compact);
}

QList<McpServerConfig> mcp_servers_from_json(const QByteArray& json) {
    QList<McpServerConfig> servers;
    const QJsonDocument doc = QJsonDocument::fromJson(json);
    for (const QJsonValue& v : doc.array())
        if (v.isObject()) servers << McpServerConfig::fromJson(v.toObject());
    return servers;
}

} // namespace cflow::ui
