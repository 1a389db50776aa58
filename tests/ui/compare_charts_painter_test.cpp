// The comparison charts' painter renderer (issue 39): what a build without Qt Charts (the Windows
// cross build) shows and exports. Built into cflow_ui_painter_charts_tests with the painter's
// CompareChartsWidget (tests/ui/CMakeLists.txt), on the offscreen platform.
#include <cmath>
#include <limits>
#include <set>

#include <QFile>
#include <QFileInfo>
#include <QFontMetricsF>
#include <QImage>
#include <QLabel>

#include <gtest/gtest.h>

#include "cflow/ui/compare_charts.h"
#include "cflow/ui/compare_charts_painter.h"
#include "test_support.h"

namespace {

using namespace cflow;
using namespace cflow::ui;

QString painter_test_path(const std::filesystem::path& p) { return QString::fromStdString(p.string()); }

CompareRow painter_test_row(const std::string& name, std::optional<double> decode, std::optional<double> perplexity,
                            std::optional<double> bytes) {
    CompareRow row;
    row.entry.modelPath = "/models/" + name + ".cflow";
    row.displayName = name;
    row.values[size_t(CompareMetric::DecodeTokPerS)] = decode;
    row.values[size_t(CompareMetric::Perplexity)] = perplexity;
    row.values[size_t(CompareMetric::BytesPerToken)] = bytes;
    return row;
}

// The Qt Charts suite's sample (compare_wizard_test.cpp): three entries, b and a on the front.
CompareReport painter_sample_report() {
    CompareReport r;
    r.rows.push_back(painter_test_row("a, \"quoted\"", 123.456789, 5.4321, 2.5e6));
    r.rows.push_back(painter_test_row("b|pipe", 98.7, 6.25, 1.25e6));
    r.rows.push_back(painter_test_row("c", 150.0, 7.5, 1.75e6));
    r.rows[0].values[size_t(CompareMetric::BCriticalMiB)] = 1.5;
    r.rows[2].values[size_t(CompareMetric::BCriticalMiB)] = 3.5;
    return r;
}

// Pixels of column x from fromY upwards that have exactly colour, up to the first that has not.
int painter_test_run_up(const QImage& image, int x, int fromY, const QColor& colour) {
    int run = 0;
    for (int y = fromY; y >= 0 && image.pixelColor(x, y) == colour; --y) ++run;
    return run;
}

int painter_test_colour_distance(const QColor& a, const QColor& b) {
    return std::abs(a.red() - b.red()) + std::abs(a.green() - b.green()) + std::abs(a.blue() - b.blue());
}

// The closest colour to want in the 5 x 5 pixels around at.
int painter_test_nearest_colour(const QImage& image, QPointF at, const QColor& want) {
    int best = 1000;
    for (int dy = -2; dy <= 2; ++dy)
        for (int dx = -2; dx <= 2; ++dx)
            best = std::min(best, painter_test_colour_distance(image.pixelColor(int(at.x()) + dx, int(at.y()) + dy), want));
    return best;
}

double painter_test_segment_distance(QPointF p, QPointF a, QPointF b) {
    const QPointF ab = b - a;
    const double len2 = QPointF::dotProduct(ab, ab);
    const double t = len2 > 0 ? std::clamp(QPointF::dotProduct(p - a, ab) / len2, 0.0, 1.0) : 0.0;
    const QPointF q = a + t * ab - p;
    return std::hypot(q.x(), q.y());
}

TEST(PaintedCompareCharts, BarsStandAtTheirValuesRelativeHeights) {
    const CompareReport report = painter_sample_report();
    for (CompareMetric metric : {CompareMetric::DecodeTokPerS, CompareMetric::BytesPerToken}) {
        PaintedCompareChart chart(report, metric);
        ASSERT_TRUE(chart.hasData());
        ASSERT_EQ(chart.itemCount(), 3);
        const QImage image = chart.image();
        ASSERT_EQ(image.size(), kCompareChartPngSize);
        const PaintedChartLayout layout = chart.layout(kCompareChartPngSize);
        std::vector<int> heights;
        for (int i = 0; i < 3; ++i) {
            const QRectF bar = chart.barRect(i, kCompareChartPngSize);
            const int x = int(bar.center().x());
            // From just above the axis line up to where the bar's colour stops.
            heights.push_back(painter_test_run_up(image, x, int(layout.plot.bottom()) - 1, PaintedCompareChart::barColour()));
            EXPECT_NEAR(heights.back(), bar.height(), 2.0) << "bar " << i;
            EXPECT_NE(image.pixelColor(x, int(bar.top()) - 3), PaintedCompareChart::barColour()) << "bar " << i << " ends at its value";
        }
        const double tallest = *std::max_element(heights.begin(), heights.end());
        const double maxValue = std::max({*report.rows[0].value(metric), *report.rows[1].value(metric), *report.rows[2].value(metric)});
        ASSERT_GT(tallest, 100) << "a bar chart, not a sliver";
        for (int i = 0; i < 3; ++i)
            EXPECT_NEAR(heights[size_t(i)] / tallest, *report.rows[size_t(i)].value(metric) / maxValue, 3.0 / tallest) << "bar " << i;
        // The tallest bar's value label fits inside the plot.
        const QRectF top = chart.barRect(int(std::max_element(heights.begin(), heights.end()) - heights.begin()), kCompareChartPngSize);
        EXPECT_GE(top.top() - QFontMetricsF(chart.font()).height() - 3, layout.plot.top() - 0.5);
    }
    // A metric only some entries have: a bar each for those (b has no B_critical).
    PaintedCompareChart partial(report, CompareMetric::BCriticalMiB);
    EXPECT_EQ(partial.itemCount(), 2);
}

TEST(PaintedCompareCharts, TheParetoFrontsPointsLieOnItsLine) {
    const CompareReport report = painter_sample_report();
    PaintedCompareChart chart(report, std::nullopt);
    ASSERT_TRUE(chart.hasData());
    ASSERT_EQ(chart.itemCount(), 3);
    const QImage image = chart.image();
    const QSize size = kCompareChartPngSize;
    const QPolygonF line = chart.frontLine(size);
    // b (1.25 MiB, 6.25) then a (2.38 MiB, 5.43); c (1.67 MiB, 7.5) is beaten by b.
    ASSERT_EQ(line.size(), 2);
    EXPECT_EQ(line[0], chart.pointPosition(1, size));
    EXPECT_EQ(line[1], chart.pointPosition(0, size));
    const PaintedChartLayout layout = chart.layout(size);
    for (int k = 0; k < 3; ++k) {
        const QPointF at = chart.pointPosition(k, size);
        EXPECT_TRUE(layout.plot.adjusted(6, 6, -6, -6).contains(at)) << "point " << k << " and its marker inside the plot";
        EXPECT_EQ(image.pixelColor(at.toPoint()), PaintedCompareChart::pointColour(k)) << "point " << k << "'s marker";
    }
    // The line itself between the two front points, in its colour.
    const QPointF middle = (line[0] + line[1]) / 2;
    EXPECT_LE(painter_test_nearest_colour(image, middle, PaintedCompareChart::frontColour()), 40);
    // c is off the line (more than a marker away), and the line is not drawn through it.
    const QPointF c = chart.pointPosition(2, size);
    EXPECT_GT(painter_test_segment_distance(c, line[0], line[1]), PaintedCompareChart::kMarkerDiameterPx);
    // Bigger y is higher loss: c (7.5) is above b (6.25) on screen, a (5.43) lowest.
    EXPECT_LT(c.y(), line[0].y());
    EXPECT_LT(line[0].y(), line[1].y());
    EXPECT_EQ(chart.legendLabels(), (QStringList{"Pareto front", "1: a, \"quoted\"", "2: b|pipe", "3: c"}));
}

TEST(PaintedCompareCharts, AxesCarryUnitsAndReadableTicks) {
    const CompareReport report = painter_sample_report();
    PaintedCompareChart bytes(report, CompareMetric::BytesPerToken);
    EXPECT_EQ(bytes.yAxisTitle(), QStringLiteral("Bytes/token (MiB)"));
    EXPECT_TRUE(bytes.title().contains(QStringLiteral("(MiB)"))) << bytes.title().toStdString();
    PaintedCompareChart decode(report, CompareMetric::DecodeTokPerS);
    EXPECT_EQ(decode.yAxisTitle(), QStringLiteral("Decode (tok/s)"));
    EXPECT_EQ(decode.title(), QStringLiteral("Decode (tok/s) (higher is better)"));
    PaintedCompareChart scatter(report, std::nullopt);
    EXPECT_EQ(scatter.xAxisTitle(), QStringLiteral("weight bytes read per decoded token (MiB)"));
    EXPECT_EQ(scatter.yAxisTitle(), QStringLiteral("perplexity"));

    CompareReport small = report;
    for (CompareRow& row : small.rows) row.values[size_t(CompareMetric::BytesPerToken)] = *row.value(CompareMetric::BytesPerToken) / 1000;
    EXPECT_EQ(PaintedCompareChart(small, CompareMetric::BytesPerToken).yAxisTitle(), QStringLiteral("Bytes/token (KiB)"));
    small.rows[0].values[size_t(CompareMetric::Top1Agreement)] = 0.875;
    EXPECT_EQ(PaintedCompareChart(small, CompareMetric::Top1Agreement).yAxisTitle(), QStringLiteral("Top-1 agreement (%)"));

    // Ticks at 1, 2, 2.5 or 5 times a power of ten, printed with the decimals they need.
    for (const PaintedCompareChart* chart : {&bytes, &decode, &scatter}) {
        const PaintedChartLayout layout = chart->layout(kCompareChartPngSize);
        for (const PaintedAxis* axis : {&layout.y, &layout.x}) {
            if (chart != &scatter && axis == &layout.x) continue;
            const double mantissa = axis->step / std::pow(10.0, std::floor(std::log10(axis->step)));
            EXPECT_TRUE(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 || std::abs(mantissa - 2.5) < 1e-9 ||
                        std::abs(mantissa - 5) < 1e-9)
                << "tick step " << axis->step;
            const QStringList ticks = axis->tickLabels();
            EXPECT_GE(ticks.size(), 3);
            EXPECT_LE(ticks.size(), 12);
            EXPECT_EQ(std::set<QString>(ticks.begin(), ticks.end()).size(), size_t(ticks.size())) << ticks.join(u',').toStdString();
            for (const QString& t : ticks) EXPECT_LE(t.size(), 8) << t.toStdString();
        }
    }
}

TEST(PaintedCompareCharts, SavePngsWritesTheChartsTheSelfTestChecks) {
    CompareChartsWidget widget;
    widget.setReport(painter_sample_report());
    EXPECT_EQ(widget.chartNames(), (QStringList{QString::fromLatin1(kParetoChartName), "decode_tok_per_s", "perplexity",
                                                "bytes_per_token", "b_critical_mib"}));
    const auto dir = cflow::test::temp_dir("painter_compare_pngs");
    auto written = widget.savePngs(painter_test_path(dir / "charts"));
    ASSERT_TRUE(written.ok()) << written.error();
    ASSERT_EQ(written->size(), 5);
    for (const QString& png : *written) {
        QFile file(png);
        ASSERT_TRUE(file.open(QIODevice::ReadOnly)) << png.toStdString();
        EXPECT_EQ(file.read(8), QByteArray("\x89PNG\r\n\x1a\n", 8)) << png.toStdString();
        // .ci/run's self-test check: at least 8192 bytes, not a blank.
        EXPECT_GE(QFileInfo(png).size(), 8192) << png.toStdString();
        const QImage image(png);
        ASSERT_FALSE(image.isNull()) << png.toStdString();
        EXPECT_EQ(image.size(), QSize(900, 560));
        std::set<QRgb> colours;
        for (int y = 0; y < image.height(); y += 3)
            for (int x = 0; x < image.width(); x += 3) colours.insert(image.pixel(x, y));
        EXPECT_GT(colours.size(), 20u) << png.toStdString() << ": text, axes and bars, not a flat image";
    }
    // An unwritable folder: the error names it.
    QFile blocker(painter_test_path(dir / "file"));
    ASSERT_TRUE(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    auto failed = widget.savePngs(painter_test_path(dir / "file" / "charts"));
    ASSERT_FALSE(failed.ok());
    EXPECT_NE(failed.error().find("file"), std::string::npos) << failed.error();
}

TEST(PaintedCompareCharts, BitsPerByteNamesTheScatterWhenTokenizersDiffer) {
    CompareReport report = painter_sample_report();
    report.tokenizersDiffer = true;
    report.rows[0].values[size_t(CompareMetric::BitsPerByte)] = 1.9;
    report.rows[1].values[size_t(CompareMetric::BitsPerByte)] = 1.2;
    CompareChartsWidget widget;
    widget.setReport(report);
    ASSERT_FALSE(widget.chartNames().isEmpty());
    EXPECT_EQ(widget.chartNames().front(), QString::fromLatin1(kParetoBitsChartName));
    PaintedCompareChart scatter(report, std::nullopt);
    EXPECT_EQ(scatter.itemCount(), 2);  // c has no bits per byte
    EXPECT_EQ(scatter.yAxisTitle(), QStringLiteral("bits per byte"));
    EXPECT_TRUE(PaintedCompareChart(report, CompareMetric::Perplexity).title().contains(QStringLiteral("not comparable")));
}

TEST(PaintedCompareCharts, AnEmptyReportSaysNoData) {
    CompareChartsWidget widget;
    widget.resize(800, 600);
    widget.setReport(CompareReport{});
    EXPECT_TRUE(widget.chartNames().isEmpty());
    auto* note = widget.findChild<QLabel*>(QStringLiteral("compareChartsNoData"));
    ASSERT_TRUE(note);
    EXPECT_TRUE(note->isVisibleTo(&widget));
    EXPECT_TRUE(note->text().startsWith(QStringLiteral("No data"))) << note->text().toStdString();
    auto written = widget.savePngs(painter_test_path(cflow::test::temp_dir("painter_empty_pngs")));
    ASSERT_TRUE(written.ok()) << written.error();
    EXPECT_TRUE(written->isEmpty());
    widget.setReport(painter_sample_report());
    EXPECT_FALSE(note->isVisibleTo(&widget));

    // A chart asked for anyway paints its title and "No data", and has no hover text.
    PaintedCompareChart empty(CompareReport{}, std::nullopt);
    EXPECT_FALSE(empty.hasData());
    EXPECT_EQ(empty.itemCount(), 0);
    const QImage image = empty.image();
    int ink = 0;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) ink += image.pixelColor(x, y) != QColor(Qt::white);
    EXPECT_GT(ink, 100) << "the title and the note";
    empty.resize(kCompareChartPngSize);
    EXPECT_TRUE(empty.toolTipAt(QPoint(450, 280)).isEmpty());
}

TEST(PaintedCompareCharts, OneEntryNaNsAndMissingCellsDrawWhatIsThere) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    // One entry: one bar, and a scatter of one point that is its own front.
    CompareReport one;
    one.rows.push_back(painter_test_row("only", 42.0, 5.0, 3.0e6));
    PaintedCompareChart scatter(one, std::nullopt);
    ASSERT_EQ(scatter.itemCount(), 1);
    const PaintedChartLayout layout = scatter.layout(kCompareChartPngSize);
    EXPECT_GT(layout.x.max, layout.x.min);
    EXPECT_GT(layout.y.max, layout.y.min);
    EXPECT_TRUE(layout.plot.contains(scatter.pointPosition(0, kCompareChartPngSize)));
    EXPECT_EQ(scatter.frontLine(kCompareChartPngSize).size(), 1);
    EXPECT_EQ(scatter.image().pixelColor(scatter.pointPosition(0, kCompareChartPngSize).toPoint()), PaintedCompareChart::pointColour(0));
    PaintedCompareChart bar(one, CompareMetric::DecodeTokPerS);
    ASSERT_EQ(bar.itemCount(), 1);
    EXPECT_GT(bar.barRect(0, kCompareChartPngSize).height(), 100);

    // A NaN or infinite value is left out like a missing one; the rest still chart.
    CompareReport holes = painter_sample_report();
    holes.rows[0].values[size_t(CompareMetric::Perplexity)] = nan;
    holes.rows[1].values[size_t(CompareMetric::BytesPerToken)] = std::nullopt;
    holes.rows[2].values[size_t(CompareMetric::DecodeTokPerS)] = inf;
    PaintedCompareChart holeScatter(holes, std::nullopt);
    EXPECT_EQ(holeScatter.itemCount(), 1);  // only c has both
    PaintedCompareChart holeDecode(holes, CompareMetric::DecodeTokPerS);
    EXPECT_EQ(holeDecode.itemCount(), 2);
    EXPECT_FALSE(holeDecode.image().isNull());
    CompareChartsWidget widget;
    widget.setReport(holes);
    EXPECT_TRUE(widget.chartNames().contains(QString::fromLatin1(kParetoChartName)));

    // Every perplexity NaN: no scatter and no perplexity chart, the other charts stay.
    CompareReport noQuality = painter_sample_report();
    for (CompareRow& row : noQuality.rows) row.values[size_t(CompareMetric::Perplexity)] = nan;
    widget.setReport(noQuality);
    EXPECT_FALSE(widget.chartNames().contains(QString::fromLatin1(kParetoChartName)));
    EXPECT_FALSE(widget.chartNames().contains(QStringLiteral("perplexity")));
    EXPECT_TRUE(widget.chartNames().contains(QStringLiteral("decode_tok_per_s")));
    PaintedCompareChart none(noQuality, CompareMetric::Perplexity);
    EXPECT_FALSE(none.hasData());
    EXPECT_FALSE(none.image().isNull());

    // All zeros: a unit axis, not a division by zero.
    CompareReport zeros;
    zeros.rows.push_back(painter_test_row("z", 0.0, 0.0, 0.0));
    PaintedCompareChart zeroScatter(zeros, std::nullopt);
    const PaintedChartLayout zeroLayout = zeroScatter.layout(kCompareChartPngSize);
    EXPECT_GT(zeroLayout.x.max, zeroLayout.x.min);
    EXPECT_TRUE(std::isfinite(zeroScatter.pointPosition(0, kCompareChartPngSize).x()));
    EXPECT_FALSE(PaintedCompareChart(zeros, CompareMetric::DecodeTokPerS).image().isNull());
}

TEST(PaintedCompareCharts, HoverNamesTheEntryAndItsValue) {
    const CompareReport report = painter_sample_report();
    PaintedCompareChart bars(report, CompareMetric::DecodeTokPerS);
    bars.resize(900, 560);
    EXPECT_EQ(bars.toolTipAt(bars.barRect(0, bars.size()).center().toPoint()),
              QStringLiteral("a, \"quoted\"\nDecode (tok/s): 123.46 tok/s"));
    EXPECT_EQ(bars.toolTipAt(bars.barRect(2, bars.size()).center().toPoint()), QStringLiteral("c\nDecode (tok/s): 150.00 tok/s"));
    EXPECT_TRUE(bars.toolTipAt(QPoint(2, 2)).isEmpty());
    PaintedCompareChart scatter(report, std::nullopt);
    scatter.resize(900, 560);
    const QString text = scatter.toolTipAt(scatter.pointPosition(1, scatter.size()).toPoint() + QPoint(2, 1));
    EXPECT_TRUE(text.startsWith(QStringLiteral("b|pipe\n"))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("(1.19 MiB)"))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("Perplexity: 6.250"))) << text.toStdString();
    EXPECT_TRUE(scatter.toolTipAt(QPoint(2, 2)).isEmpty());
}

} // namespace
