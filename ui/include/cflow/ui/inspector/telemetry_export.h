#pragma once
// Writing a session's recorded telemetry to a file: CSV (one row per token and layer) or
// JSON lines (one object per token, the format of `cflow generate --stats --trace-experts`).
#include <string>
#include <vector>

#include <QString>

#include "cflow/engine/forward/telemetry.h"
#include "cflow/base/result.h"

namespace cflow::ui {

enum class TelemetryFormat { Csv, Jsonl };

// The CSV header line (without newline) and the whole text.
std::string telemetry_csv_header();
std::string telemetry_csv(const std::vector<TokenTelemetry>& tokens);
std::string telemetry_jsonl(const std::vector<TokenTelemetry>& tokens);

// Writes to a temporary file beside path and renames it over path (QSaveFile), so a reader
// never sees a half-written export. The error names the path and the failing step.
Status export_telemetry(const std::vector<TokenTelemetry>& tokens, const QString& path, TelemetryFormat format);

} // namespace cflow::ui
