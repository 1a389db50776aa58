#pragma once
// The engine's small per-machine JSON files (the bandwidth probe, the machine calibration) written
// whole or not at all: the folder made if missing, then a temp file renamed over the old one.
#include <string>

#include <nlohmann/json.hpp>

#include "cflow/base/result.h"

namespace cflow {

// Writes `j` indented, with a final newline; errors name the path.
Status write_json_file(const std::string& path, const nlohmann::json& j);

} // namespace cflow
