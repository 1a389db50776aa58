#include "cflow/ui/compare_charts_painter.h"

#include <algorithm>
#include <cmath>

#include <QDir>
#include <QEvent>
#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPath>
#include <QSaveFile>

#include "cflow/ui/compare_results_model.h"
#include "chart_colors.h"
#include "chart_widget.h"
#include "nice_scale.h"
#include "qt_text.h"

namespace cflow::ui {
namespace {

constexpr qreal kPaintedMarginPx = 8;
constexpr qreal kPaintedGapPx = 6;          // between tick labels, axis titles and the plot
constexpr qreal kPaintedLabelGapPx = 3;     // between a value label and what it labels
constexpr qreal kPaintedSwatchPx = 14;      // a legend entry's line or marker
constexpr qreal kPaintedLegendSpacingPx = 16;
constexpr int kPaintedTargetTicks = 5;

// Decimals that print every multiple of step exactly: 0 for whole steps, 2 for 0.25.
int painted_tick_decimals(double step) {
    for (int d = 0; d < 6; ++d) {
        const double scaled = step * std::pow(10.0, d);
        if (std::abs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) return d;
    }
    return 6;
}

// A round axis over data [d0, d1] that leaves lowPx below d0 and highPx above d1 on an axis
// lengthPx long; from zero when fromZero (bars), else padded like the Qt Charts scatter (15% of
// the spread, or 5% of the value for a single point). Never below 0 for non-negative data
// (bytes, losses and speeds are never negative; a point at 0 then sits on the axis).
PaintedAxis painted_value_axis(double d0, double d1, qreal lowPx, qreal highPx, qreal lengthPx, bool fromZero) {
    double lo = 0, hi = 0;
    if (fromZero) {
        lo = 0;
        hi = std::max(d1, 0.0);
    } else {
        const double pad = std::max((d1 - d0) * 0.15, std::max(std::abs(d1) * 0.05, 1e-6));
        lo = d0 - pad;
        hi = d1 + pad;
        if (d0 >= 0) lo = std::max(0.0, lo);
    }
    if (!(hi > lo)) hi = lo + 1;  // all zeros: a unit axis
    PaintedAxis axis;
    // Rounding to steps can leave too little room for a marker or label at either end; widening
    // by half a step moves that end out one step. A few rounds settle it.
    for (int round = 0; round < 8; ++round) {
        const double step = detail::nice_ceiling((hi - lo) / kPaintedTargetTicks);
        axis.step = step;
        axis.min = std::floor(lo / step + 1e-9) * step;
        axis.max = std::ceil(hi / step - 1e-9) * step;
        if (axis.max <= axis.min) axis.max = axis.min + step;
        if (lengthPx <= 0 || (lowPx + highPx) / lengthPx >= 0.9) break;  // too small to fit labels in at all
        const double pxPerUnit = lengthPx / (axis.max - axis.min);
        const bool highOk = (axis.max - d1) * pxPerUnit >= highPx;
        const bool lowOk = (d0 - axis.min) * pxPerUnit >= lowPx || (axis.min <= 0 && d0 >= 0);
        if (highOk && lowOk) break;
        if (!highOk) hi = axis.max + step / 2;
        if (!lowOk) lo = d0 >= 0 ? std::max(0.0, axis.min - step / 2) : axis.min - step / 2;
    }
    axis.decimals = painted_tick_decimals(axis.step);
    return axis;
}

struct PaintedColours {
    QColor background, text, grid, axis;
};

// Legend entries flowed into rows of width; rects relative to the legend's top left.
std::vector<QRectF> painted_legend_rects(const QStringList& labels, const QFontMetricsF& fm, qreal width) {
    std::vector<QRectF> rects;
    const qreal rowHeight = fm.height() + 4;
    qreal x = 0, y = 0;
    for (const QString& label : labels) {
        const qreal w = std::min(width, kPaintedSwatchPx + 4 + fm.horizontalAdvance(label));
        if (x > 0 && x + w > width) x = 0, y += rowHeight;
        rects.emplace_back(x, y, w, rowHeight);
        x += w + kPaintedLegendSpacingPx;
    }
    return rects;
}

QFont painted_title_font(QFont font) {
    font.setBold(true);
    if (font.pointSizeF() > 0) font.setPointSizeF(font.pointSizeF() * 1.15);
    return font;
}

double painted_y_px(const PaintedChartLayout& l, double v) {
    return l.plot.bottom() - (v - l.y.min) / (l.y.max - l.y.min) * l.plot.height();
}
double painted_x_px(const PaintedChartLayout& l, double v) {
    return l.plot.left() + (v - l.x.min) / (l.x.max - l.x.min) * l.plot.width();
}

QString painted_value_label(double value, int precision) { return QString::number(value, 'g', precision); }

} // namespace

QStringList PaintedAxis::tickLabels() const {
    QStringList labels;
    for (int i = 0;; ++i) {
        const double v = min + i * step;
        if (v > max + step * 1e-6 || i > 1000) break;
        QString text = QString::number(std::abs(v) < step * 1e-6 ? 0.0 : v, 'f', decimals);
        labels << text;
    }
    return labels;
}

PaintedCompareChart::PaintedCompareChart(const CompareReport& report, std::optional<CompareMetric> metric, QWidget* parent)
    : QWidget(parent), report_(report), metric_(metric) {
    if (metric_) bars_ = compare_bar_chart_data(report_, *metric_);
    else scatter_ = compare_scatter_chart_data(report_);
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);  // paintChart fills every pixel
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

QColor PaintedCompareChart::barColour() { return chart_colors::kCompute; }
QColor PaintedCompareChart::pointColour(int point) {
    return chart_colors::kStreams[size_t(point) % chart_colors::kStreams.size()];
}
QColor PaintedCompareChart::frontColour() { return chart_colors::kSpeedOfLight; }

QString PaintedCompareChart::title() const {
    if (bars_) return bars_->title;
    if (scatter_) return scatter_->title;
    return metric_ ? qt(compare_metric_label(*metric_)) : tr("Quality against bytes per token");
}

QString PaintedCompareChart::xAxisTitle() const { return scatter_ ? scatter_->xAxisTitle : QString(); }
QString PaintedCompareChart::yAxisTitle() const {
    if (bars_) return bars_->seriesLabel;
    return scatter_ ? scatter_->yAxisTitle : QString();
}

int PaintedCompareChart::itemCount() const {
    if (bars_) return int(bars_->values.size());
    return scatter_ ? int(scatter_->points.size()) : 0;
}

QStringList PaintedCompareChart::legendLabels() const {
    if (!scatter_) return {};
    return QStringList{tr("Pareto front")} + scatter_->names;
}

qreal PaintedCompareChart::legendHeight(qreal width) const {
    const QStringList labels = legendLabels();
    if (labels.isEmpty()) return 0;
    const std::vector<QRectF> rects = painted_legend_rects(labels, QFontMetricsF(font()), width);
    return rects.back().bottom();
}

PaintedChartLayout PaintedCompareChart::layout(QSize size) const {
    PaintedChartLayout l;
    const QFontMetricsF fm(font());
    const QFontMetricsF titleFm(painted_title_font(font()));
    const qreal w = size.width(), h = size.height();
    l.title = QRectF(kPaintedMarginPx, kPaintedMarginPx, std::max(0.0, w - 2 * kPaintedMarginPx), titleFm.height());
    const qreal top = l.title.bottom() + kPaintedGapPx + (scatter_ ? 0 : fm.height() / 2);
    qreal bottom = h - kPaintedMarginPx;
    const qreal legendH = legendHeight(std::max(1.0, w - 2 * kPaintedMarginPx));
    if (scatter_) {
        l.legend = QRectF(kPaintedMarginPx, bottom - legendH, w - 2 * kPaintedMarginPx, legendH);
        bottom -= legendH + kPaintedGapPx + 2 * (fm.height() + kPaintedGapPx);  // x tick labels, x title
    } else {
        bottom -= fm.height() + kPaintedGapPx;  // entry names under the bars
    }
    const qreal plotH = std::max(0.0, bottom - top);
    const qreal half = kMarkerDiameterPx / 2 + 1;
    const qreal labelH = fm.height() + kPaintedLabelGapPx;
    if (bars_) {
        l.y = painted_value_axis(0, bars_->maxValue, 0, labelH, plotH, true);
    } else if (scatter_) {
        double y0 = scatter_->points[0].y, y1 = y0;
        for (const ParetoPoint& p : scatter_->points) y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
        l.y = painted_value_axis(y0, y1, half, half + labelH, plotH, false);
    }
    qreal tickW = 0;
    for (const QString& label : l.y.tickLabels()) tickW = std::max(tickW, fm.horizontalAdvance(label));
    const qreal left = kPaintedMarginPx + fm.height() + kPaintedGapPx + tickW + kPaintedGapPx;
    // Room on the right for half of a last x tick label or a point's label.
    const qreal right = w - kPaintedMarginPx - (scatter_ ? fm.horizontalAdvance(QStringLiteral("0000")) : 8.0);
    l.plot = QRectF(QPointF(left, top), QPointF(std::max(left, right), std::max(top, bottom)));
    if (scatter_) {
        double x0 = scatter_->points[0].x, x1 = x0;
        for (const ParetoPoint& p : scatter_->points) x0 = std::min(x0, p.x), x1 = std::max(x1, p.x);
        const qreal labelW = fm.horizontalAdvance(QString::number(report_.rows.size())) / 2 + 1;
        l.x = painted_value_axis(x0, x1, std::max(half, labelW), std::max(half, labelW), l.plot.width(), false);
    }
    return l;
}

QRectF PaintedCompareChart::barRectIn(const PaintedChartLayout& l, int bar) const {
    if (!bars_ || bar < 0 || bar >= itemCount()) return {};
    const qreal slot = l.plot.width() / qreal(bars_->values.size());
    const qreal barW = std::min(slot * 0.6, 160.0);
    const qreal x = l.plot.left() + slot * (bar + 0.5) - barW / 2;
    // Metrics are never negative; a negative value (bad input) draws no bar rather than one below the axis.
    const qreal top = painted_y_px(l, std::max(0.0, bars_->values[size_t(bar)]));
    return QRectF(QPointF(x, top), QPointF(x + barW, l.plot.bottom()));
}

QPointF PaintedCompareChart::pointIn(const PaintedChartLayout& l, int point) const {
    if (!scatter_ || point < 0 || point >= itemCount()) return {};
    const ParetoPoint& p = scatter_->points[size_t(point)];
    return {painted_x_px(l, p.x), painted_y_px(l, p.y)};
}

QRectF PaintedCompareChart::barRect(int bar, QSize size) const { return barRectIn(layout(size), bar); }
QPointF PaintedCompareChart::pointPosition(int point, QSize size) const { return pointIn(layout(size), point); }

QPolygonF PaintedCompareChart::frontLine(QSize size) const {
    QPolygonF line;
    if (!scatter_) return line;
    const PaintedChartLayout l = layout(size);
    for (size_t i : scatter_->front) line << pointIn(l, int(i));
    return line;
}

void PaintedCompareChart::paintChart(QPainter& p, QSize size, bool printColours) const {
    const PaintedColours colours = printColours ? PaintedColours{Qt::white, Qt::black, QColor(0xdd, 0xdd, 0xdd), QColor(0x80, 0x80, 0x80)}
                                                : PaintedColours{palette().base().color(), palette().text().color(),
                                                                 palette().midlight().color(), palette().mid().color()};
    p.save();
    p.fillRect(QRect(QPoint(0, 0), size), colours.background);
    p.setRenderHint(QPainter::TextAntialiasing);
    p.setFont(font());
    const PaintedChartLayout l = layout(size);
    const QFont titleFont = painted_title_font(font());
    p.setFont(titleFont);
    p.setPen(colours.text);
    p.drawText(l.title, Qt::AlignHCenter | Qt::AlignVCenter, QFontMetricsF(titleFont).elidedText(title(), Qt::ElideRight, l.title.width()));
    p.setFont(font());
    const QFontMetricsF fm(font());
    if (!hasData()) {
        p.drawText(QRectF(0, l.title.bottom(), size.width(), size.height() - l.title.bottom()), Qt::AlignCenter,
                   tr("No data: no entry has this measurement."));
        p.restore();
        return;
    }
    if (l.plot.width() < 2 || l.plot.height() < 2) {
        p.restore();
        return;
    }
    // Horizontal grid and the value axis's ticks.
    const QStringList yTicks = l.y.tickLabels();
    for (int i = 0; i < yTicks.size(); ++i) {
        const qreal y = painted_y_px(l, l.y.min + i * l.y.step);
        p.setPen(QPen(i == 0 ? colours.axis : colours.grid, 0));
        p.drawLine(QPointF(l.plot.left(), y), QPointF(l.plot.right(), y));
        p.setPen(colours.text);
        p.drawText(QRectF(0, y - fm.height() / 2, l.plot.left() - kPaintedGapPx, fm.height()), Qt::AlignRight | Qt::AlignVCenter, yTicks[i]);
    }
    // The value axis's title, turned to read upwards along the axis.
    p.save();
    p.translate(kPaintedMarginPx, l.plot.center().y());
    p.rotate(-90);
    const QString yTitle = fm.elidedText(yAxisTitle(), Qt::ElideRight, l.plot.height());
    p.drawText(QRectF(-l.plot.height() / 2, 0, l.plot.height(), fm.height()), Qt::AlignCenter, yTitle);
    p.restore();
    p.setPen(QPen(colours.axis, 0));
    p.drawLine(l.plot.bottomLeft(), l.plot.topLeft());
    if (bars_) paintBars(p, l, colours.text);
    else paintScatter(p, l, colours.text, colours.grid);
    p.restore();
}

void PaintedCompareChart::paintBars(QPainter& p, const PaintedChartLayout& l, const QColor& text) const {
    const QFontMetricsF fm(font());
    const qreal slot = l.plot.width() / qreal(bars_->values.size());
    for (int i = 0; i < itemCount(); ++i) {
        // Bar edges are not antialiased: one solid colour, as the pixel tests and a printer see it.
        const QRectF bar = barRectIn(l, i);
        p.fillRect(bar, barColour());
        p.setPen(text);
        const QString value = painted_value_label(bars_->values[size_t(i)], bars_->labelPrecision);
        p.drawText(QRectF(bar.center().x() - slot / 2, bar.top() - kPaintedLabelGapPx - fm.height(), slot, fm.height()),
                   Qt::AlignHCenter | Qt::AlignBottom, value);
        const QString name = fm.elidedText(bars_->categories[i], Qt::ElideRight, slot - 4);
        p.drawText(QRectF(l.plot.left() + slot * i, l.plot.bottom() + kPaintedGapPx / 2, slot, fm.height()),
                   Qt::AlignHCenter | Qt::AlignTop, name);
    }
}

void PaintedCompareChart::paintScatter(QPainter& p, const PaintedChartLayout& l, const QColor& text, const QColor& grid) const {
    const QFontMetricsF fm(font());
    // Vertical grid and the bytes axis's ticks, then its title.
    const QStringList xTicks = l.x.tickLabels();
    for (int i = 0; i < xTicks.size(); ++i) {
        const qreal x = painted_x_px(l, l.x.min + i * l.x.step);
        if (i > 0) {
            p.setPen(QPen(grid, 0));
            p.drawLine(QPointF(x, l.plot.top()), QPointF(x, l.plot.bottom()));
        }
        p.setPen(text);
        const qreal w = fm.horizontalAdvance(xTicks[i]) + 8;
        p.drawText(QRectF(x - w / 2, l.plot.bottom() + kPaintedGapPx / 2, w, fm.height()), Qt::AlignCenter, xTicks[i]);
    }
    p.setPen(text);
    p.drawText(QRectF(l.plot.left(), l.plot.bottom() + fm.height() + kPaintedGapPx, l.plot.width(), fm.height()),
               Qt::AlignCenter, fm.elidedText(xAxisTitle(), Qt::ElideRight, l.plot.width()));

    p.setRenderHint(QPainter::Antialiasing);
    // The Pareto front under the markers, so each front point's marker sits on the line.
    const QPolygonF front = [&] {
        QPolygonF line;
        for (size_t i : scatter_->front) line << pointIn(l, int(i));
        return line;
    }();
    p.setPen(QPen(frontColour(), 2));
    p.drawPolyline(front);
    for (int k = 0; k < itemCount(); ++k) {
        const QPointF at = pointIn(l, k);
        p.setPen(QPen(pointColour(k).darker(140), 1));
        p.setBrush(pointColour(k));
        p.drawEllipse(at, kMarkerDiameterPx / 2, kMarkerDiameterPx / 2);
        p.setPen(text);
        const QString label = QString::number(scatter_->rows[size_t(k)] + 1);
        const qreal w = fm.horizontalAdvance(label) + 8;
        p.drawText(QRectF(at.x() - w / 2, at.y() - kMarkerDiameterPx / 2 - kPaintedLabelGapPx - fm.height(), w, fm.height()),
                   Qt::AlignHCenter | Qt::AlignBottom, label);
    }
    // The legend: the front's line, then each entry's marker and name.
    const QStringList labels = legendLabels();
    const std::vector<QRectF> rects = painted_legend_rects(labels, fm, l.legend.width());
    for (int i = 0; i < labels.size(); ++i) {
        const QRectF r = rects[size_t(i)].translated(l.legend.topLeft());
        const QPointF swatch(r.left() + kPaintedSwatchPx / 2, r.center().y());
        if (i == 0) {
            p.setPen(QPen(frontColour(), 2));
            p.drawLine(QPointF(r.left(), swatch.y()), QPointF(r.left() + kPaintedSwatchPx, swatch.y()));
        } else {
            p.setPen(QPen(pointColour(i - 1).darker(140), 1));
            p.setBrush(pointColour(i - 1));
            p.drawEllipse(swatch, kPaintedSwatchPx / 2 - 2, kPaintedSwatchPx / 2 - 2);
        }
        p.setPen(text);
        const QRectF textRect(r.left() + kPaintedSwatchPx + 4, r.top(), r.width() - kPaintedSwatchPx - 4, r.height());
        p.drawText(textRect, Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(labels[i], Qt::ElideRight, textRect.width()));
    }
}

QImage PaintedCompareChart::image(QSize size) const {
    QImage image(size, QImage::Format_RGB32);
    QPainter p(&image);
    paintChart(p, size, true);
    return image;
}

Status PaintedCompareChart::savePng(const QString& path, QSize size) const {
    const QString shown = QDir::toNativeSeparators(path);
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return make_error(QStringLiteral("%1: cannot write the PNG (%2)").arg(shown, file.errorString()).toStdString());
    if (!image(size).save(&file, "PNG")) {
        file.cancelWriting();
        return make_error(QStringLiteral("%1: cannot encode the PNG").arg(shown).toStdString());
    }
    if (!file.commit())
        return make_error(QStringLiteral("%1: cannot write the PNG (%2)").arg(shown, file.errorString()).toStdString());
    return {};
}

QString PaintedCompareChart::toolTipAt(QPoint pos) const {
    if (!hasData()) return {};
    const PaintedChartLayout l = layout(size());
    auto name = [&](size_t row) { return qt(report_.rows[row].displayName); };
    auto line = [&](size_t row, CompareMetric m) {
        const auto value = report_.rows[row].value(m);
        return value ? QStringLiteral("\n%1: %2").arg(qt(compare_metric_label(m)), metric_value_text(m, *value)) : QString();
    };
    if (bars_) {
        // A bar's column, from the plot's top down through the entry name under it.
        const qreal nameRows = 3 * QFontMetricsF(font()).height();
        if (pos.x() < l.plot.left() || pos.x() > l.plot.right() || pos.y() < l.plot.top() || pos.y() > l.plot.bottom() + nameRows)
            return {};
        const qreal slot = l.plot.width() / qreal(bars_->values.size());
        const int k = std::clamp(int((pos.x() - l.plot.left()) / slot), 0, itemCount() - 1);
        return name(bars_->rows[size_t(k)]) + line(bars_->rows[size_t(k)], *metric_);
    }
    // The scatter: the point under the pointer (within its marker and a little), the nearest first.
    int nearest = -1;
    qreal nearestPx = kMarkerDiameterPx / 2 + 4;
    for (int k = 0; k < itemCount(); ++k) {
        const QPointF at = pointIn(l, k);
        const qreal d = std::hypot(at.x() - pos.x(), at.y() - pos.y());
        if (d <= nearestPx) nearest = k, nearestPx = d;
    }
    if (nearest < 0) return {};
    const size_t row = scatter_->rows[size_t(nearest)];
    QString text = name(row) + line(row, CompareMetric::BytesPerToken) + line(row, scatter_->quality);
    if (scatter_->quality == CompareMetric::BitsPerByte)
        text += line(row, CompareMetric::Perplexity) + tr(" (per token of its own tokenizer)");
    return text;
}

void PaintedCompareChart::paintEvent(QPaintEvent*) {
    QPainter p(this);
    paintChart(p, size(), false);
}

bool PaintedCompareChart::event(QEvent* event) {
    if (detail::handle_tool_tip(this, event)) return true;
    return QWidget::event(event);
}

} // namespace cflow::ui
