// The inspector's hand-painted charts and their cost-saving machinery, on the offscreen
// platform: what lands in the pixels (grabbed images, checked against the data), repaints
// skipped when nothing visible changed, summary text that follows live numbers a few times a
// second, and labels whose changing text does not relayout their parents.
#include <algorithm>
#include <cstdlib>
#include <array>
#include <cstdint>
#include <vector>

#include <QApplication>
#include <QEvent>
#include <QImage>
#include <QLabel>
#include <QTest>
#include <QVBoxLayout>

#include <gtest/gtest.h>

#include "cflow/ui/inspector/bandwidth_chart.h"
#include "cflow/ui/inspector/routing_panel.h"
#include "cflow/ui/inspector/stall_totals_chart.h"
#include "chart_colors.h"
#include "label_box.h"
#include "throttled_text.h"

namespace {

using namespace cflow;
using namespace cflow::ui;

const QRgb kComputeRgb = qRgb(0x4e, 0x79, 0xa7);  // ui/charts/chart_colors.h
const QRgb kStallRgb = qRgb(0xe1, 0x57, 0x59);

// Counts events of one type that reach an object.
class EventCounter : public QObject {
public:
    explicit EventCounter(QEvent::Type type) : type_(type) {}
    int count = 0;

protected:
    bool eventFilter(QObject*, QEvent* e) override {
        if (e->type() == type_) ++count;
        return false;
    }

private:
    QEvent::Type type_;
};

std::vector<TokenStall> stalls(uint32_t firstPosition, int tokens, double computeUs, double waitUs) {
    std::vector<TokenStall> v;
    for (int i = 0; i < tokens; ++i) v.push_back({firstPosition + uint32_t(i), computeUs, waitUs});
    return v;
}

// The centre x of a slot, found through the chart's own hit testing; -1 when no slot matches.
int slot_x(const StallTotalsChart& chart, int tokensAgo) {
    const QString needle = QStringLiteral("%1 tokens ago").arg(tokensAgo);
    int first = -1, last = -1;
    for (int x = 0; x < chart.width(); ++x) {
        if (!chart.toolTipAt(QPoint(x, chart.height() / 2)).startsWith(needle)) continue;
        if (first < 0) first = x;
        last = x;
    }
    return first < 0 ? -1 : (first + last) / 2;
}

// Delivers posted events until none are left (a relayout posts the next step's events).
void settle() {
    for (int i = 0; i < 5; ++i) {
        QCoreApplication::sendPostedEvents();
        QApplication::processEvents();
    }
}

TEST(StallTotalsChart, NewestTokensFillTheRightSlotsAndTheBarsAreStackedInProportion) {
    StallTotalsChart chart(8);
    chart.resize(480, 260);
    chart.show();
    chart.setTotals(stalls(100, 10, 400.0, 100.0));  // 0.4 ms compute + 0.1 ms wait per token
    EXPECT_EQ(chart.slotCount(), 8);
    EXPECT_EQ(chart.filledSlots(), 8);
    EXPECT_DOUBLE_EQ(chart.computeMs(0), 0.4);
    EXPECT_DOUBLE_EQ(chart.stallMs(7), 0.1);
    EXPECT_DOUBLE_EQ(chart.axisMaxMs(), 1.0);  // 0.5 ms x 1.1 rounded up to 1, 2, 2.5, 5 x 10^k

    const int x = slot_x(chart, 0);
    ASSERT_GE(x, 0);
    EXPECT_TRUE(chart.toolTipAt(QPoint(x, chart.height() / 2)).contains(QStringLiteral("position 109")))
        << chart.toolTipAt(QPoint(x, chart.height() / 2)).toStdString();
    // Down the newest bar's centre: compute below stall, heights 4:1 (0.4 vs 0.1 ms).
    const int barX = x;
    const QImage image = chart.grab().toImage();
    int computePx = 0, stallPx = 0, firstStallY = -1, lastComputeY = -1;
    for (int y = 0; y < image.height(); ++y) {
        const QRgb c = image.pixel(barX, y) | 0xff000000u;
        if (c == kComputeRgb) {
            ++computePx;
            lastComputeY = y;
        } else if (c == kStallRgb) {
            ++stallPx;
            if (firstStallY < 0) firstStallY = y;
        }
    }
    ASSERT_GT(stallPx, 0);
    EXPECT_NEAR(double(computePx) / stallPx, 4.0, 0.6) << computePx << " compute px, " << stallPx << " stall px";
    EXPECT_LT(firstStallY, lastComputeY);  // stall stacked on top

    // Fewer tokens than slots: the left slots are empty and have no tooltip.
    chart.setTotals(stalls(5, 3, 400.0, 100.0));
    EXPECT_EQ(chart.filledSlots(), 3);
    EXPECT_EQ(chart.computeMs(0), 0.0);
    EXPECT_FALSE(chart.toolTipAt(QPoint(slot_x(chart, 2), chart.height() / 2)).isEmpty());
    EXPECT_TRUE(chart.toolTipAt(QPoint(slot_x(chart, 2) - (slot_x(chart, 1) - slot_x(chart, 2)), chart.height() / 2))
                    .isEmpty());
}

TEST(StallTotalsChart, AxisMovesOnlyInNiceStepsAndUnchangedTotalsDoNotRepaint) {
    StallTotalsChart chart(8);
    chart.resize(400, 220);
    chart.show();
    EventCounter paints(QEvent::Paint);
    chart.installEventFilter(&paints);
    chart.setTotals(stalls(0, 8, 1000.0, 0.0));
    QApplication::processEvents();
    EXPECT_DOUBLE_EQ(chart.axisMaxMs(), 2.0);  // 1.1 ms -> 2
    const int paintsAfterFirst = paints.count;
    EXPECT_GE(paintsAfterFirst, 1);

    chart.setTotals(stalls(0, 8, 1000.0, 0.0));  // same values: nothing to repaint
    QApplication::processEvents();
    EXPECT_EQ(paints.count, paintsAfterFirst);

    chart.setTotals(stalls(0, 8, 1200.0, 0.0));  // 1.32 ms still under 2: same axis, bars repaint
    QApplication::processEvents();
    EXPECT_DOUBLE_EQ(chart.axisMaxMs(), 2.0);
    EXPECT_GT(paints.count, paintsAfterFirst);

    chart.setTotals(stalls(0, 8, 2000.0, 500.0));  // 2.75 ms -> 5
    EXPECT_DOUBLE_EQ(chart.axisMaxMs(), 5.0);
    chart.setTotals({});
    EXPECT_DOUBLE_EQ(chart.axisMaxMs(), 1.0);
    EXPECT_EQ(chart.filledSlots(), 0);
}

TEST(BandwidthChart, StreamsStackInProportionAndTheLinesSitAtTheirValues) {
    BandwidthChart chart;
    chart.resize(600, 300);
    chart.show();
    chart.setLayers(3);
    std::array<std::vector<double>, BandwidthChart::kStreams> bytes;
    for (auto& b : bytes) b.assign(3, 0.0);
    bytes[0] = {10, 10, 10};  // attention
    bytes[1] = {30, 30, 30};  // dense
    bytes[2] = {0, 20, 40};   // experts
    chart.setData(bytes, QStringLiteral("KiB"), {1.0, 2.0, 3.0});
    chart.setSpeedOfLight(4.0);
    EXPECT_EQ(chart.layers(), 3);
    EXPECT_DOUBLE_EQ(chart.bytes(2, 2), 40.0);
    EXPECT_DOUBLE_EQ(chart.bytesAxisMax(), 100.0);  // 80 x 1.1 -> 100
    EXPECT_DOUBLE_EQ(chart.rateAxisMax(), 5.0);     // max(3, speed of light 4) x 1.1 -> 5
    EXPECT_TRUE(chart.toolTipAt(QPoint(chart.width() / 2, chart.height() / 2)).startsWith(QStringLiteral("layer 1: 60.00 KiB")))
        << chart.toolTipAt(QPoint(chart.width() / 2, chart.height() / 2)).toStdString();

    // Down the middle of layer 2's bar: attention 10, dense 30, experts 40 -> pixel heights 1:3:4.
    const QImage image = chart.grab().toImage();
    int x = -1;
    for (int px = 0; px < chart.width() && x < 0; ++px)
        if (chart.toolTipAt(QPoint(px, chart.height() / 2)).startsWith(QStringLiteral("layer 2:"))) x = px;
    ASSERT_GE(x, 0);
    int layer2Right = x;
    while (chart.toolTipAt(QPoint(layer2Right + 1, chart.height() / 2)).startsWith(QStringLiteral("layer 2:"))) ++layer2Right;
    const int cx = (x + layer2Right) / 2 + 3;  // beside the line's marker at the centre
    std::array<int, 3> px{};
    for (int y = 0; y < image.height(); ++y) {
        const QRgb c = image.pixel(cx, y) | 0xff000000u;
        for (int s = 0; s < 3; ++s) px[size_t(s)] += c == (chart_colors::kStreams[size_t(s)].rgb() | 0xff000000u) ? 1 : 0;
    }
    ASSERT_GT(px[0], 0);
    EXPECT_NEAR(double(px[1]) / px[0], 3.0, 0.5);
    EXPECT_NEAR(double(px[2]) / px[0], 4.0, 0.6);
    // The speed-of-light line: dark dashes across the plot at 4 of 5 GB/s; the achieved line's
    // colour appears (markers and segments).
    int dashRows = 0, achievedPx = 0;
    for (int y = 0; y < image.height(); ++y) {
        int dark = 0;
        for (int xx = 0; xx < image.width(); ++xx) {
            const QRgb c = image.pixel(xx, y) | 0xff000000u;
            dark += c == (chart_colors::kSpeedOfLight.rgb() | 0xff000000u) ? 1 : 0;
            achievedPx += c == (chart_colors::kAchieved.rgb() | 0xff000000u) ? 1 : 0;
        }
        dashRows += dark > chart.width() / 3 ? 1 : 0;
    }
    EXPECT_GE(dashRows, 1);
    EXPECT_GT(achievedPx, 20);
}

TEST(BandwidthChart, UnchangedDataDoesNotRepaintAndTheAxisHoldsItsStep) {
    BandwidthChart chart;
    chart.resize(500, 260);
    chart.show();
    chart.setLayers(2);
    EventCounter paints(QEvent::Paint);
    chart.installEventFilter(&paints);
    std::array<std::vector<double>, BandwidthChart::kStreams> bytes;
    for (auto& b : bytes) b.assign(2, 1.0);
    chart.setData(bytes, QStringLiteral("KiB"), {0.5, 0.6});
    settle();
    const int after = paints.count;
    EXPECT_GE(after, 1);
    chart.setData(bytes, QStringLiteral("KiB"), {0.5, 0.6});
    settle();
    EXPECT_EQ(paints.count, after);
    EXPECT_DOUBLE_EQ(chart.bytesAxisMax(), 10.0);  // 5 x 1.1 -> 10
    for (auto& b : bytes) b.assign(2, 1.2);        // 6.6 still under 10: same axis
    chart.setData(bytes, QStringLiteral("KiB"), {0.5, 0.6});
    EXPECT_DOUBLE_EQ(chart.bytesAxisMax(), 10.0);
    for (auto& b : bytes) b.assign(2, 0.3);        // 1.65 is under 40% of 10: shrinks to 2
    chart.setData(bytes, QStringLiteral("KiB"), {0.5, 0.6});
    EXPECT_DOUBLE_EQ(chart.bytesAxisMax(), 2.0);
    EXPECT_EQ(chart.bytes(5, 0), -1.0);
    EXPECT_EQ(chart.achieved(2), -1.0);
}

TEST(TokenStrip, EachExpertBandHasItsColourAndTheCellsEdgesAreExact) {
    TokenStrip strip;
    strip.resize(300, 120);
    strip.show();
    constexpr uint32_t kExperts = 4;
    std::vector<TokenStrip::Column> columns;
    for (uint32_t p = 0; p < 4; ++p) {
        TokenStrip::Column c;
        c.position = p;
        c.layers.resize(2);
        c.layers[0].nSelected = 2;
        c.layers[0].experts = {uint8_t(p % kExperts), uint8_t((p + 1) % kExperts)};
        c.layers[0].weights = {1.0f, 0.0f};  // full colour left, 35% over the base right
        c.layers[1].nSelected = 0;            // no experts: base colour
        columns.push_back(c);
    }
    strip.setColumns(columns, 2, kExperts);
    const QImage image = strip.grab().toImage();
    const QRgb base = strip.palette().base().color().rgb() | 0xff000000u;
    for (int col = 0; col < 4; ++col) {
        const QRect cell = strip.cellRect(0, col);
        const QPoint left(cell.left() + cell.width() / 4, cell.center().y());
        const QPoint right(cell.left() + 3 * cell.width() / 4, cell.center().y());
        EXPECT_EQ(image.pixel(left) | 0xff000000u, expert_color(uint32_t(col) % kExperts, kExperts).rgb() | 0xff000000u)
            << "column " << col;
        const QRgb r = image.pixel(right) | 0xff000000u;
        EXPECT_NE(r, base) << "column " << col;
        EXPECT_NE(r, expert_color(uint32_t(col + 1) % kExperts, kExperts).rgb() | 0xff000000u) << "weight 0 is not full colour";
        // The cell's first and last pixel rows belong to it; the next row down is layer 1 (empty).
        EXPECT_EQ(image.pixel(left.x(), cell.top()), image.pixel(left));
        EXPECT_EQ(image.pixel(left.x(), cell.bottom()), image.pixel(left));
        EXPECT_EQ(image.pixel(left.x(), cell.bottom() + 1) | 0xff000000u, base);
    }
}

TEST(ExpertHeatmap, EveryCellIsPaintedFromItsCountIncludingZero) {
    ExpertHeatmap heatmap;
    heatmap.resize(300, 150);
    heatmap.show();
    RoutingCounts counts;
    counts.layers = 2;
    counts.experts = 3;
    counts.tokens = 10;
    counts.counts = {10, 0, 5, 0, 0, 0};
    heatmap.setCounts(counts);
    QImage image = heatmap.grab().toImage();
    const QRgb base = heatmap.palette().base().color().rgb() | 0xff000000u;
    EXPECT_EQ(image.pixel(heatmap.cellRect(0, 0).center()) | 0xff000000u, qRgb(0xc0, 0x39, 0x2b));  // chosen every time
    EXPECT_EQ(image.pixel(heatmap.cellRect(0, 1).center()) | 0xff000000u, base);
    const QRgb half = image.pixel(heatmap.cellRect(0, 2).center()) | 0xff000000u;
    EXPECT_NE(half, base);
    EXPECT_NE(half, qRgb(0xc0, 0x39, 0x2b));
    // A cell that was hot and is now zero goes back to the base colour (the fills cover every
    // cell; the cached background is not drawn under them).
    counts.counts = {0, 0, 0, 0, 0, 0};
    heatmap.setCounts(counts);
    image = heatmap.grab().toImage();
    EXPECT_EQ(image.pixel(heatmap.cellRect(0, 0).center()) | 0xff000000u, base);
}

RoutingCounts routing_counts_3x4() {
    RoutingCounts counts;
    counts.layers = 3;
    counts.experts = 4;
    counts.tokens = 8;
    counts.counts = {8, 0, 4, 2, 1, 1, 1, 1, 0, 8, 0, 0};
    return counts;
}

// The scale under the heatmap runs from the empty cell's colour (0%) to the colour of an
// expert every token chose (100%), and never overlaps a cell.
TEST(ExpertHeatmap, TheColourScaleRunsFromNoneToEveryTokenBelowTheGrid) {
    ExpertHeatmap heatmap;
    heatmap.resize(400, 200);
    heatmap.show();
    heatmap.setCounts(routing_counts_3x4());
    const QRect bar = heatmap.scaleBarRect();
    ASSERT_FALSE(bar.isEmpty()) << "a 400x200 heatmap has room for its scale";
    EXPECT_GE(bar.width(), 40);
    EXPECT_GT(bar.top(), heatmap.cellRect(2, 0).bottom()) << "the scale sits below the last row";
    EXPECT_LE(bar.bottom(), heatmap.height() - 1);
    const QImage image = heatmap.grab().toImage();
    const QRgb base = heatmap.palette().base().color().rgb() | 0xff000000u;
    const auto channel_gap = [](QRgb a, QRgb b) {
        return std::max({std::abs(qRed(a) - qRed(b)), std::abs(qGreen(a) - qGreen(b)), std::abs(qBlue(a) - qBlue(b))});
    };
    const QRgb left = image.pixel(bar.left() + 1, bar.center().y()) | 0xff000000u;
    const QRgb right = image.pixel(bar.right() - 1, bar.center().y()) | 0xff000000u;
    EXPECT_LE(channel_gap(left, base), 12) << "0% is the colour of a cell no token chose";
    EXPECT_LE(channel_gap(right, ExpertHeatmap::hotColor()), 12) << "100% is the colour of a cell every token chose";
    // The middle of the bar is the colour of a cell chosen by half the tokens (layer 0, expert 2).
    const QRgb half = image.pixel(heatmap.cellRect(0, 2).center()) | 0xff000000u;
    EXPECT_LE(channel_gap(image.pixel(bar.center()) | 0xff000000u, half), 12);
}

TEST(ExpertHeatmap, ASmallPaneHidesTheScaleRatherThanOverlapTheCells) {
    ExpertHeatmap heatmap;
    heatmap.setMinimumSize(0, 0);  // the sizes a crowded layout could give it
    heatmap.setCounts(routing_counts_3x4());
    heatmap.show();
    for (const QSize size : {QSize(400, 40), QSize(60, 200)}) {
        heatmap.resize(size);
        EXPECT_TRUE(heatmap.scaleBarRect().isEmpty()) << size.width() << "x" << size.height();
        EXPECT_EQ(heatmap.cellRect(2, 3).bottom(), size.height() - 3) << "the grid keeps the whole height";
    }
    heatmap.resize(400, 200);
    EXPECT_FALSE(heatmap.scaleBarRect().isEmpty()) << "growing again brings it back";
}

// The strip's legend: a numbered swatch per expert in its expert_color(), below the grid.
TEST(TokenStrip, TheLegendShowsEachExpertsColourBelowTheGrid) {
    TokenStrip strip;
    strip.resize(400, 200);
    strip.show();
    constexpr uint32_t kExperts = 4;
    std::vector<TokenStrip::Column> columns(3);
    for (uint32_t p = 0; p < 3; ++p) {
        columns[p].position = p;
        columns[p].layers.resize(3);
    }
    strip.setColumns(columns, 3, kExperts);
    const QRect legend = strip.legendRect();
    ASSERT_FALSE(legend.isEmpty());
    EXPECT_GT(legend.top(), strip.cellRect(2, 0).bottom()) << "the legend sits below the last layer";
    const QImage image = strip.grab().toImage();
    for (uint32_t e = 0; e < kExperts; ++e) {
        const QRect swatch = strip.legendSwatchRect(e);
        ASSERT_FALSE(swatch.isEmpty()) << "expert " << e;
        EXPECT_TRUE(legend.contains(swatch)) << "expert " << e;
        EXPECT_EQ(image.pixel(swatch.center()) | 0xff000000u, expert_color(e, kExperts).rgb() | 0xff000000u) << "expert " << e;
        if (e > 0) {
            EXPECT_GT(swatch.left(), strip.legendSwatchRect(e - 1).right()) << "swatches do not overlap";
        }
    }
    // Too many experts to number in 400 pixels: a hue bar instead of swatches; too short a pane: none.
    strip.setColumns(columns, 3, 128);
    EXPECT_FALSE(strip.legendRect().isEmpty());
    EXPECT_TRUE(strip.legendSwatchRect(0).isEmpty());
    strip.setMinimumSize(0, 0);  // the sizes a crowded layout could give it
    strip.resize(400, 40);
    EXPECT_TRUE(strip.legendRect().isEmpty());
    EXPECT_EQ(strip.cellRect(2, 0).bottom(), 40 - 3) << "the grid keeps the whole height";
}

TEST(ThrottledText, FirstChangeShowsAtOnceLaterOnesAtTheEndOfTheInterval) {
    QLabel label;
    // A long interval, so a busy machine cannot let it pass between two statements.
    detail::ThrottledText text(&label, 1000);
    text.setText(QStringLiteral("a"));
    EXPECT_EQ(label.text(), QStringLiteral("a"));
    text.setText(QStringLiteral("b"));
    text.setText(QStringLiteral("c"));
    EXPECT_EQ(label.text(), QStringLiteral("a"));  // inside the interval
    EXPECT_EQ(text.text(), QStringLiteral("c"));   // what it will show
    EXPECT_TRUE(QTest::qWaitFor([&] { return label.text() == QStringLiteral("c"); }, 5000));
    // After a quiet interval, a change shows at once again.
    QTest::qWait(1100);
    text.setText(QStringLiteral("d"));
    EXPECT_EQ(label.text(), QStringLiteral("d"));
}

TEST(LabelBox, ChangingTextOfTheSameHeightDoesNotRelayoutTheParent) {
    QWidget parent;
    auto* layout = new QVBoxLayout(&parent);
    auto* label = new QLabel;
    label->setWordWrap(true);
    auto* box = new detail::LabelBox(label, &parent);
    // Stretch gives the box more height than its text needs, as in the inspector's panels: the
    // box compares the label's wanted height with what it last asked for, not with its height.
    layout->addWidget(box, 1);
    layout->addWidget(new QWidget(&parent), 1);
    parent.resize(400, 300);
    parent.show();
    label->setText(QStringLiteral("Last 64 tokens: 1.00 ms compute"));
    settle();
    EventCounter relayouts(QEvent::LayoutRequest);
    parent.installEventFilter(&relayouts);
    const int height = box->height();
    for (int i = 0; i < 20; ++i) {
        label->setText(QStringLiteral("Last 64 tokens: %1 ms compute").arg(1.0 + i / 100.0, 0, 'f', 2));
        settle();
    }
    EXPECT_EQ(relayouts.count, 0);
    // Text that needs more lines does reach the layout, and the box grows.
    label->setText(QString(QStringLiteral("a long summary that wraps ")).repeated(80));
    settle();
    EXPECT_GE(relayouts.count, 1);
    EXPECT_GT(box->height(), height) << "the text needs more height than the stretch gave";
}

} // namespace
