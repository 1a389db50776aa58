#include "cflow/ui/default_model.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

namespace cflow::ui {

QString default_model_path(const QString& executableDir) {
    const QDir dir(executableDir);
    const QString candidates[] = {
        dir.filePath(QString::fromLatin1(kDefaultModelFileName)),                              // build tree
        dir.filePath(QStringLiteral("../share/cflow-studio/") + QString::fromLatin1(kDefaultModelFileName)),  // install
    };
    for (const QString& candidate : candidates) {
        const QFileInfo info(candidate);
        if (info.isFile()) return QDir::cleanPath(info.absoluteFilePath());
    }
    return {};
}

QString default_model_path() { return default_model_path(QCoreApplication::applicationDirPath()); }

} // namespace cflow::ui
