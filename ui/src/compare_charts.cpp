#include "cflow/ui/compare_charts.h"

#include <algorithm>
#include <cmath>

#include <QApplication>
#include <QDir>
#include <QGridLayout>
#include <QScrollArea>
#include <QVBoxLayout>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>

#include "cflow/ui/compare_results_model.h"
#include "qt_text.h"

namespace cflow::ui {
namespace {


// Long entry names would squeeze the bars: the axis shows "1: name…" elided.
QString short_name(size_t index, const std::string& name) {
    QString n = QString::fromStdString(name);
    if (n.size() > 28) n = n.left(27) + u'…';
    return QStringLiteral("%1: %2").arg(index + 1).arg(n);
}

// Bytes per token on the scatter's x axis in MiB, like B_naive / B_critical.
constexpr double kMiB = 1024.0 * 1024.0;

QChartView* make_view(QChart* chart, QWidget* parent) {
    auto* view = new QChartView(chart, parent);
    view->setRenderHint(QPainter::Antialiasing);
    view->setMinimumSize(420, 300);
    return view;
}

// Byte counts in KiB or MiB and shares in percent, so that an axis reads "2.4 MiB", not 2500000
// (issue 37: ticks like 484435 and bar labels like 12333.1318).
struct ChartUnit {
    double divisor = 1;
    QString suffix;  // "" = the metric's own unit, already in its label
};

bool is_byte_metric(CompareMetric metric) {
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

ChartUnit unit_for(CompareMetric metric, double max_value) {
    if (is_byte_metric(metric)) {
        if (max_value >= kMiB) return {kMiB, QObject::tr("MiB")};
        if (max_value >= 1024) return {1024, QObject::tr("KiB")};
        return {1, QObject::tr("bytes")};
    }
    if (metric == CompareMetric::Top1Agreement || metric == CompareMetric::ExpertWaitShare) return {0.01, QObject::tr("%")};
    return {};
}

// Significant digits that show a value's whole part and, below 1000, a decimal or two.
int label_precision(double max_value) {
    const int whole_digits = max_value >= 1 ? int(std::floor(std::log10(max_value))) + 1 : 1;
    return std::max(3, whole_digits);
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

QChart* make_metric_chart(const CompareReport& report, CompareMetric metric) {
    double raw_max = 0;
    for (const CompareRow& row : report.rows)
        if (const auto value = row.value(metric)) raw_max = std::max(raw_max, *value);
    const ChartUnit unit = unit_for(metric, raw_max);
    const QString label = qt(compare_metric_label(metric)) + (unit.suffix.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(unit.suffix));
    auto* set = new QBarSet(label);
    QStringList categories;
    double max_value = 0;
    for (size_t i = 0; i < report.rows.size(); ++i) {
        const auto value = report.rows[i].value(metric);
        if (!value) continue;
        *set << *value / unit.divisor;
        categories << short_name(i, report.rows[i].displayName);
        max_value = std::max(max_value, *value / unit.divisor);
    }
    if (categories.isEmpty()) {
        delete set;
        return nullptr;
    }
    auto* chart = new QChart;
    auto* series = new QBarSeries;
    series->append(set);
    series->setLabelsVisible(true);
    series->setLabelsPosition(QAbstractBarSeries::LabelsOutsideEnd);
    series->setLabelsFormat(QStringLiteral("@value"));
    series->setLabelsPrecision(label_precision(max_value));
    set->setLabelColor(Qt::black);  // the default white vanishes above the bars
    chart->addSeries(series);
    auto* x = new QBarCategoryAxis;
    x->append(categories);
    chart->addAxis(x, Qt::AlignBottom);
    series->attachAxis(x);
    auto* y = new QValueAxis;
    if (!unit.suffix.isEmpty()) y->setTitleText(unit.suffix);
    chart->addAxis(y, Qt::AlignLeft);
    series->attachAxis(y);
    // After attaching (which fits the range to the bars): room for the labels above the bars,
    // then ticks at 1, 2 or 5 times a power of ten.
    y->setRange(0, max_value > 0 ? max_value * 1.15 : 1);
    y->applyNiceNumbers();
    const double step = (y->max() - y->min()) / std::max(1, y->tickCount() - 1);
    const int decimals = step >= 1 ? 0 : std::min(6, int(std::ceil(-std::log10(step))));
    y->setLabelFormat(QStringLiteral("%.") + QString::number(decimals) + QStringLiteral("f"));
    chart->setTitle(label +
                    (compare_metric_higher_is_better(metric) ? QObject::tr(" (higher is better)") : QObject::tr(" (lower is better)")));
    chart->legend()->hide();
    return chart;
}

QChart* make_pareto_chart(const CompareReport& report) {
    std::vector<ParetoPoint> points;
    std::vector<size_t> rows;
    for (size_t i = 0; i < report.rows.size(); ++i) {
        const auto bytes = report.rows[i].value(CompareMetric::BytesPerToken);
        const auto ppl = report.rows[i].value(CompareMetric::Perplexity);
        if (!bytes || !ppl) continue;
        points.push_back({*bytes / kMiB, *ppl});
        rows.push_back(i);
    }
    if (points.empty()) return nullptr;
    auto* chart = new QChart;
    chart->setTitle(QObject::tr("Perplexity against bytes per token (lower left is better; line: Pareto front)"));
    auto* x = new QValueAxis;
    auto* y = new QValueAxis;
    x->setTitleText(QObject::tr("weight bytes read per decoded token (MiB)"));
    y->setTitleText(QObject::tr("perplexity"));
    x->setLabelFormat(QStringLiteral("%.3f"));
    y->setLabelFormat(QStringLiteral("%.2f"));
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
    for (size_t i : pareto_front(points)) front->append(points[i].x, points[i].y);
    chart->addSeries(front);
    front->attachAxis(x);
    front->attachAxis(y);
    for (size_t k = 0; k < points.size(); ++k) {
        auto* s = new QScatterSeries;
        s->setName(short_name(rows[k], report.rows[rows[k]].displayName));
        s->setMarkerSize(12);
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
    chart->legend()->setAlignment(Qt::AlignBottom);
    return chart;
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
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
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
    auto add = [&](const QString& name, QChart* chart) {
        if (!chart) return;
        auto* view = make_view(chart, grid_);
        view->setObjectName(QStringLiteral("compareChart_") + name);
        // The scatter spans both columns of the first row; bars go two to a row below it.
        if (name == QLatin1String(kParetoChartName)) {
            grid->addWidget(view, 0, 0, 1, 2);
        } else {
            grid->addWidget(view, 1 + bars / 2, bars % 2);
            ++bars;
        }
        views_.emplace_back(name, view);
    };
    add(QString::fromLatin1(kParetoChartName), make_pareto_chart(report));
    for (size_t m = 0; m < kCompareMetricCount; ++m)
        add(qt(compare_metric_key(CompareMetric(m))), make_metric_chart(report, CompareMetric(m)));
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
        QChart* chart = name == QLatin1String(kParetoChartName)
                            ? make_pareto_chart(report_)
                            : make_metric_chart(report_, *parse_compare_metric(name.toStdString()));
        const QString path = QDir(folder).filePath(name + QStringLiteral(".png"));
        if (Status s = save_chart_png(chart, path); !s) return s.take_error();
        written << path;
    }
    return written;
}

} // namespace cflow::ui
