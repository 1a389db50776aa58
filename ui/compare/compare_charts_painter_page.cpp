// CompareChartsWidget for a build without Qt Charts (CFLOW_COMPARE_CHARTS=painter, ui/CMakeLists.txt
// builds this file instead of compare_charts.cpp): the same page, chart names and PNG files as the
// Qt Charts one, drawn by PaintedCompareChart. Tested on Linux in cflow_ui_painter_charts_tests,
// which builds this file without the Qt Charts one (tests/ui/CMakeLists.txt).
#include "cflow/ui/compare_charts.h"

#include <QDir>
#include <QGridLayout>
#include <QLabel>
#include <QScrollArea>
#include <QVBoxLayout>

#include "cflow/ui/compare_charts_painter.h"
#include "qt_text.h"

namespace cflow::ui {

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
    auto add = [&](const QString& name, std::optional<CompareMetric> metric) {
        auto* view = new PaintedCompareChart(report, metric, grid_);
        if (!view->hasData()) {
            delete view;  // as the Qt Charts page: a metric no entry has gets no chart
            return;
        }
        view->setObjectName(QStringLiteral("compareChart_") + name);
        view->setToolTip(QString());  // hover texts come from toolTipAt
        // The scatter spans both columns of the first row; bars go two to a row below it.
        if (!metric) {
            grid->addWidget(view, 0, 0, 1, 2);
        } else {
            grid->addWidget(view, 1 + bars / 2, bars % 2);
            ++bars;
        }
        views_.emplace_back(name, view);
    };
    add(QString::fromLatin1(pareto_chart_name(report)), std::nullopt);
    for (size_t m = 0; m < kCompareMetricCount; ++m) add(qt(compare_metric_key(CompareMetric(m))), CompareMetric(m));
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
        // At the PNG's own size, whatever the view's on screen.
        const QString path = QDir(folder).filePath(name + QStringLiteral(".png"));
        if (Status s = static_cast<const PaintedCompareChart*>(view)->savePng(path); !s) return s.take_error();
        written << path;
    }
    return written;
}

} // namespace cflow::ui
