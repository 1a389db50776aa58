#include "cflow/ui/convert_paths.h"

#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <QStandardPaths>

namespace cflow::ui {

QString default_convert_output_path(const QString& sourcePath, const QString& fallbackDir) {
    const QFileInfo info(sourcePath);
    // A folder source names its output after the folder, beside it.
    const QString name = (info.isDir() ? QDir(info.absoluteFilePath()).dirName() : info.completeBaseName()) +
                         QStringLiteral(".cflow");
    const QString besideDir = info.isDir() ? QFileInfo(QDir(info.absoluteFilePath()).absolutePath()).absolutePath()
                                           : info.absolutePath();
    const QFileInfo beside(besideDir);
    if (beside.isDir() && beside.isWritable()) return QDir(besideDir).filePath(name);
    const QString fallback =
        fallbackDir.isEmpty()
            ? QDir(QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation)).filePath(QStringLiteral("models"))
            : fallbackDir;
    return QDir(fallback).filePath(name);
}

QString user_facing_convert_error(const QString& error, const QString& outputPath) {
    const QRegularExpression temp(QRegularExpression::escape(outputPath) + QStringLiteral("\\.tmp-\\d+"));
    return QString(error).replace(temp, outputPath);
}

} // namespace cflow::ui
