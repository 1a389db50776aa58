// The report files beside a converted model: JSON for programs, Markdown for people.
#include "cflow/engine/convert/conversion_report.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "cflow/formats/mapped_file.h"

namespace cflow {
namespace {

Status write_text(const std::string& path, const std::string& text) {
    AtomicFileWriter out(path);
    if (Status s = out.open(); !s) return s;
    if (Status s = out.write(text.data(), text.size()); !s) return s;
    return out.commit();
}

std::string md_escape(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (c == '|' || c == '`' || c == '*' || c == '_' || c == '<' || c == '>') out += '\\';
        out += c == '\n' ? ' ' : c;
    }
    return out;
}

} // namespace

ConversionReportPaths conversion_report_paths(const std::string& model_path) {
    return {model_path + ".report.json", model_path + ".report.md"};
}

std::string convert_options_text(const ConvertOptions& options) {
    std::string s = "weights " + std::string(dtype_name(options.weight_quant));
    for (TensorClass c : kTensorClasses)
        s += "; " + std::string(tensor_class_name(c)) + " " + std::string(dtype_name(quant_for(options, c)));
    s += options.format == ContainerFormat::Vflow ? "; container vflow" : "; container cflow";
    return s;
}

std::string conversion_report_json(const ConversionRecord& r) {
    nlohmann::json j{{"source", r.source_path},
                     {"output", r.output_path},
                     {"options", r.options_text},
                     {"convert_seconds", r.convert_seconds},
                     {"file_bytes", r.file_bytes}};
    if (r.preflight) j["preflight"] = nlohmann::json::parse(preflight_json(*r.preflight));
    if (r.validation) j["validation"] = nlohmann::json::parse(validation_json(*r.validation));
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string conversion_report_markdown(const ConversionRecord& r) {
    std::string s = "# Conversion report\n\n";
    char buf[128];
    s += "| | |\n|---|---|\n";
    s += "| source | " + md_escape(r.source_path) + " |\n";
    s += "| output | " + md_escape(r.output_path) + " |\n";
    s += "| options | " + md_escape(r.options_text) + " |\n";
    std::snprintf(buf, sizeof buf, "%llu bytes in %.2f s", (unsigned long long)r.file_bytes, r.convert_seconds);
    s += "| written | " + std::string(buf) + " |\n";
    auto section = [&](const char* title, const std::string& text) {
        s += std::string("\n## ") + title + "\n\n| | |\n|---|---|\n";
        size_t at = 0;
        while (at < text.size()) {
            size_t nl = text.find('\n', at);
            if (nl == std::string::npos) nl = text.size();
            const std::string line = text.substr(at, nl - at);
            const size_t colon = line.find(": ");
            if (colon != std::string::npos)
                s += "| " + md_escape(line.substr(0, colon)) + " | " + md_escape(line.substr(colon + 2)) + " |\n";
            at = nl + 1;
        }
    };
    if (r.preflight) section("Preflight", preflight_text(*r.preflight));
    if (r.validation) section("Validation", validation_text(*r.validation));
    return s;
}

Status write_conversion_report(const ConversionRecord& record) {
    const auto paths = conversion_report_paths(record.output_path);
    if (Status s = write_text(paths.json, conversion_report_json(record)); !s) return s;
    return write_text(paths.markdown, conversion_report_markdown(record));
}

} // namespace cflow
