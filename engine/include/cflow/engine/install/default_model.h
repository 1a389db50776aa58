#pragma once
// The bundled default model (resources/default-model.cflow, the project's own trained story MoE;
// resources/MODEL_CARD.md): what `cflow generate` / `cflow chat` without MODEL and the desktop
// app's first start open. The build copies it beside the executables; the .deb and the Windows
// installer put it in <prefix>/share/cflow-studio/. One rule for every front end.
#include <optional>
#include <string>
#include <vector>

namespace cflow {

inline constexpr const char* kDefaultModelFileName = "default-model.cflow";

// Where it may be, in search order: <exe_dir>/default-model.cflow (build tree), then
// <exe_dir>/../share/cflow-studio/default-model.cflow (installed). Empty for an empty exe_dir.
std::vector<std::string> default_model_candidates(const std::string& exe_dir);

// The first candidate that is a regular file, as an absolute, lexically normal path (no "..");
// nullopt when none is.
std::optional<std::string> default_model_path(const std::string& exe_dir);

// The same for the running executable (executable_dir.h).
std::optional<std::string> default_model_path();

// The bundled model zoo (resources/models: models.json and the .cflow files it lists), which the
// .deb installs as <prefix>/share/cflow-studio/models: the "models" folder beside a default-model
// candidate (same order) that holds models.json, as an absolute, lexically normal path; nullopt
// when none does (the build tree copies only the default model beside the executables).
inline constexpr const char* kBundledModelsIndexName = "models.json";
std::optional<std::string> bundled_models_dir(const std::string& exe_dir);

// The same for the running executable.
std::optional<std::string> bundled_models_dir();

} // namespace cflow
