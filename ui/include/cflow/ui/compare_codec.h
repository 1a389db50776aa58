#pragma once
// A comparison's request and report as JSON, for the saved runs (compare_store.h): metric values
// under their stable keys (compare_metric_key), absent when not measured. Decoding a record
// written by a newer build ignores unknown keys.
#include <QJsonObject>

#include "cflow/base/result.h"
#include "cflow/engine/compare/comparison.h"

namespace cflow::ui {

QJsonObject request_to_json(const CompareRequest& request);
Result<CompareRequest> request_from_json(const QJsonObject& json);
QJsonObject report_to_json(const CompareReport& report);
Result<CompareReport> report_from_json(const QJsonObject& json);

} // namespace cflow::ui
