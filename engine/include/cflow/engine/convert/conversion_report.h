#pragma once
// The conversion report saved beside a converted model (MODEL.cflow -> MODEL.cflow.report.json
// and MODEL.cflow.report.md): what was converted, how, and what validation measured. The model
// library shows it; the files are written whole or not at all.
#include <string>

#include "cflow/base/result.h"
#include "cflow/engine/convert/conversion_preflight.h"
#include "cflow/engine/convert/conversion_validation.h"

namespace cflow {

struct ConversionReportPaths {
    std::string json;
    std::string markdown;
};
ConversionReportPaths conversion_report_paths(const std::string& model_path);

struct ConversionRecord {
    std::string source_path;
    std::string output_path;
    std::string options_text;    // "weights q4_0, embeddings q8_0, ..., .cflow"
    double convert_seconds = 0;
    uint64_t file_bytes = 0;
    const PreflightReport* preflight = nullptr;    // optional
    const ValidationReport* validation = nullptr;  // optional
};

// "weights q4_0; embeddings q4_0; attention q4_0; ffn q4_0; experts q4_0; output q4_0; container cflow"
std::string convert_options_text(const ConvertOptions& options);

std::string conversion_report_json(const ConversionRecord& record);
std::string conversion_report_markdown(const ConversionRecord& record);
Status write_conversion_report(const ConversionRecord& record);

} // namespace cflow
