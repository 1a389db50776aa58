// The Qt Charts renderer's share of issue 39: it reads the same chart data as the painter
// (compare_charts_data.h), so a NaN is left out of it too, and its page says "No data" when
// nothing can be charted. The rest of its tests are in compare_wizard_test.cpp.
#include <limits>

#include <QLabel>
#include <QtCharts/QBarSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QChart>
#include <QtCharts/QScatterSeries>

#include <gtest/gtest.h>

#include "cflow/ui/compare_charts.h"

namespace {

using namespace cflow;
using namespace cflow::ui;

CompareReport qtcharts_nan_report() {
    CompareReport r;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double decode[3] = {10.0, nan, 30.0};
    const double perplexity[3] = {5.0, 6.0, nan};
    for (int i = 0; i < 3; ++i) {
        CompareRow row;
        row.displayName = "entry " + std::to_string(i);
        row.values[size_t(CompareMetric::DecodeTokPerS)] = decode[i];
        row.values[size_t(CompareMetric::Perplexity)] = perplexity[i];
        row.values[size_t(CompareMetric::BytesPerToken)] = 1.0e6 * (i + 1);
        r.rows.push_back(row);
    }
    return r;
}

TEST(CompareChartsQtCharts, NaNValuesAreLeftOutLikeMissingOnes) {
    const CompareReport report = qtcharts_nan_report();
    std::unique_ptr<QChart> decode(make_metric_chart(report, CompareMetric::DecodeTokPerS));
    ASSERT_TRUE(decode);
    auto* bars = qobject_cast<QBarSeries*>(decode->series().front());
    ASSERT_TRUE(bars);
    ASSERT_EQ(bars->barSets().front()->count(), 2);
    EXPECT_DOUBLE_EQ(bars->barSets().front()->at(1), 30.0);
    std::unique_ptr<QChart> scatter(make_pareto_chart(report));
    ASSERT_TRUE(scatter);
    int points = 0;
    for (QAbstractSeries* s : scatter->series()) points += qobject_cast<QScatterSeries*>(s) ? 1 : 0;
    EXPECT_EQ(points, 2);  // entry 2's perplexity is NaN
}

TEST(CompareChartsQtCharts, APageWithNothingToChartSaysNoData) {
    CompareChartsWidget widget;
    widget.resize(800, 600);
    widget.setReport(CompareReport{});
    auto* note = widget.findChild<QLabel*>(QStringLiteral("compareChartsNoData"));
    ASSERT_TRUE(note);
    EXPECT_TRUE(note->isVisibleTo(&widget));
    EXPECT_TRUE(note->text().startsWith(QStringLiteral("No data"))) << note->text().toStdString();
    EXPECT_TRUE(widget.chartNames().isEmpty());
    widget.setReport(qtcharts_nan_report());
    EXPECT_FALSE(widget.chartNames().isEmpty());
    EXPECT_FALSE(note->isVisibleTo(&widget));
}

} // namespace
