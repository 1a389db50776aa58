#include "cflow/ui/compare_charts_data.h"

#include <algorithm>
#include <cmath>

#include <QObject>

#include "qt_text.h"

namespace cflow::ui {
namespace {

// A value a chart can place: present and finite (NaN or infinity would put a bar or point
// nowhere, or stretch an axis to infinity).
std::optional<double> chartable_value(const CompareRow& row, CompareMetric metric) {
    const auto value = row.value(metric);
    if (!value || !std::isfinite(*value)) return std::nullopt;
    return value;
}

bool compare_chart_is_byte_metric(CompareMetric metric) {
    switch (metric) {
    case CompareMetric::BytesPerToken:
    case CompareMetric::AttentionBytesPerToken:
    case CompareMetric::DenseBytesPerToken:
    case CompareMetric::ExpertBytesPerToken:
    case CompareMetric::RouterBytesPerToken:
    case CompareMetric::VocabBytesPerToken: return true;
    default: return false;
    }
}

} // namespace

std::vector<size_t> pareto_front(const std::vector<ParetoPoint>& points) {
    std::vector<size_t> order(points.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return points[a].x < points[b].x || (points[a].x == points[b].x && points[a].y < points[b].y);
    });
    std::vector<size_t> front;
    for (size_t i : order)
        if (front.empty() || points[i].y < points[front.back()].y) front.push_back(i);
    return front;
}

std::vector<size_t> charted_rows(const CompareReport& report, std::optional<CompareMetric> metric) {
    std::vector<size_t> rows;
    for (size_t i = 0; i < report.rows.size(); ++i) {
        const CompareRow& row = report.rows[i];
        if (metric ? chartable_value(row, *metric).has_value()
                   : chartable_value(row, CompareMetric::BytesPerToken) && chartable_value(row, compare_quality_metric(report)))
            rows.push_back(i);
    }
    return rows;
}

QString compare_chart_short_name(size_t row, const std::string& name) {
    QString n = qt(name);
    if (n.size() > 28) n = n.left(27) + u'…';
    return QStringLiteral("%1: %2").arg(row + 1).arg(n);
}

CompareChartUnit compare_chart_unit(CompareMetric metric, double maxRawValue) {
    if (compare_chart_is_byte_metric(metric)) {
        if (maxRawValue >= kCompareChartMiB) return {kCompareChartMiB, QObject::tr("MiB")};
        if (maxRawValue >= 1024) return {1024, QObject::tr("KiB")};
        return {1, QObject::tr("bytes")};
    }
    if (metric == CompareMetric::Top1Agreement || metric == CompareMetric::ExpertWaitShare) return {0.01, QObject::tr("%")};
    return {};
}

int compare_label_precision(double maxValue) {
    const int wholeDigits = maxValue >= 1 ? int(std::floor(std::log10(maxValue))) + 1 : 1;
    return std::max(3, wholeDigits);
}

std::optional<CompareBarChartData> compare_bar_chart_data(const CompareReport& report, CompareMetric metric) {
    CompareBarChartData data;
    data.metric = metric;
    data.rows = charted_rows(report, metric);
    if (data.rows.empty()) return std::nullopt;
    double rawMax = 0;
    for (size_t i : data.rows) rawMax = std::max(rawMax, *chartable_value(report.rows[i], metric));
    const CompareChartUnit unit = compare_chart_unit(metric, rawMax);
    data.seriesLabel = qt(compare_metric_label(metric)) + (unit.suffix.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(unit.suffix));
    data.valueAxisTitle = unit.suffix;
    for (size_t i : data.rows) {
        const double value = *chartable_value(report.rows[i], metric) / unit.divisor;
        data.values.push_back(value);
        data.categories << compare_chart_short_name(i, report.rows[i].displayName);
        data.maxValue = std::max(data.maxValue, value);
    }
    data.labelPrecision = compare_label_precision(data.maxValue);
    data.title = data.seriesLabel + (compare_metric_higher_is_better(metric) ? QObject::tr(" (higher is better)")
                                                                            : QObject::tr(" (lower is better)"));
    if (metric == CompareMetric::Perplexity && report.tokenizersDiffer)
        data.title = data.seriesLabel + QObject::tr(" (per token: not comparable across these tokenizers)");
    return data;
}

std::optional<CompareScatterChartData> compare_scatter_chart_data(const CompareReport& report) {
    CompareScatterChartData data;
    data.quality = compare_quality_metric(report);
    data.rows = charted_rows(report, std::nullopt);
    if (data.rows.empty()) return std::nullopt;
    for (size_t i : data.rows) {
        const CompareRow& row = report.rows[i];
        data.points.push_back({*row.value(CompareMetric::BytesPerToken) / kCompareChartMiB, *row.value(data.quality)});
        data.names << compare_chart_short_name(i, row.displayName);
    }
    data.front = pareto_front(data.points);
    const bool bits = data.quality == CompareMetric::BitsPerByte;
    data.title = bits ? QObject::tr("Bits per byte against bytes per token (lower left is better; line: Pareto front)")
                      : QObject::tr("Perplexity against bytes per token (lower left is better; line: Pareto front)");
    data.xAxisTitle = QObject::tr("weight bytes read per decoded token (MiB)");
    data.yAxisTitle = bits ? QObject::tr("bits per byte") : QObject::tr("perplexity");
    return data;
}

QString compare_charts_no_data_text() {
    return QObject::tr("No data to chart: no entry has a measured value yet. Charts appear here when a comparison "
                       "finishes with at least one measurement.");
}

} // namespace cflow::ui
