#pragma once
// One MCP server as a conversation configures it: the program to run (stdio transport), its
// arguments and the environment variables added to the app's own.
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

namespace cflow::ui {

struct McpServerConfig {
    QString name;             // shown in the Tools panel; unique within the conversation
    QString command;          // the program (a path, or a name looked up in PATH)
    QStringList arguments;
    QStringList environment;  // "NAME=value" each
    bool operator==(const McpServerConfig&) const = default;

    QJsonObject toJson() const;
    static McpServerConfig fromJson(const QJsonObject& object);
    // "" when usable; else what is missing or malformed ("the name is empty", "PATH has no '='").
    QString problem() const;
};

QByteArray mcp_servers_to_json(const QList<McpServerConfig>& servers);
// Unreadable text yields an empty list (a damaged row must not stop the conversation opening).
QList<McpServerConfig> mcp_servers_from_json(const QByteArray& json);

} // namespace cflow::ui
