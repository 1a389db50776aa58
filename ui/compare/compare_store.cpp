#include "cflow/ui/compare_store.h"

#include <atomic>

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QVariant>

#include "cflow/ui/compare_codec.h"
#include "sqlite_file.h"

namespace cflow::ui {
namespace {

QString json_text(const QJsonObject& o) { return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact)); }

Result<QJsonObject> parse_object(const QString& text, const char* what) {
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(text.toUtf8(), &error);
    if (error.error != QJsonParseError::NoError || !doc.isObject())
        return make_error(std::string("a saved comparison's ") + what + " is not a JSON object: " + error.errorString().toStdString());
    return doc.object();
}

} // namespace

QString comparison_title(const CompareReport& report) {
    QStringList names;
    for (const CompareRow& row : report.rows) names << QString::fromStdString(row.displayName);
    return names.join(QStringLiteral(" vs "));
}

CompareStore::CompareStore(QString path, QString connection) : path_(std::move(path)), connection_(std::move(connection)) {}

CompareStore::~CompareStore() { close_sqlite(connection_); }

Result<std::unique_ptr<CompareStore>> CompareStore::open(const QString& path) {
    static std::atomic<int> counter{0};
    const QString connection = QStringLiteral("cflow-compare-%1").arg(counter.fetch_add(1));
    std::unique_ptr<CompareStore> store(new CompareStore(path, connection));
    auto db = open_sqlite(path, connection);  // the conversation store's file and journal
    if (!db) return db.take_error();
    QSqlQuery q(*db);
    if (!q.exec(QStringLiteral("CREATE TABLE IF NOT EXISTS comparisons ("
                               " id INTEGER PRIMARY KEY AUTOINCREMENT,"
                               " title TEXT NOT NULL,"
                               " created_ms INTEGER NOT NULL,"
                               " request TEXT NOT NULL,"
                               " report TEXT NOT NULL)")))
        return sql_error(path, QStringLiteral("cannot create the comparisons table"), q.lastError());
    return store;
}

Result<qint64> CompareStore::save(const QString& title, const CompareRequest& request, const CompareReport& report) {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("INSERT INTO comparisons (title, created_ms, request, report) VALUES (?, ?, ?, ?)"));
    q.addBindValue(title.isNull() ? QStringLiteral("") : title);
    q.addBindValue(QDateTime::currentMSecsSinceEpoch());
    q.addBindValue(json_text(request_to_json(request)));
    q.addBindValue(json_text(report_to_json(report)));
    if (!q.exec()) return sql_error(path_, QStringLiteral("cannot save the comparison"), q.lastError());
    return q.lastInsertId().toLongLong();
}

Result<std::vector<StoredComparisonInfo>> CompareStore::list() const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    if (!q.exec(QStringLiteral("SELECT id, title, created_ms FROM comparisons ORDER BY created_ms DESC, id DESC")))
        return sql_error(path_, QStringLiteral("cannot list the comparisons"), q.lastError());
    std::vector<StoredComparisonInfo> out;
    while (q.next()) out.push_back({q.value(0).toLongLong(), q.value(1).toString(), q.value(2).toLongLong()});
    return out;
}

Result<StoredComparison> CompareStore::load(qint64 id) const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("SELECT id, title, created_ms, request, report FROM comparisons WHERE id = ?"));
    q.addBindValue(id);
    if (!q.exec()) return sql_error(path_, QStringLiteral("cannot read the comparison"), q.lastError());
    if (!q.next()) return make_error("no saved comparison " + std::to_string(id));
    StoredComparison out;
    out.info = {q.value(0).toLongLong(), q.value(1).toString(), q.value(2).toLongLong()};
    auto request = parse_object(q.value(3).toString(), "request");
    if (!request) return request.take_error();
    auto report = parse_object(q.value(4).toString(), "report");
    if (!report) return report.take_error();
    auto r = request_from_json(*request);
    if (!r) return r.take_error();
    auto p = report_from_json(*report);
    if (!p) return p.take_error();
    out.request = std::move(r).value();
    out.report = std::move(p).value();
    return out;
}

Status CompareStore::remove(qint64 id) {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("DELETE FROM comparisons WHERE id = ?"));
    q.addBindValue(id);
    if (!q.exec()) return sql_error(path_, QStringLiteral("cannot delete the comparison"), q.lastError());
    return {};
}

} // namespace cflow::ui
