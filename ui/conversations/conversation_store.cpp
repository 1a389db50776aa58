#include "cflow/ui/conversation_store.h"

#include <atomic>

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QVariant>

#include "sqlite_file.h"

namespace cflow::ui {
namespace {

qint64 now_ms() { return QDateTime::currentMSecsSinceEpoch(); }

// A null QString binds as SQL NULL; the text columns are NOT NULL, so bind "" instead.
QString text_value(const QString& s) { return s.isNull() ? QStringLiteral("") : s; }

constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS conversations ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " title TEXT NOT NULL,"
    " model_path TEXT NOT NULL DEFAULT '',"
    " settings TEXT NOT NULL DEFAULT '{}',"
    " created_ms INTEGER NOT NULL,"
    " updated_ms INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS messages ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"
    " role TEXT NOT NULL,"
    " content TEXT NOT NULL,"
    " created_ms INTEGER NOT NULL,"
    " complete INTEGER NOT NULL DEFAULT 1)",
    "CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages(conversation_id, id)",
};

// Columns added after the first release: a database made by an older build gets them on open.
struct AddedColumn {
    const char* name;
    const char* definition;
};
constexpr AddedColumn kAddedMessageColumns[] = {
    {"model_path", "TEXT NOT NULL DEFAULT ''"},  // the model that wrote an assistant reply
    {"stopped", "INTEGER NOT NULL DEFAULT 0"},   // the user stopped the reply before it ended
    {"versions", "TEXT NOT NULL DEFAULT '[]'"},  // JSON array of every regenerated text of the reply
    {"version", "INTEGER NOT NULL DEFAULT 0"},   // which of versions content shows
    // ChatMessage::extra_json: an assistant's tool calls, a tool result's call id and tool name
    {"extra", "TEXT NOT NULL DEFAULT ''"},
    {"cut_reason", "TEXT NOT NULL DEFAULT ''"},  // why a server cut the reply (time-out, gone); '' otherwise
};

ConversationInfo read_conversation(const QSqlQuery& q) {
    ConversationInfo info;
    info.id = q.value(0).toLongLong();
    info.title = q.value(1).toString();
    info.modelPath = q.value(2).toString();
    info.settingsJson = q.value(3).toString();
    info.createdMs = q.value(4).toLongLong();
    info.updatedMs = q.value(5).toLongLong();
    return info;
}

} // namespace

QString default_database_path() {
    const QString overridden = qEnvironmentVariable("CFLOW_STUDIO_DB");
    if (!overridden.isEmpty()) return overridden;
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    QDir().mkpath(dir);
    return QDir(dir).filePath(QStringLiteral("cflow-studio.sqlite"));
}

ConversationStore::ConversationStore(QString path, QString connection)
    : path_(std::move(path)), connection_(std::move(connection)) {}

ConversationStore::~ConversationStore() { close_sqlite(connection_); }

Result<std::unique_ptr<ConversationStore>> ConversationStore::open(const QString& path, Access access) {
    static std::atomic<int> counter{0};
    const QString connection = QStringLiteral("cflow-store-%1").arg(counter.fetch_add(1));
    std::unique_ptr<ConversationStore> store(new ConversationStore(path, connection));
    if (access == Access::ReadOnly) {
        store->readOnly_ = true;
        auto db = open_sqlite_read_only(path, connection);
        if (!db) return db.take_error();
        QSqlQuery q(*db);
        if (!q.exec(QStringLiteral("SELECT count(*) FROM conversations")) || !q.next())
            return sql_error(path, QStringLiteral("cannot read the conversations"), q.lastError());
        return store;
    }
    auto db = open_sqlite(path, connection, {"PRAGMA foreign_keys=ON"});
    if (!db) return db.take_error();
    QSqlQuery q(*db);
    for (const char* statement : kSchema)
        if (!q.exec(QString::fromLatin1(statement)))
            return sql_error(path, QStringLiteral("cannot create the schema"), q.lastError());
    QStringList present;
    if (!q.exec(QStringLiteral("PRAGMA table_info(messages)")))
        return sql_error(path, QStringLiteral("cannot read the schema"), q.lastError());
    while (q.next()) present << q.value(1).toString();
    for (const AddedColumn& column : kAddedMessageColumns) {
        if (present.contains(QLatin1String(column.name))) continue;
        if (!q.exec(QStringLiteral("ALTER TABLE messages ADD COLUMN %1 %2")
                        .arg(QLatin1String(column.name), QLatin1String(column.definition))))
            return sql_error(path, QStringLiteral("cannot upgrade the schema"), q.lastError());
    }
    return store;
}

Result<qint64> ConversationStore::createConversation(const QString& title, const QString& modelPath,
                                                     const QString& settingsJson) {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("INSERT INTO conversations (title, model_path, settings, created_ms, updated_ms) "
                             "VALUES (?, ?, ?, ?, ?)"));
    const qint64 now = now_ms();
    q.addBindValue(text_value(title));
    q.addBindValue(text_value(modelPath));
    q.addBindValue(settingsJson.isEmpty() ? QStringLiteral("{}") : settingsJson);
    q.addBindValue(now);
    q.addBindValue(now);
    if (!q.exec()) return sql_error(path_, QStringLiteral("cannot create a conversation"), q.lastError());
    return q.lastInsertId().toLongLong();
}

namespace {
Status exec_update(const QString& connection, const QString& path, const QString& sql, const QVariantList& values,
                   const QString& what, qint64 id) {
    QSqlQuery q(QSqlDatabase::database(connection));
    q.prepare(sql);
    for (const QVariant& v : values) q.addBindValue(v);
    if (!q.exec()) return sql_error(path, what, q.lastError());
    if (q.numRowsAffected() == 0)
        return make_error(QStringLiteral("%1: %2: no row with id %3").arg(QDir::toNativeSeparators(path), what).arg(id).toStdString());
    return {};
}
} // namespace

Status ConversationStore::touch(qint64 conversationId) {
    return exec_update(connection_, path_, QStringLiteral("UPDATE conversations SET updated_ms = ? WHERE id = ?"),
                       {now_ms(), conversationId}, QStringLiteral("cannot update the conversation"), conversationId);
}

Status ConversationStore::renameConversation(qint64 id, const QString& title) {
    return exec_update(connection_, path_, QStringLiteral("UPDATE conversations SET title = ?, updated_ms = ? WHERE id = ?"),
                       {text_value(title), now_ms(), id}, QStringLiteral("cannot rename the conversation"), id);
}

Status ConversationStore::setModel(qint64 id, const QString& modelPath) {
    return exec_update(connection_, path_, QStringLiteral("UPDATE conversations SET model_path = ? WHERE id = ?"),
                       {text_value(modelPath), id}, QStringLiteral("cannot set the conversation's model"), id);
}

Status ConversationStore::setSettings(qint64 id, const QString& settingsJson) {
    return exec_update(connection_, path_, QStringLiteral("UPDATE conversations SET settings = ? WHERE id = ?"),
                       {text_value(settingsJson), id}, QStringLiteral("cannot set the conversation's settings"), id);
}

Status ConversationStore::deleteConversation(qint64 id) {
    // Foreign keys cascade to the messages.
    return exec_update(connection_, path_, QStringLiteral("DELETE FROM conversations WHERE id = ?"), {id},
                       QStringLiteral("cannot delete the conversation"), id);
}

Result<ConversationInfo> ConversationStore::conversation(qint64 id) const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("SELECT id, title, model_path, settings, created_ms, updated_ms FROM conversations "
                             "WHERE id = ?"));
    q.addBindValue(id);
    if (!q.exec()) return sql_error(path_, QStringLiteral("cannot read conversation %1").arg(id), q.lastError());
    if (!q.next())
        return make_error(QStringLiteral("%1: no conversation with id %2").arg(QDir::toNativeSeparators(path_)).arg(id).toStdString());
    return read_conversation(q);
}

Result<std::vector<ConversationInfo>> ConversationStore::conversations(const QString& filter) const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    const QString columns = QStringLiteral("SELECT id, title, model_path, settings, created_ms, updated_ms FROM conversations c ");
    if (filter.isEmpty()) {
        q.prepare(columns + QStringLiteral("ORDER BY updated_ms DESC, id DESC"));
    } else {
        q.prepare(columns + QStringLiteral("WHERE instr(lower(title), lower(?)) > 0 OR EXISTS (SELECT 1 FROM messages m "
                                           "WHERE m.conversation_id = c.id AND instr(lower(m.content), lower(?)) > 0) "
                                           "ORDER BY updated_ms DESC, id DESC"));
        q.addBindValue(filter);
        q.addBindValue(filter);
    }
    if (!q.exec()) return sql_error(path_, QStringLiteral("cannot list conversations"), q.lastError());
    std::vector<ConversationInfo> out;
    while (q.next()) out.push_back(read_conversation(q));
    return out;
}

Result<qint64> ConversationStore::addMessage(qint64 conversationId, const QString& role, const QString& content,
                                             bool complete, const QString& extraJson) {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("INSERT INTO messages (conversation_id, role, content, created_ms, complete, extra) "
                             "VALUES (?, ?, ?, ?, ?, ?)"));
    q.addBindValue(conversationId);
    q.addBindValue(text_value(role));
    q.addBindValue(text_value(content));
    q.addBindValue(now_ms());
    q.addBindValue(complete ? 1 : 0);
    q.addBindValue(text_value(extraJson));
    if (!q.exec()) return sql_error(path_, QStringLiteral("cannot add a message to conversation %1").arg(conversationId), q.lastError());
    const qint64 id = q.lastInsertId().toLongLong();
    if (Status s = touch(conversationId); !s) return s.take_error();
    return id;
}

Status ConversationStore::updateMessage(qint64 messageId, const QString& content, bool complete) {
    return exec_update(connection_, path_, QStringLiteral("UPDATE messages SET content = ?, complete = ? WHERE id = ?"),
                       {text_value(content), complete ? 1 : 0, messageId}, QStringLiteral("cannot update the message"), messageId);
}

Status ConversationStore::setReplyDetails(qint64 messageId, const QString& modelPath, bool stopped, const QString& cutReason) {
    return exec_update(connection_, path_,
                       QStringLiteral("UPDATE messages SET model_path = ?, stopped = ?, cut_reason = ? WHERE id = ?"),
                       {text_value(modelPath), stopped ? 1 : 0, text_value(cutReason), messageId}, QStringLiteral("cannot update the reply"),
                       messageId);
}

Status ConversationStore::setExtra(qint64 messageId, const QString& extraJson) {
    return exec_update(connection_, path_, QStringLiteral("UPDATE messages SET extra = ? WHERE id = ?"),
                       {text_value(extraJson), messageId}, QStringLiteral("cannot store the message's tool calls"),
                       messageId);
}

Status ConversationStore::setVersions(qint64 messageId, const QStringList& versions, int shown) {
    if (shown < 0 || shown >= versions.size())
        return make_error(QStringLiteral("version %1 of %2 does not exist").arg(shown).arg(versions.size()).toStdString());
    const QString json = QString::fromUtf8(QJsonDocument(QJsonArray::fromStringList(versions)).toJson(QJsonDocument::Compact));
    return exec_update(connection_, path_,
                       QStringLiteral("UPDATE messages SET versions = ?, version = ?, content = ? WHERE id = ?"),
                       {json, shown, text_value(versions[shown]), messageId},
                       QStringLiteral("cannot store the reply's versions"), messageId);
}

Status ConversationStore::deleteMessagesFrom(qint64 conversationId, qint64 messageId) {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("DELETE FROM messages WHERE conversation_id = ? AND id >= ?"));
    q.addBindValue(conversationId);
    q.addBindValue(messageId);
    if (!q.exec()) return sql_error(path_, QStringLiteral("cannot delete messages"), q.lastError());
    return touch(conversationId);
}

Result<std::vector<StoredMessage>> ConversationStore::messages(qint64 conversationId) const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("SELECT id, conversation_id, role, content, created_ms, complete, model_path, stopped, "
                             "versions, version, extra, cut_reason FROM messages "
                             "WHERE conversation_id = ? ORDER BY id"));
    q.addBindValue(conversationId);
    if (!q.exec()) return sql_error(path_, QStringLiteral("cannot read messages"), q.lastError());
    std::vector<StoredMessage> out;
    while (q.next()) {
        StoredMessage m;
        m.id = q.value(0).toLongLong();
        m.conversationId = q.value(1).toLongLong();
        m.role = q.value(2).toString();
        m.content = q.value(3).toString();
        m.createdMs = q.value(4).toLongLong();
        m.complete = q.value(5).toInt() != 0;
        m.modelPath = q.value(6).toString();
        m.stopped = q.value(7).toInt() != 0;
        for (const QJsonValue& v : QJsonDocument::fromJson(q.value(8).toString().toUtf8()).array())
            m.versions << v.toString();
        m.version = q.value(9).toInt();
        m.extraJson = q.value(10).toString();
        m.cutReason = q.value(11).toString();
        // A row whose versions do not include its content (older rows, a crash mid-regenerate)
        // shows its content as the only version.
        if (m.version < 0 || m.version >= m.versions.size() || m.versions[m.version] != m.content) {
            m.versions = QStringList{m.content};
            m.version = 0;
        }
        out.push_back(std::move(m));
    }
    return out;
}

Result<QString> ConversationStore::quickCheck() const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    if (!q.exec(QStringLiteral("PRAGMA quick_check(20)")))
        return sql_error(path_, QStringLiteral("quick_check"), q.lastError());
    QStringList problems;
    while (q.next()) problems << q.value(0).toString();
    if (problems.isEmpty()) return sql_error(path_, QStringLiteral("quick_check gave no answer"), q.lastError());
    return problems.join(u'\n');
}

Result<QString> ConversationStore::integrityCheck() const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    if (!q.exec(QStringLiteral("PRAGMA integrity_check")) || !q.next())
        return sql_error(path_, QStringLiteral("integrity_check"), q.lastError());
    return q.value(0).toString();
}

} // namespace cflow::ui
