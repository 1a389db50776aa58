#include "cflow/ui/default_model.h"

#include <QCoreApplication>

namespace cflow::ui {

QString default_model_path(const QString& executableDir) {
    const auto path = cflow::default_model_path(executableDir.toStdString());
    return path ? QString::fromStdString(*path) : QString();
}

QString default_model_path() { return default_model_path(QCoreApplication::applicationDirPath()); }

QString bundled_models_folder(const QString& executableDir) {
    const auto dir = cflow::bundled_models_dir(executableDir.toStdString());
    return dir ? QString::fromStdString(*dir) : QString();
}

QString bundled_models_folder() { return bundled_models_folder(QCoreApplication::applicationDirPath()); }

} // namespace cflow::ui
