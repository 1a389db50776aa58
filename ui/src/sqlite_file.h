#pragma once
// The studio's SQLite file (conversations and saved comparisons share it): one named Qt SQL
// connection per store, opened the same way by each.
#include <initializer_list>

#include <QSqlDatabase>
#include <QString>

#include "cflow/base/result.h"

class QSqlError;

namespace cflow::ui {

// "PATH: WHAT: the driver's text", the stores' one-line error.
Error sql_error(const QString& path, const QString& what, const QSqlError& error);

// Creates the folder, opens path on a new connection named `connection` with a 5 s busy
// timeout and runs journal_mode=WAL and synchronous=NORMAL (readers never block the writer, a
// killed process leaves committed rows intact; only an OS crash may lose the last commits),
// then each of extra_pragmas. On an error the connection may exist: close_sqlite removes it.
Result<QSqlDatabase> open_sqlite(const QString& path, const QString& connection,
                                 std::initializer_list<const char*> extra_pragmas = {});

// Opens an existing file read-only (SQLITE_OPEN_READONLY): no folder, journal or pragma writes.
Result<QSqlDatabase> open_sqlite_read_only(const QString& path, const QString& connection);

// Closes the connection and removes it (a no-op for a name never added).
void close_sqlite(const QString& connection);

} // namespace cflow::ui
