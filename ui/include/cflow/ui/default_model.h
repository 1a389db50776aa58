#pragma once
// The bundled default model for the desktop app, so a first start can chat and fill the
// inspector with no set-up. Where it is looked for is the engine's rule
// (cflow/engine/install/default_model.h); this is its QString face.
#include <QString>

#include "cflow/engine/install/default_model.h"

namespace cflow::ui {

// cflow::default_model_path(executableDir) as a QString; a null QString when there is none.
QString default_model_path(const QString& executableDir);

// The same for the running application (QCoreApplication::applicationDirPath()).
QString default_model_path();

// cflow::bundled_models_dir(executableDir) as a QString: the installed model zoo
// (<prefix>/share/cflow-studio/models); a null QString when there is none.
QString bundled_models_folder(const QString& executableDir);

// The same for the running application.
QString bundled_models_folder();

} // namespace cflow::ui
