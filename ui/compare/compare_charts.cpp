#include "cflow/ui/compare_charts.h"

#include <algorithm>
#include <cmath>

#include <QApplication>
#include <QDir>
#include <QGridLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QScrollArea>
#include <QToolTip>
#include <QVBoxLayout>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>

#include "cflow/ui/compare_results_model.h"
#include "qt_text.h"

namespace cflow::ui {
namespace {

// Decimals of a value axis's tick labels: none on whole steps, else enough to tell ticks apart.
void compare_tick_decimals(QValueAxis* axis) {
    const double step = (axis->max() - axis->min()) / std::max(1, axis->tickCount() - 1);
    const int decimals = step >= 1 || step <= 0 ? 0 : std::min(6, int(std::ceil(-std::log10(step) - 1e-9)));
    axis->setLabelFormat(QStringLiteral("%.") + QString::number(decimals) + QStringLiteral("f"));
}

constexpr qreal kChartMarkerSize = 12;  // scatter markers, px
constexpr qreal kChartLabelGap = 3;     // px between a value label and what it labels

// Pixels a value label needs above what it labels, in the series' label font.
qreal compare_value_label_height(const QFont& font) { return QFontMetricsF(font).height() + kChartLabelGap; }

// The narrowest range containing [lo, hi] that puts data [d0, d1] at least before_px from its low
// edge and after_px from its high edge on an axis plot_px long. The low edge stays >= 0 when d0 is
// (bytes and losses are never negative; a point at 0 then sits on the axis).
std::pair<double, double> compare_padded_range(double lo, double hi, double d0, double d1, qreal before_px, qreal after_px, qreal plot_px) {
    if (plot_px <= 0 || (before_px + after_px) / plot_px >= 0.9) return {lo, hi};  // too small a plot to fit labels in at all
    double low = lo, high = hi;
    // Each pass widens by at most 0.9 of the last one's widening: a fixed point in a few dozen.
    for (int pass = 0; pass < 200; ++pass) {
        const double range = high - low;
        double next_low = std::min(low, d0 - before_px / plot_px * range);
        if (d0 >= 0) next_low = std::min(low, std::max(0.0, next_low));
        const double next_high = std::max(high, d1 + after_px / plot_px * range);
        const bool settled = next_high - high <= 1e-9 * range && low - next_low <= 1e-9 * range;
        low = next_low, high = next_high;
        if (settled) break;
    }
    return {low, high};
}

// Widens axis until data [d0, d1] has the room: nice numbers after each widening can take room
// back at the other end, so a few rounds.
void compare_widen_for_labels(QValueAxis* axis, double d0, double d1, qreal before_px, qreal after_px, qreal plot_px) {
    for (int round = 0; round < 4; ++round) {
        const auto [lo, hi] = compare_padded_range(axis->min(), axis->max(), d0, d1, before_px, after_px, plot_px);
        if (lo >= axis->min() && hi <= axis->max()) return;
        axis->setRange(lo, hi);
        axis->applyNiceNumbers();
        compare_tick_decimals(axis);
    }
}

} // namespace

QChart* make_metric_chart(const CompareReport& report, CompareMetric metric) {
    const std::optional<CompareBarChartData> data = compare_bar_chart_data(report, metric);
    if (!data) return nullptr;
    auto* set = new QBarSet(data->seriesLabel);
    for (double value : data->values) *set << value;
    auto* chart = new QChart;
    auto* series = new QBarSeries;
    series->append(set);
    series->setLabelsVisible(true);
    series->setLabelsPosition(QAbstractBarSeries::LabelsOutsideEnd);
    series->setLabelsFormat(QStringLiteral("@value"));
    series->setLabelsPrecision(data->labelPrecision);
    set->setLabelColor(Qt::black);  // the default white vanishes above the bars
    chart->addSeries(series);
    auto* x = new QBarCategoryAxis;
    x->append(data->categories);
    chart->addAxis(x, Qt::AlignBottom);
    series->attachAxis(x);
    auto* y = new QValueAxis;
    if (!data->valueAxisTitle.isEmpty()) y->setTitleText(data->valueAxisTitle);
    chart->addAxis(y, Qt::AlignLeft);
    series->attachAxis(y);
    // After attaching (which fits the range to the bars): room for the labels above the bars,
    // then ticks at 1, 2 or 5 times a power of ten.
    y->setRange(0, data->maxValue > 0 ? data->maxValue * 1.15 : 1);
    y->applyNiceNumbers();
    compare_tick_decimals(y);
    chart->setTitle(data->title);
    chart->legend()->hide();
    return chart;
}

QChart* make_pareto_chart(const CompareReport& report) {
    const std::optional<CompareScatterChartData> data = compare_scatter_chart_data(report);
    if (!data) return nullptr;
    const std::vector<ParetoPoint>& points = data->points;
    const std::vector<size_t>& rows = data->rows;
    auto* chart = new QChart;
    chart->setTitle(data->title);
    auto* x = new QValueAxis;
    auto* y = new QValueAxis;
    x->setTitleText(data->xAxisTitle);
    y->setTitleText(data->yAxisTitle);
    double x0 = points[0].x, x1 = points[0].x, y0 = points[0].y, y1 = points[0].y;
    for (const ParetoPoint& p : points) {
        x0 = std::min(x0, p.x), x1 = std::max(x1, p.x), y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
    }
    const double dx = std::max((x1 - x0) * 0.15, std::max(x1 * 0.05, 1e-6));
    const double dy = std::max((y1 - y0) * 0.15, std::max(y1 * 0.05, 1e-6));
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    auto* front = new QLineSeries;
    front->setName(QObject::tr("Pareto front"));
    front->setPointsVisible(true);  // a front of one point is still seen
    for (size_t i : data->front) front->append(points[i].x, points[i].y);
    chart->addSeries(front);
    front->attachAxis(x);
    front->attachAxis(y);
    for (size_t k = 0; k < points.size(); ++k) {
        auto* s = new QScatterSeries;
        s->setName(data->names[qsizetype(k)]);
        s->setMarkerSize(kChartMarkerSize);
        s->append(points[k].x, points[k].y);
        s->setPointLabelsVisible(true);
        s->setPointLabelsFormat(QStringLiteral("%1").arg(rows[k] + 1));
        chart->addSeries(s);
        s->attachAxis(x);
        s->attachAxis(y);
    }
    // After every series is attached (attaching refits the axes to the data).
    x->setRange(std::max(0.0, x0 - dx), x1 + dx);
    y->setRange(std::max(0.0, y0 - dy), y1 + dy);
    x->applyNiceNumbers();
    y->applyNiceNumbers();
    compare_tick_decimals(x);
    compare_tick_decimals(y);
    chart->legend()->setAlignment(Qt::AlignBottom);
    // The legend's names are elided like the axis labels: hovering one gives the whole name.
    for (QAbstractSeries* series : chart->series()) {
        const auto* scatter = qobject_cast<QScatterSeries*>(series);
        if (!scatter) continue;
        const size_t row = size_t(scatter->name().section(u':', 0, 0).toInt() - 1);
        const QString full = row < report.rows.size() ? QString::fromStdString(report.rows[row].displayName) : QString();
        for (QLegendMarker* marker : chart->legend()->markers(series))
            QObject::connect(marker, &QLegendMarker::hovered, marker, [full](bool over) {
                if (over) QToolTip::showText(QCursor::pos(), full);
                else QToolTip::hideText();
            });
    }
    return chart;
}

void keep_value_labels_inside(QChart* chart) {
    if (!chart) return;
    const QRectF plot = chart->plotArea();
    if (plot.height() <= 0 || plot.width() <= 0 || chart->series().isEmpty()) return;
    const auto vertical = chart->axes(Qt::Vertical);
    const auto horizontal = chart->axes(Qt::Horizontal);
    auto* y = vertical.isEmpty() ? nullptr : qobject_cast<QValueAxis*>(vertical.front());
    if (!y) return;
    if (auto* bars = qobject_cast<QBarSeries*>(chart->series().front())) {
        // Labels stand on the bars' ends: the tallest needs a label's height above it.
        double top = 0;
        QFont font;
        for (QBarSet* set : bars->barSets()) {
            font = set->labelFont();
            for (int i = 0; i < set->count(); ++i) top = std::max(top, set->at(i));
        }
        compare_widen_for_labels(y, 0, top, 0, compare_value_label_height(font), plot.height());
        return;
    }
    auto* x = horizontal.isEmpty() ? nullptr : qobject_cast<QValueAxis*>(horizontal.front());
    if (!x) return;
    // Scatter: a marker around each point, its label above it.
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    qreal label_width = 0;
    QFont font;
    for (QAbstractSeries* series : chart->series()) {
        auto* points = qobject_cast<QScatterSeries*>(series);
        if (!points) continue;
        font = points->pointLabelsFont();
        label_width = std::max(label_width, QFontMetricsF(font).horizontalAdvance(points->pointLabelsFormat()));
        for (const QPointF& p : points->points()) {
            x0 = std::min(x0, p.x()), x1 = std::max(x1, p.x()), y0 = std::min(y0, p.y()), y1 = std::max(y1, p.y());
        }
    }
    if (x0 > x1) return;
    const qreal half_marker = kChartMarkerSize / 2 + 1;
    const qreal side = std::max(half_marker, label_width / 2 + 1);
    compare_widen_for_labels(y, y0, y1, half_marker, half_marker + compare_value_label_height(font), plot.height());
    compare_widen_for_labels(x, x0, x1, side, side, plot.width());
}

CompareChartView::CompareChartView(QChart* chart, CompareReport report, std::optional<CompareMetric> metric, QWidget* parent)
    : QChartView(chart, parent), report_(std::move(report)), metric_(metric), rows_(charted_rows(report_, metric)) {
    setRenderHint(QPainter::Antialiasing);
    setMinimumSize(420, 300);
    setMouseTracking(true);
    // The axes only widen, so this settles after a layout or two.
    QObject::connect(chart, &QChart::plotAreaChanged, this, [chart] { keep_value_labels_inside(chart); });
}

QString CompareChartView::toolTipAt(QPoint viewPos) const {
    QChart* c = chart();
    if (!c || c->series().isEmpty()) return {};
    const QPointF at = c->mapFromScene(mapToScene(viewPos));
    const QRectF plot = c->plotArea();
    auto name = [&](size_t row) { return QString::fromStdString(report_.rows[row].displayName); };
    auto line = [&](size_t row, CompareMetric m) {
        const auto value = report_.rows[row].value(m);
        return value ? QStringLiteral("\n%1: %2").arg(qt(compare_metric_label(m)), metric_value_text(m, *value)) : QString();
    };
    if (metric_) {
        // A bar's column, from the plot's top down through the axis labels under it.
        const qreal label_rows = 3 * QFontMetricsF(font()).height();
        if (at.x() < plot.left() || at.x() > plot.right() || at.y() < plot.top() || at.y() > plot.bottom() + label_rows) return {};
        const double category = c->mapToValue(at, c->series().front()).x();
        const long k = std::lround(category);
        if (k < 0 || size_t(k) >= rows_.size()) return {};
        return name(rows_[size_t(k)]) + line(rows_[size_t(k)], *metric_);
    }
    // The scatter: the point under the pointer (within its marker and a little).
    const CompareMetric quality = compare_quality_metric(report_);
    for (QAbstractSeries* series : c->series()) {
        auto* points = qobject_cast<QScatterSeries*>(series);
        if (!points || points->count() == 0) continue;
        const QPointF p = c->mapToPosition(points->at(0), points);
        if (std::hypot(p.x() - at.x(), p.y() - at.y()) > kChartMarkerSize / 2 + 4) continue;
        const size_t row = size_t(points->name().section(u':', 0, 0).toInt() - 1);
        if (row >= report_.rows.size()) continue;
        QString text = name(row) + line(row, CompareMetric::BytesPerToken) + line(row, quality);
        if (quality == CompareMetric::BitsPerByte)
            text += line(row, CompareMetric::Perplexity) + QObject::tr(" (per token of its own tokenizer)");
        return text;
    }
    return {};
}

bool CompareChartView::viewportEvent(QEvent* event) {
    if (event->type() == QEvent::ToolTip) {
        const auto* help = static_cast<QHelpEvent*>(event);
        const QString text = toolTipAt(help->pos());
        if (text.isEmpty()) QToolTip::hideText();
        else QToolTip::showText(help->globalPos(), text, viewport());
        return true;
    }
    return QChartView::viewportEvent(event);
}

Status save_chart_png(QChart* chart, const QString& path, QSize size) {
    if (!chart) return make_error("no chart to save");
    // A view of its own (which takes the chart), shown off screen so Qt Charts lays the scene
    // out at this size.
    QChartView view(chart);
    view.setRenderHint(QPainter::Antialiasing);
    view.setAttribute(Qt::WA_DontShowOnScreen);
    view.resize(size);
    view.show();
    QApplication::processEvents();
    keep_value_labels_inside(chart);  // at the PNG's size, as the views do on screen
    QApplication::processEvents();
    const bool saved = view.grab().save(path, "PNG");
    if (!saved) return make_error(QStringLiteral("%1: cannot write the PNG").arg(QDir::toNativeSeparators(path)).toStdString());
    return {};
}

CompareChartsWidget::CompareChartsWidget(QWidget* parent) : QWidget(parent) {
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    grid_ = new QWidget(scroll);
    grid_->setLayout(new QGridLayout);
    scroll->setWidget(grid_);
    auto* note = new QLabel(compare_charts_no_data_text(), this);
    note->setObjectName(QStringLiteral("compareChartsNoData"));
    note->setWordWrap(true);
    note->setAlignment(Qt::AlignCenter);
    noData_ = note;
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(noData_);
    layout->addWidget(scroll);
}

void CompareChartsWidget::clear() {
    for (auto& [name, view] : views_) delete view;
    views_.clear();
}

void CompareChartsWidget::setReport(const CompareReport& report) {
    clear();
    report_ = report;
    auto* grid = static_cast<QGridLayout*>(grid_->layout());
    int bars = 0;
    const QString pareto = QString::fromLatin1(pareto_chart_name(report));
    auto add = [&](const QString& name, QChart* chart, std::optional<CompareMetric> metric) {
        if (!chart) return;
        auto* view = new CompareChartView(chart, report, metric, grid_);
        view->setObjectName(QStringLiteral("compareChart_") + name);
        // The scatter spans both columns of the first row; bars go two to a row below it.
        if (!metric) {
            grid->addWidget(view, 0, 0, 1, 2);
        } else {
            grid->addWidget(view, 1 + bars / 2, bars % 2);
            ++bars;
        }
        views_.emplace_back(name, view);
    };
    add(pareto, make_pareto_chart(report), std::nullopt);
    for (size_t m = 0; m < kCompareMetricCount; ++m)
        add(qt(compare_metric_key(CompareMetric(m))), make_metric_chart(report, CompareMetric(m)), CompareMetric(m));
    noData_->setVisible(views_.empty());
}

QStringList CompareChartsWidget::chartNames() const {
    QStringList names;
    for (const auto& [name, view] : views_) names << name;
    return names;
}

Result<QStringList> CompareChartsWidget::savePngs(const QString& folder) const {
    if (!QDir().mkpath(folder))
        return make_error(QStringLiteral("%1: cannot create the folder").arg(QDir::toNativeSeparators(folder)).toStdString());
    QStringList written;
    for (const auto& [name, view] : views_) {
        // A fresh chart from the report: the one on screen keeps its size and scroll position.
        QChart* chart = name == QLatin1String(pareto_chart_name(report_))
                            ? make_pareto_chart(report_)
                            : make_metric_chart(report_, *parse_compare_metric(name.toStdString()));
        const QString path = QDir(folder).filePath(name + QStringLiteral(".png"));
        if (Status s = save_chart_png(chart, path); !s) return s.take_error();
        written << path;
    }
    return written;
}

} // namespace cflow::ui
