#include "cflow/ui/compare_charts.h"

#include <algorithm>

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
    auto* set = new QBarSet(qt(compare_metric_label(metric)));
    QStringList categories;
    double max_value = 0;
    for (size_t i = 0; i < report.rows.size(); ++i) {
        const auto value = report.rows[i].value(metric);
        if (!value) continue;
        *set << *value;
        categories << short_name(i, report.rows[i].displayName);
        max_value = std::max(max_value, *value);
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
    series->setLabelsPrecision(max_value >= 1e4 ? 9 : 6);
    set->setLabelColor(Qt::black);  // the default white vanishes above the bars
    chart->addSeries(series);
    auto* x = new QBarCategoryAxis;
    x->append(categories);
    chart->addAxis(x, Qt::AlignBottom);
    series->attachAxis(x);
    auto* y = new QValueAxis;
    // Whole numbers for the byte counts (millions read badly as 1.5e+06), 4 figures otherwise.
    y->setLabelFormat(max_value >= 1e4 ? QStringLiteral("%.0f") : QStringLiteral("%.4g"));
    chart->addAxis(y, Qt::AlignLeft);
    series->attachAxis(y);
    y->setRange(0, max_value > 0 ? max_value * 1.15 : 1);  // after attaching, which fits the range to the bars
    chart->setTitle(qt(compare_metric_label(metric)) +
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
