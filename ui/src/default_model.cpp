#include "cflow/ui/default_model.h"

#include <QCoreApplication>

namespace cflow::ui {

QString default_model_path(const QString& executableDir) {
    const auto path = cflow::default_model_path(executableDir.toStdString());
    return path ? QString::fromStdString(*path) : QString();
}

QString default_model_path() { return default_model_path(QCoreApplication::applicationDirPath()); }

} // namespace cflow::ui
