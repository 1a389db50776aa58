#include "cflow/ui/compare_codec.h"
#include "qt_text.h"

#include <QJsonArray>

namespace cflow::ui {
namespace {

std::string json_utf8(const QJsonValue& v) { return v.toString().toStdString(); }

QJsonObject entry_to_json(const CompareEntry& e) {
    return {{"label", qt(e.label)},
            {"model_path", qt(e.modelPath)},
            {"threads", int(e.threads)},
            {"expert_fetch", qt(std::string(expert_fetch_name(e.expertFetch)))},
            {"kv_cache", qt(std::string(kv_cache_type_name(e.kvCache)))}};
}

Result<CompareEntry> entry_from_json(const QJsonObject& j) {
    CompareEntry e;
    e.label = json_utf8(j["label"]);
    e.modelPath = json_utf8(j["model_path"]);
    e.threads = unsigned(std::max(0, j["threads"].toInt()));
    const auto fetch = parse_expert_fetch(json_utf8(j["expert_fetch"]));
    const auto kv = parse_kv_cache_type(json_utf8(j["kv_cache"]));
    if (!fetch || !kv) return make_error("a saved comparison entry has an unknown expert fetch or KV cache type");
    e.expertFetch = *fetch;
    e.kvCache = *kv;
    return e;
}

} // namespace

QJsonObject request_to_json(const CompareRequest& r) {
    QJsonArray entries;
    for (const CompareEntry& e : r.entries) entries.append(entry_to_json(e));
    const CompareWorkloads& w = r.workloads;
    return {{"entries", entries},
            {"workloads", QJsonObject{{"speed", w.speed}, {"perplexity", w.perplexity}, {"agreement", w.agreement},
                                      {"stream_bytes", w.streamBytes}, {"critical_path", w.criticalPath},
                                      {"expert_wait", w.expertWait}}},
            {"prompt_tokens", r.promptTokens},
            {"warmup_tokens", r.warmupTokens},
            {"decode_tokens", r.decodeTokens},
            {"text", qt(r.text)},
            {"text_name", qt(r.textName)},
            {"context_tokens", qint64(r.contextTokens)},
            {"max_scored_tokens", qint64(r.maxScoredTokens)},
            {"reference_entry", qint64(r.referenceEntry)}};
}

Result<CompareRequest> request_from_json(const QJsonObject& j) {
    CompareRequest r;
    for (const QJsonValue& v : j["entries"].toArray()) {
        auto e = entry_from_json(v.toObject());
        if (!e) return e.take_error();
        r.entries.push_back(*e);
    }
    const QJsonObject w = j["workloads"].toObject();
    r.workloads = CompareWorkloads{w["speed"].toBool(), w["perplexity"].toBool(), w["agreement"].toBool(),
                                   w["stream_bytes"].toBool(), w["critical_path"].toBool(), w["expert_wait"].toBool()};
    r.promptTokens = j["prompt_tokens"].toInt(r.promptTokens);
    r.warmupTokens = j["warmup_tokens"].toInt(r.warmupTokens);
    r.decodeTokens = j["decode_tokens"].toInt(r.decodeTokens);
    r.text = json_utf8(j["text"]);
    r.textName = json_utf8(j["text_name"]);
    r.contextTokens = uint32_t(j["context_tokens"].toInteger(r.contextTokens));
    r.maxScoredTokens = uint64_t(j["max_scored_tokens"].toInteger(qint64(r.maxScoredTokens)));
    r.referenceEntry = size_t(j["reference_entry"].toInteger(0));
    return r;
}

QJsonObject report_to_json(const CompareReport& report) {
    QJsonArray rows;
    for (const CompareRow& row : report.rows) {
        QJsonObject values;
        for (size_t m = 0; m < kCompareMetricCount; ++m)
            if (row.values[m]) values[qt(std::string(compare_metric_key(CompareMetric(m))))] = *row.values[m];
        QJsonObject notes;  // why cells are empty (an endpoint entry's "not reported by the endpoint")
        for (size_t m = 0; m < kCompareMetricCount; ++m)
            if (!row.notes[m].empty()) notes[qt(std::string(compare_metric_key(CompareMetric(m))))] = qt(row.notes[m]);
        rows.append(QJsonObject{{"entry", entry_to_json(row.entry)},
                                {"display_name", qt(row.displayName)},
                                {"model_name", qt(row.modelName)},
                                {"threads", int(row.threads)},
                                {"values", values},
                                {"notes", notes},
                                {"failure", qt(row.failure)}});
    }
    return {{"rows", rows},
            {"text_name", qt(report.textName)},
            {"text_tokens", qint64(report.textTokens)},
            {"scored_text_bytes", qint64(report.scoredTextBytes)},
            {"tokenizers_differ", report.tokenizersDiffer},
            {"reference_name", qt(report.referenceName)},
            {"isa", qt(report.isa)},
            {"elapsed_seconds", report.elapsedSeconds}};
}

Result<CompareReport> report_from_json(const QJsonObject& j) {
    CompareReport report;
    for (const QJsonValue& v : j["rows"].toArray()) {
        const QJsonObject o = v.toObject();
        CompareRow row;
        auto e = entry_from_json(o["entry"].toObject());
        if (!e) return e.take_error();
        row.entry = *e;
        row.displayName = json_utf8(o["display_name"]);
        row.modelName = json_utf8(o["model_name"]);
        row.threads = unsigned(std::max(0, o["threads"].toInt()));
        const QJsonObject values = o["values"].toObject();
        for (auto it = values.begin(); it != values.end(); ++it)
            if (auto m = parse_compare_metric(it.key().toStdString()); m && it.value().isDouble())
                row.values[size_t(*m)] = it.value().toDouble();
        const QJsonObject notes = o["notes"].toObject();  // absent from runs saved before endpoint entries
        for (auto it = notes.begin(); it != notes.end(); ++it)
            if (auto m = parse_compare_metric(it.key().toStdString()); m && it.value().isString())
                row.notes[size_t(*m)] = json_utf8(it.value());
        row.failure = json_utf8(o["failure"]);
        report.rows.push_back(std::move(row));
    }
    if (report.rows.empty()) return make_error("a saved comparison has no rows");
    report.textName = json_utf8(j["text_name"]);
    report.textTokens = uint64_t(j["text_tokens"].toInteger());
    // Absent from runs saved before bits per byte: 0 bytes, one tokenizer (ranked by perplexity as then).
    report.scoredTextBytes = uint64_t(std::max<qint64>(0, j["scored_text_bytes"].toInteger()));
    report.tokenizersDiffer = j["tokenizers_differ"].toBool(false);
    report.referenceName = json_utf8(j["reference_name"]);
    report.isa = json_utf8(j["isa"]);
    report.elapsedSeconds = j["elapsed_seconds"].toDouble();
    return report;
}

} // namespace cflow::ui
