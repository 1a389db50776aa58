#include "sqlite_file.h"

#include <QDir>
#include <QFileInfo>
#include <QSqlError>
#include <QSqlQuery>

namespace cflow::ui {

Error sql_error(const QString& path, const QString& what, const QSqlError& error) {
    return make_error(QStringLiteral("%1: %2: %3").arg(QDir::toNativeSeparators(path), what, error.text()).toStdString());
}

Result<QSqlDatabase> open_sqlite(const QString& path, const QString& connection,
                                 std::initializer_list<const char*> extra_pragmas) {
    if (!QSqlDatabase::isDriverAvailable(QStringLiteral("QSQLITE")))
        return make_error("the Qt SQLite driver (QSQLITE) is not available: install libqt6sql6-sqlite");
    const QString dir = QFileInfo(path).absolutePath();
    if (!QDir().mkpath(dir))
        return make_error(QStringLiteral("%1: cannot create the folder").arg(QDir::toNativeSeparators(dir)).toStdString());
    QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), connection);
    db.setDatabaseName(path);
    db.setConnectOptions(QStringLiteral("QSQLITE_BUSY_TIMEOUT=5000"));
    if (!db.open()) return sql_error(path, QStringLiteral("cannot open the database"), db.lastError());
    QSqlQuery q(db);
    for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL"})
        if (!q.exec(QString::fromLatin1(pragma))) return sql_error(path, QString::fromLatin1(pragma), q.lastError());
    for (const char* pragma : extra_pragmas)
        if (!q.exec(QString::fromLatin1(pragma))) return sql_error(path, QString::fromLatin1(pragma), q.lastError());
    return db;
}

Result<QSqlDatabase> open_sqlite_read_only(const QString& path, const QString& connection) {
    if (!QSqlDatabase::isDriverAvailable(QStringLiteral("QSQLITE")))
        return make_error("the Qt SQLite driver (QSQLITE) is not available: install libqt6sql6-sqlite");
    QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), connection);
    db.setDatabaseName(path);
    db.setConnectOptions(QStringLiteral("QSQLITE_OPEN_READONLY;QSQLITE_BUSY_TIMEOUT=5000"));
    if (!db.open()) return sql_error(path, QStringLiteral("cannot open the database read-only"), db.lastError());
    return db;
}

void close_sqlite(const QString& connection) {
    {
        QSqlDatabase db = QSqlDatabase::database(connection, false);
        if (db.isOpen()) db.close();
    }  // the handle must be gone before the connection is removed
    QSqlDatabase::removeDatabase(connection);
}

} // namespace cflow::ui
