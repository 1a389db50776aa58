#pragma once
// What the comparison's charts show, apart from how they are drawn: the values, units, names and
// titles of a bar chart per metric and of the quality-against-bytes scatter. Both renderers read
// them from here (compare_charts.cpp on Qt Charts, compare_charts_painter.cpp on QPainter where a
// build has no Qt Charts), so the two builds chart the same numbers under the same titles.
// Values that are missing or not finite (a NaN from a failed measurement) are left out.
#include <optional>
#include <string>
#include <vector>

#include <QString>
#include <QStringList>

#include "cflow/engine/compare/comparison.h"

namespace cflow::ui {

struct ParetoPoint {
    double x = 0;  // cost (bytes per token): lower is better
    double y = 0;  // loss (perplexity): lower is better
};
// Indices of the points no other point beats on both axes (ties kept once), by ascending x.
std::vector<size_t> pareto_front(const std::vector<ParetoPoint>& points);

// Rows a chart draws, in drawing order: those with a finite value of the metric (bar chart) or of
// both of the scatter's (metric nullopt).
std::vector<size_t> charted_rows(const CompareReport& report, std::optional<CompareMetric> metric);

// "1: name" (the row's 1-based number), the name elided past 28 characters: long entry names
// would squeeze the bars. The hover texts give the whole name.
QString compare_chart_short_name(size_t row, const std::string& name);

// Byte counts in KiB or MiB and shares in percent, so that an axis reads "2.4 MiB", not 2500000.
struct CompareChartUnit {
    double divisor = 1;  // chart value = raw value / divisor
    QString suffix;      // "" = the metric's own unit, already in its label
};
CompareChartUnit compare_chart_unit(CompareMetric metric, double maxRawValue);

// Significant digits of a bar's value label: the whole part and, below 1000, a decimal or two.
int compare_label_precision(double maxValue);

struct CompareBarChartData {
    CompareMetric metric{};
    QString title;             // the metric, its unit and which way is better
    QString seriesLabel;       // the metric's label with the unit suffix
    QString valueAxisTitle;    // the unit suffix ("" when the label carries the unit)
    std::vector<size_t> rows;  // [bars] the report row each bar draws
    QStringList categories;    // [bars] compare_chart_short_name
    std::vector<double> values;  // [bars] in the unit (raw / unit divisor)
    double maxValue = 0;       // of values
    int labelPrecision = 3;    // compare_label_precision(maxValue)
};
// nullopt when no row has the metric.
std::optional<CompareBarChartData> compare_bar_chart_data(const CompareReport& report, CompareMetric metric);

// Bytes per token on the scatter's x axis are in MiB, like B_naive / B_critical.
inline constexpr double kCompareChartMiB = 1024.0 * 1024.0;

struct CompareScatterChartData {
    CompareMetric quality{};   // compare_quality_metric: perplexity or bits per byte
    QString title;
    QString xAxisTitle;        // with its unit (MiB)
    QString yAxisTitle;
    std::vector<size_t> rows;  // [points] the report row each point draws
    QStringList names;         // [points] compare_chart_short_name
    std::vector<ParetoPoint> points;  // [points] x in MiB per token, y the quality metric
    std::vector<size_t> front;        // indices into points on the Pareto front, by ascending x
};
// nullopt when no row has both bytes per token and the quality metric.
std::optional<CompareScatterChartData> compare_scatter_chart_data(const CompareReport& report);

// What the charts page says when no entry has a value to chart (no run yet, or every measurement
// failed or was not asked for).
QString compare_charts_no_data_text();

} // namespace cflow::ui
