#include "cflow/ui/database_recovery.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QMessageBox>
#include <QPushButton>
#include <QStandardPaths>

#include <spdlog/spdlog.h>

namespace cflow::ui {
namespace {

// SQLite's companions of a database file: they belong to it and move with it.
const char* const kCompanionSuffixes[] = {"", "-wal", "-shm", "-journal"};

// The store when it opens and passes quick_check; else what is wrong.
Result<std::unique_ptr<ConversationStore>> open_and_check(const QString& path, ConversationStore::Access access) {
    auto store = ConversationStore::open(path, access);
    if (!store) return store.take_error();
    auto check = (*store)->quickCheck();
    if (!check) return check.take_error();
    if (*check != QLatin1String("ok"))
        return make_error(QStringLiteral("the file is damaged (SQLite quick_check: %1)").arg(check->section(u'\n', 0, 2)).toStdString());
    return store;
}

Result<QString> move_aside(const QString& path) {
    const QString stamp = QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"));
    QString target = QStringLiteral("%1.damaged-%2").arg(path, stamp);
    for (int n = 2; QFileInfo::exists(target); ++n) target = QStringLiteral("%1.damaged-%2-%3").arg(path, stamp).arg(n);
    for (const char* suffix : kCompanionSuffixes) {
        const QString from = path + QLatin1String(suffix);
        if (!QFileInfo::exists(from)) continue;
        if (!QFile::rename(from, target + QLatin1String(suffix)))
            return make_error(QStringLiteral("%1: cannot move it to %2").arg(QDir::toNativeSeparators(from),
                                                                            QDir::toNativeSeparators(target + QLatin1String(suffix)))
                                  .toStdString());
    }
    return target;
}

// A copy in the temporary folder, so that reading it can change nothing of the original (SQLite
// may want to replay the journal even for a reader).
Result<QString> copy_for_reading(const QString& path) {
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::TempLocation);
    const QString copy = QDir(dir).filePath(QStringLiteral("cflow-studio-read-only-%1.sqlite").arg(QCoreApplication::applicationPid()));
    for (const char* suffix : kCompanionSuffixes) {
        const QString from = path + QLatin1String(suffix);
        const QString to = copy + QLatin1String(suffix);
        QFile::remove(to);
        if (QFileInfo::exists(from) && !QFile::copy(from, to))
            return make_error(QStringLiteral("cannot copy %1 to %2").arg(QDir::toNativeSeparators(from), QDir::toNativeSeparators(to)).toStdString());
    }
    return copy;
}

} // namespace

OpenedStore open_conversation_store(const QString& path, const DamagedDatabaseAsk& ask) {
    auto opened = open_and_check(path, ConversationStore::Access::ReadWrite);
    if (opened) return {std::move(opened).value(), {}};
    QString problem = QString::fromStdString(opened.error());
    for (;;) {
        spdlog::warn("conversation database {}: {}", path.toStdString(), problem.toStdString());
        switch (ask(path, problem)) {
        case DamagedDatabaseChoice::Quit: return {};
        case DamagedDatabaseChoice::MoveAsideAndStartNew: {
            auto moved = move_aside(path);
            if (!moved) {
                problem = QString::fromStdString(moved.error());
                continue;
            }
            auto fresh = open_and_check(path, ConversationStore::Access::ReadWrite);
            if (!fresh) {
                problem = QString::fromStdString(fresh.error());
                continue;
            }
            return {std::move(fresh).value(),
                    QObject::tr("The damaged conversation database was moved to %1; new conversations go to a new one.")
                        .arg(QDir::toNativeSeparators(*moved))};
        }
        case DamagedDatabaseChoice::OpenCopyReadOnly: {
            auto copy = copy_for_reading(path);
            if (!copy) {
                problem = QString::fromStdString(copy.error());
                continue;
            }
            // No quick_check here: the user asked to read what can still be read.
            auto store = ConversationStore::open(*copy, ConversationStore::Access::ReadOnly);
            if (!store) {
                problem = QObject::tr("even a read-only copy cannot be read: %1").arg(QString::fromStdString(store.error()));
                continue;
            }
            return {std::move(store).value(),
                    QObject::tr("Read-only copy of %1: its conversations can be read, nothing new is saved.")
                        .arg(QDir::toNativeSeparators(path))};
        }
        }
    }
}

DamagedDatabaseChoice ask_about_damaged_database(QWidget* parent, const QString& path, const QString& problem) {
    QMessageBox box(QMessageBox::Warning, QObject::tr("Conversation database"),
                    QObject::tr("The conversation database cannot be used:\n%1\n\n%2")
                        .arg(QDir::toNativeSeparators(path), problem),
                    QMessageBox::NoButton, parent);
    box.setObjectName(QStringLiteral("damagedDatabaseBox"));
    QPushButton* readOnly = box.addButton(QObject::tr("Open a read-only copy"), QMessageBox::AcceptRole);
    QPushButton* moveAside = box.addButton(QObject::tr("Move it aside and start a new one"), QMessageBox::ActionRole);
    QPushButton* quit = box.addButton(QObject::tr("Quit"), QMessageBox::RejectRole);
    box.setDefaultButton(readOnly);
    box.setEscapeButton(quit);
    box.exec();
    if (box.clickedButton() == moveAside) return DamagedDatabaseChoice::MoveAsideAndStartNew;
    if (box.clickedButton() == readOnly) return DamagedDatabaseChoice::OpenCopyReadOnly;
    return DamagedDatabaseChoice::Quit;
}

} // namespace cflow::ui
