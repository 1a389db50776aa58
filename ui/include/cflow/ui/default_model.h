#pragma once
// The bundled default model (resources/default-model.cflow: the project's own trained story MoE,
// resources/MODEL_CARD.md), so a first start can chat and fill the inspector with no set-up. The
// build copies it beside the executables; an install puts it in <prefix>/share/cflow-studio/.
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
