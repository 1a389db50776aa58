#pragma once
// The check every front end runs on a converted file before it replaces the output
// (ConvertOptions::verify_output): the file is loaded exactly as `generate` and the desktop
// app load it, so a conversion never succeeds with a file the engine then refuses.
#include <string>

#include "cflow/base/result.h"

namespace cflow {

// Loads written_path with Model::load. The error keeps the loader's kind and reason, with
// written_path (a temporary name) replaced by shown_path, the output the user asked for.
Status check_model_loads(const std::string& written_path, const std::string& shown_path);

} // namespace cflow
