#include "cflow/ui/tools/conversation_tools_store.h"

#include <atomic>

#include <QJsonArray>
#include <QJsonDocument>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QVariant>

#include "sqlite_file.h"

namespace cflow::ui {
namespace {

QString tools_store_list_json(const QStringList& list) {
    return QString::fromUtf8(QJsonDocument(QJsonArray::fromStringList(list)).toJson(QJsonDocument::Compact));
}

QStringList tools_store_list(const QString& json) {
    QStringList list;
    for (const QJsonValue& v : QJsonDocument::fromJson(json.toUtf8()).array()) list << v.toString();
    return list;
}

} // namespace

ConversationToolsStore::ConversationToolsStore(QString path, QString connection)
    : path_(std::move(path)), connection_(std::move(connection)) {}

ConversationToolsStore::~ConversationToolsStore() { close_sqlite(connection_); }

Result<std::unique_ptr<ConversationToolsStore>> ConversationToolsStore::open(const QString& databasePath) {
    static std::atomic<int> counter{0};
    const QString connection = QStringLiteral("cflow-tools-%1").arg(counter.fetch_add(1));
    std::unique_ptr<ConversationToolsStore> store(new ConversationToolsStore(databasePath, connection));
    auto db = open_sqlite(databasePath, connection, {"PRAGMA foreign_keys=ON"});
    if (!db) return db.take_error();
    QSqlQuery q(*db);
    // conversations is the conversation store's table (that store opens the file first); deleting
    // a conversation there deletes its row here.
    if (!q.exec(QStringLiteral("CREATE TABLE IF NOT EXISTS conversation_tools ("
                               " conversation_id INTEGER PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,"
                               " mcp_servers TEXT NOT NULL DEFAULT '[]',"
                               " disabled_providers TEXT NOT NULL DEFAULT '[]',"
                               " picked_files TEXT NOT NULL DEFAULT '[]')")))
        return sql_error(databasePath, QStringLiteral("cannot create the conversation tools table"), q.lastError());
    return store;
}

Result<ConversationToolsStore::Loaded> ConversationToolsStore::load(qint64 conversationId) const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("SELECT mcp_servers, disabled_providers, picked_files FROM conversation_tools "
                             "WHERE conversation_id = ?"));
    q.addBindValue(conversationId);
    if (!q.exec()) return sql_error(path_, QStringLiteral("cannot read the conversation's tools"), q.lastError());
    Loaded loaded;
    if (!q.next()) return loaded;
    loaded.found = true;
    loaded.setup.mcpServers = mcp_servers_from_json(q.value(0).toString().toUtf8());
    loaded.setup.disabledProviders = tools_store_list(q.value(1).toString());
    loaded.setup.pickedFiles = tools_store_list(q.value(2).toString());
    return loaded;
}

Status ConversationToolsStore::save(qint64 conversationId, const ConversationToolSetup& setup) {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("INSERT INTO conversation_tools (conversation_id, mcp_servers, disabled_providers, picked_files) "
                             "VALUES (?, ?, ?, ?) ON CONFLICT(conversation_id) DO UPDATE SET "
                             "mcp_servers = excluded.mcp_servers, disabled_providers = excluded.disabled_providers, "
                             "picked_files = excluded.picked_files"));
    q.addBindValue(conversationId);
    q.addBindValue(QString::fromUtf8(mcp_servers_to_json(setup.mcpServers)));
    q.addBindValue(tools_store_list_json(setup.disabledProviders));
    q.addBindValue(tools_store_list_json(setup.pickedFiles));
    if (!q.exec()) return sql_error(path_, QStringLiteral("cannot save the conversation's tools"), q.lastError());
    return {};
}

Result<bool> ConversationToolsStore::hasNoMessages(qint64 conversationId) const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("SELECT EXISTS(SELECT 1 FROM messages WHERE conversation_id = ?)"));
    q.addBindValue(conversationId);
    if (!q.exec() || !q.next()) return sql_error(path_, QStringLiteral("cannot read the conversation's messages"), q.lastError());
    return !q.value(0).toBool();
}

} // namespace cflow::ui
