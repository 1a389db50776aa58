#pragma once
// The comparison's charts, drawn with Qt Charts (they are built once per finished run, so its
// scene cost does not matter here, unlike the 30 Hz inspector): a bar chart per measured metric
// and the perplexity against bytes-per-token scatter with its Pareto front (the paper's
// Fig. 4.1 shape). Each chart can be saved as a PNG at a fixed size.
// A build without Qt Charts (CFLOW_HAVE_QT_CHARTS unset: the Windows cross build when Qt Charts could
// not be built, ui/CMakeLists.txt) has only CompareChartsWidget, which then says so and draws nothing.
#include <vector>

#include <QString>
#include <QStringList>
#include <QWidget>

#include "cflow/base/result.h"
#include "cflow/engine/compare/comparison.h"

class QChart;
class QChartView;

namespace cflow::ui {

#ifdef CFLOW_HAVE_QT_CHARTS
struct ParetoPoint {
    double x = 0;  // cost (bytes per token): lower is better
    double y = 0;  // loss (perplexity): lower is better
};
// Indices of the points no other point beats on both axes (ties kept once), by ascending x.
std::vector<size_t> pareto_front(const std::vector<ParetoPoint>& points);

// A bar per entry that has the metric; nullptr when none has it.
QChart* make_metric_chart(const CompareReport& report, CompareMetric metric);
// Entries with both perplexity and bytes per token, one scatter series each, and the Pareto line;
// nullptr when fewer than one entry has both.
QChart* make_pareto_chart(const CompareReport& report);

// One chart's PNG, rendered off screen at size; takes (and deletes) the chart.
Status save_chart_png(QChart* chart, const QString& path, QSize size = QSize(900, 560));
#endif
inline constexpr const char* kParetoChartName = "pareto-perplexity-vs-bytes";

// The charts page: the scatter first, then a bar chart per metric, in a scrolling grid (without Qt
// Charts: a note that this build has none; chartNames() and savePngs() are then empty).
class CompareChartsWidget : public QWidget {
    Q_OBJECT
public:
    explicit CompareChartsWidget(QWidget* parent = nullptr);
    void setReport(const CompareReport& report);
    // Names of the charts shown ("pareto-perplexity-vs-bytes", then the metric keys).
    QStringList chartNames() const;
    // One PNG per chart in folder (NAME.png); the paths written, or the first error.
    Result<QStringList> savePngs(const QString& folder) const;

private:
    void clear();
    CompareReport report_;
    QWidget* grid_ = nullptr;
    std::vector<std::pair<QString, QChartView*>> views_;
};

} // namespace cflow::ui
