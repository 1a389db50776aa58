#pragma once
// The bundled default model (resources/default-model.cflow, random weights: it exists so the
// inspector has something to show before the user opens a real model). The build copies it
// beside the cflow-studio executable; an install puts it in <prefix>/share/cflow-studio/.
#include <QString>

namespace cflow::ui {

inline constexpr const char* kDefaultModelFileName = "default-model.cflow";

// The first existing of <executableDir>/default-model.cflow and
// <executableDir>/../share/cflow-studio/default-model.cflow, as a clean absolute path;
// a null QString when neither exists.
QString default_model_path(const QString& executableDir);

// The same for the running application (QCoreApplication::applicationDirPath()).
QString default_model_path();

} // namespace cflow::ui
