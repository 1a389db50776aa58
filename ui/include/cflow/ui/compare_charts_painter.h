#pragma once
// The comparison's charts painted with QPainter, for builds without Qt Charts (the Windows cross
// build): the same data and titles as the Qt Charts renderer (compare_charts_data.h), the
// inspector's colours and round axis steps (ui/charts/chart_colors.h, nice_scale.h). Painted in
// one pass on demand: a comparison chart changes only when a run finishes, so nothing is cached.
// Geometry is a pure function of the size asked for, so a PNG at 900 x 560 lays out as a view of
// that size would, and tests can ask where a bar or point lands.
#include <optional>
#include <vector>

#include <QImage>
#include <QPointF>
#include <QPolygonF>
#include <QRectF>
#include <QString>
#include <QStringList>
#include <QWidget>

#include "cflow/base/result.h"
#include "cflow/engine/compare/comparison.h"
#include "cflow/ui/compare_charts_data.h"

class QPainter;

namespace cflow::ui {

// The PNG size of an exported chart, as the Qt Charts renderer writes it.
inline constexpr QSize kCompareChartPngSize{900, 560};

// One axis's round range and ticks.
struct PaintedAxis {
    double min = 0;
    double max = 1;
    double step = 0.2;  // between ticks
    int decimals = 1;   // of the tick labels: enough to tell ticks apart, none on whole steps
    QStringList tickLabels() const;
};

// The layout of a chart at one size (all in pixels of that size).
struct PaintedChartLayout {
    QRectF title;
    QRectF plot;
    QRectF legend;   // scatter only: below the x axis title
    PaintedAxis y;
    PaintedAxis x;   // scatter only (the bars' x axis is the entries)
};

// A bar chart of one metric (metric set) or the quality-against-bytes scatter with its Pareto
// line (metric nullopt). A chart without data (no entry has the value) paints "No data".
class PaintedCompareChart : public QWidget {
public:
    PaintedCompareChart(const CompareReport& report, std::optional<CompareMetric> metric, QWidget* parent = nullptr);

    bool hasData() const { return bars_.has_value() || scatter_.has_value(); }
    bool isScatter() const { return !metric_.has_value(); }
    QString title() const;
    // Axis titles as painted, with their units: the bars' value axis is the metric's label with
    // its unit ("Bytes/token (MiB)", "Decode (tok/s)"); the bars' entry axis has none ("").
    QString xAxisTitle() const;
    QString yAxisTitle() const;
    // Entries drawn (bars or points), in drawing order.
    int itemCount() const;
    // The legend's entries (scatter: "Pareto front", then each point's name; bars: none).
    QStringList legendLabels() const;

    PaintedChartLayout layout(QSize size) const;
    // Where bar i (0-based, drawing order) stands, and where point i's centre is, at size.
    QRectF barRect(int bar, QSize size) const;
    QPointF pointPosition(int point, QSize size) const;
    // The Pareto line's vertices at size: the front's points by ascending bytes.
    QPolygonF frontLine(QSize size) const;

    // The whole chart at size: in the palette's colours on screen, black on white for a PNG
    // (printColours), as the Qt Charts renderer's light theme is whatever the desktop's palette.
    void paintChart(QPainter& p, QSize size, bool printColours) const;
    QImage image(QSize size = kCompareChartPngSize) const;
    // The chart as a PNG at size, written to a temporary file and renamed into place.
    Status savePng(const QString& path, QSize size = kCompareChartPngSize) const;

    // The hover text at a point of the widget: the entry's whole name and exact value(s) with
    // units; "" where no entry is.
    QString toolTipAt(QPoint pos) const;

    QSize sizeHint() const override { return {640, 400}; }
    QSize minimumSizeHint() const override { return {420, 300}; }

    // Marker size of the scatter's points and colours, exposed for the pixel tests.
    static constexpr qreal kMarkerDiameterPx = 12;
    static QColor barColour();
    static QColor pointColour(int point);
    static QColor frontColour();

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

private:
    QRectF barRectIn(const PaintedChartLayout& l, int bar) const;
    QPointF pointIn(const PaintedChartLayout& l, int point) const;
    void paintBars(QPainter& p, const PaintedChartLayout& l, const QColor& text) const;
    void paintScatter(QPainter& p, const PaintedChartLayout& l, const QColor& text, const QColor& grid) const;
    qreal legendHeight(qreal width) const;

    CompareReport report_;
    std::optional<CompareMetric> metric_;
    std::optional<CompareBarChartData> bars_;
    std::optional<CompareScatterChartData> scatter_;
};

} // namespace cflow::ui
