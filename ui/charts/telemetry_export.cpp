#include "cflow/ui/inspector/telemetry_export.h"

#include <cstdio>
#include <new>

#include <QSaveFile>

namespace cflow::ui {
namespace {

// Shortest text that reads back to the same float (CSV consumers parse it as a double).
std::string float_text(float v) {
    char buf[32];
    const int n = std::snprintf(buf, sizeof buf, "%.9g", double(v));
    return std::string(buf, n > 0 ? size_t(n) : 0);
}

} // namespace

std::string telemetry_csv_header() {
    std::string h = "position,token,layer,routing_layer,injection_layer";
    for (size_t s = 0; s < size_t(Stream::Count_); ++s) {
        h += ',';
        h += stream_name(Stream(s));
        h += "_bytes";
    }
    h += ",compute_us,expert_wait_us,residual_norm,experts,expert_weights,token_vocab_bytes,token_total_us";
    return h;
}

std::string telemetry_csv(const std::vector<TokenTelemetry>& tokens) {
    std::string out = telemetry_csv_header();
    out += '\n';
    // Appended piece by piece: cheaper than temporaries, and GCC 12 warns (-Wrestrict, a false
    // positive) on chains of const char* + std::string&&.
    auto field = [&out](const std::string& text) {
        out += text;
        out += ',';
    };
    for (const TokenTelemetry& t : tokens) {
        for (const LayerRecord& r : t.layers) {
            field(std::to_string(t.position));
            field(std::to_string(t.token));
            field(std::to_string(r.layer));
            field(std::to_string(r.routing_layer));
            field(std::to_string(r.injectionLayer));
            for (uint64_t b : r.bytesRead) field(std::to_string(b));
            field(float_text(r.computeUs));
            field(float_text(r.expertWaitUs));
            field(float_text(r.residualNorm));
            // Expert lists are ';'-separated inside one field, so the column count stays fixed.
            const uint32_t n = r.nSelected < kMaxTopK ? r.nSelected : kMaxTopK;
            for (uint32_t i = 0; i < n; ++i) {
                if (i) out += ';';
                out += std::to_string(r.experts[i]);
            }
            out += ',';
            for (uint32_t i = 0; i < n; ++i) {
                if (i) out += ';';
                out += float_text(r.expertWeights[i]);
            }
            out += ',';
            field(std::to_string(t.vocabBytes));
            out += float_text(t.totalUs);
            out += '\n';
        }
    }
    return out;
}

std::string telemetry_jsonl(const std::vector<TokenTelemetry>& tokens) {
    std::string out;
    for (const TokenTelemetry& t : tokens) out += to_json_line(t, /*include_experts=*/true, /*include_stats=*/true) + "\n";
    return out;
}

Status export_telemetry(const std::vector<TokenTelemetry>& tokens, const QString& path, TelemetryFormat format) {
    const std::string where = path.toStdString();
    std::string text;
    try {
        text = format == TelemetryFormat::Csv ? telemetry_csv(tokens) : telemetry_jsonl(tokens);
    } catch (const std::bad_alloc&) {
        return make_error(where + ": out of memory formatting " + std::to_string(tokens.size()) + " tokens of telemetry");
    } catch (const std::exception& e) {  // nlohmann::json errors from to_json_line
        return make_error(where + ": cannot format telemetry: " + e.what());
    }
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return make_error(where + ": cannot open a temporary file for writing: " + file.errorString().toStdString());
    if (file.write(text.data(), qint64(text.size())) != qint64(text.size())) {
        const std::string why = file.errorString().toStdString();
        file.cancelWriting();
        return make_error(where + ": write failed after " + std::to_string(file.pos()) + " bytes: " + why);
    }
    if (!file.commit()) return make_error(where + ": cannot rename the temporary file into place: " + file.errorString().toStdString());
    return {};
}

} // namespace cflow::ui
