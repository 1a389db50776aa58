#pragma once
// The comparison's charts: a bar chart per measured metric and the perplexity against
// bytes-per-token scatter with its Pareto front (the paper's Fig. 4.1 shape). Each chart can be
// saved as a PNG at a fixed size. Two renderers of the same data (compare_charts_data.h), chosen
// at configure time by CFLOW_COMPARE_CHARTS (ui/CMakeLists.txt):
// - qtcharts (CFLOW_HAVE_QT_CHARTS set; compare_charts.cpp): Qt Charts, with the chart objects
//   declared below. They are built once per finished run, so its scene cost does not matter here,
//   unlike the 30 Hz inspector.
// - painter (compare_charts_painter*.cpp): QPainter, for builds without Qt Charts (the Windows
//   cross build: Debian serves no qt6-charts source). CompareChartsWidget then shows
//   PaintedCompareChart widgets (compare_charts_painter.h) and exports the same PNGs.
#include <optional>
#include <vector>

#include <QString>
#include <QStringList>
#include <QWidget>

#include "cflow/base/result.h"
#include "cflow/engine/compare/comparison.h"
#include "cflow/ui/compare_charts_data.h"

#ifdef CFLOW_HAVE_QT_CHARTS
#include <QtCharts/QChartView>
#endif

class QChart;
class QChartView;

namespace cflow::ui {

#ifdef CFLOW_HAVE_QT_CHARTS
// A bar per entry that has the metric; nullptr when none has it.
QChart* make_metric_chart(const CompareReport& report, CompareMetric metric);
// Entries with both the quality metric (compare_quality_metric: perplexity, or bits per byte when
// the tokenizers differ) and bytes per token, one scatter series each, and the Pareto line;
// nullptr when no entry has both.
QChart* make_pareto_chart(const CompareReport& report);
// A comparison chart on screen: hovering a bar, the column of an axis label or a scatter point
// shows the entry's full name and the exact value with its unit (the chart's own labels are
// elided to fit); value labels are kept inside the plot at whatever size the view is given.
class CompareChartView : public QChartView {
public:
    // metric: the bar chart's; nullopt for the scatter. Takes the chart.
    CompareChartView(QChart* chart, CompareReport report, std::optional<CompareMetric> metric, QWidget* parent = nullptr);
    // The hover text at a point of the view (viewport coordinates); "" where no entry is.
    QString toolTipAt(QPoint viewPos) const;

protected:
    bool viewportEvent(QEvent* event) override;

private:
    CompareReport report_;
    std::optional<CompareMetric> metric_;
    std::vector<size_t> rows_;  // [bars or points] the report row each one draws
};

// Widens a chart's value range (never narrows it) so that every value label (above a bar, above
// a scatter point) and marker lies inside the plot area at the chart's present size; the views
// call it whenever the plot area changes.
void keep_value_labels_inside(QChart* chart);

// One chart's PNG, rendered off screen at size; takes (and deletes) the chart.
Status save_chart_png(QChart* chart, const QString& path, QSize size = QSize(900, 560));
#endif
inline constexpr const char* kParetoChartName = "pareto-perplexity-vs-bytes";
inline constexpr const char* kParetoBitsChartName = "pareto-bits-per-byte-vs-bytes";
// The scatter's name: it plots bits per byte when the entries' tokenizers differ.
inline const char* pareto_chart_name(const CompareReport& report) {
    return compare_quality_metric(report) == CompareMetric::BitsPerByte ? kParetoBitsChartName : kParetoChartName;
}

// The charts page: the scatter first, then a bar chart per metric, in a scrolling grid; a report
// with nothing to chart shows a "no data" note instead (chartNames() and savePngs() are then
// empty). The results page above it says why bits per byte ranks (compare_quality_note), when it does.
class CompareChartsWidget : public QWidget {
    Q_OBJECT
public:
    explicit CompareChartsWidget(QWidget* parent = nullptr);
    void setReport(const CompareReport& report);
    // Names of the charts shown (pareto_chart_name, then the metric keys).
    QStringList chartNames() const;
    // One PNG per chart in folder (NAME.png); the paths written, or the first error.
    Result<QStringList> savePngs(const QString& folder) const;

private:
    void clear();
    CompareReport report_;
    QWidget* grid_ = nullptr;
    QWidget* noData_ = nullptr;  // the note shown instead of charts when the report has none
    std::vector<std::pair<QString, QWidget*>> views_;  // [charts] name, its view
};

} // namespace cflow::ui
