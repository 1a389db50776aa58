#pragma once
// The bundled default model (resources/default-model.cflow, the project's own trained story MoE):
// what `cflow generate` / `cflow chat` use when no MODEL is given. The build copies it beside the
// executables; the .deb and the Windows installer put it in <prefix>/share/cflow-studio/.
#include <optional>
#include <string>
#include <vector>

#include "cflow/base/result.h"

namespace cflow::cli {

inline constexpr const char* kDefaultModelFileName = "default-model.cflow";

// Folder of the running executable (platform parts in executable_dir_{posix,win32}.cpp); empty if unknown.
std::string executable_dir();

// The first existing of <exe dir>/default-model.cflow and <exe dir>/../share/cflow-studio/default-model.cflow.
std::optional<std::string> default_model_path(const std::string& exe_dir);
std::optional<std::string> default_model_path();

// The command's MODEL: the only positional, else the bundled default model; an error says which is missing.
Result<std::string> model_argument_or_default(const std::vector<std::string>& positionals);

} // namespace cflow::cli
