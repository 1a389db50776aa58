#include "cflow/ui/inspector/latency_timeline.h"

#include <algorithm>

#include <QPainter>
#include <QPaintEvent>

#include "chart_colors.h"

namespace cflow::ui {
namespace {

constexpr int kMarginPx = 8;
constexpr int kTextRowPx = 18;
constexpr int kTickRowPx = 16;
constexpr int kMinGapRowPx = 24;

} // namespace

LatencyTimeline::LatencyTimeline(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("latencyTimeline"));
    setAccessibleName(tr("Server latency timeline"));
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    summarize();
}

void LatencyTimeline::setReply(std::vector<float> arrivalMs, double firstTextMs) {
    arrivalMs_.clear();
    largestGapMs_ = 0;
    largestGapAtMs_ = 0;
    appendArrivals(arrivalMs);
    firstTextMs_ = firstTextMs;
    changed_ = false;
    summarize();
    update();
}

void LatencyTimeline::appendArrivals(const std::vector<float>& arrivalMs) {
    if (arrivalMs.empty()) return;
    if (arrivalMs_.empty()) firstTextMs_ = arrivalMs.front();
    for (float ms : arrivalMs) {
        if (!arrivalMs_.empty()) {
            const double gap = double(ms) - double(arrivalMs_.back());
            if (gap > largestGapMs_) {
                largestGapMs_ = gap;
                largestGapAtMs_ = ms;
            }
        }
        arrivalMs_.push_back(ms);
    }
    changed_ = true;
}

bool LatencyTimeline::refreshIfChanged() {
    if (!changed_) return false;
    changed_ = false;
    summarize();
    update();
    return true;
}

void LatencyTimeline::summarize() {
    const QString summary = summaryText();
    setToolTip(summary);
    setAccessibleDescription(summary);
}

QString LatencyTimeline::summaryText() const {
    if (arrivalMs_.empty())
        return tr("No reply from a server yet: connect with Model > Connect to a server… and send a message; this "
                  "shows when each piece of its reply arrived.");
    return tr("First text after %1 ms · %2 chunks over %3 s · largest gap %4 ms (at %5 s)")
        .arg(firstTextMs_, 0, 'f', 0)
        .arg(arrivalMs_.size())
        .arg(double(arrivalMs_.back()) / 1000.0, 0, 'f', 2)
        .arg(largestGapMs_, 0, 'f', 0)
        .arg(largestGapAtMs_ / 1000.0, 0, 'f', 2);
}

QSize LatencyTimeline::sizeHint() const { return {480, 160}; }
QSize LatencyTimeline::minimumSizeHint() const { return {160, kTextRowPx + kTickRowPx + kMinGapRowPx + 3 * kMarginPx}; }

void LatencyTimeline::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QPalette& pal = palette();
    p.fillRect(rect(), pal.color(QPalette::Base));
    p.setPen(pal.color(QPalette::Text));
    const QRect textRow(kMarginPx, kMarginPx, width() - 2 * kMarginPx, kTextRowPx);
    p.drawText(textRow, Qt::AlignLeft | Qt::AlignVCenter, fontMetrics().elidedText(summaryText(), Qt::ElideRight, textRow.width()));
    if (arrivalMs_.empty()) return;

    const int left = kMarginPx;
    const int plotWidth = std::max(1, width() - 2 * kMarginPx);
    const double spanMs = std::max(1.0, double(arrivalMs_.back()));
    const auto xOf = [&](double ms) { return left + int(ms / spanMs * (plotWidth - 1)); };

    // The wait for the first text, then one tick per chunk.
    const int tickTop = textRow.bottom() + kMarginPx;
    p.fillRect(QRect(left, tickTop, std::max(1, xOf(firstTextMs_) - left), kTickRowPx), chart_colors::kStall.lighter(150));
    p.setPen(chart_colors::kCompute);
    for (float ms : arrivalMs_) {
        const int x = xOf(ms);
        p.drawLine(x, tickTop, x, tickTop + kTickRowPx - 1);
    }

    // Each gap since the chunk before, as a bar at its chunk's arrival (height: gap / largest).
    const int gapTop = tickTop + kTickRowPx + kMarginPx;
    const int gapHeight = std::max(1, height() - gapTop - kMarginPx);
    p.setPen(pal.color(QPalette::Mid));
    p.drawLine(left, gapTop + gapHeight, left + plotWidth - 1, gapTop + gapHeight);
    if (largestGapMs_ <= 0) return;
    p.setPen(chart_colors::kStall);
    for (size_t i = 1; i < arrivalMs_.size(); ++i) {
        const double gap = double(arrivalMs_[i]) - double(arrivalMs_[i - 1]);
        const int h = std::max(1, int(gap / largestGapMs_ * gapHeight));
        const int x = xOf(arrivalMs_[i]);
        p.drawLine(x, gapTop + gapHeight - h, x, gapTop + gapHeight);
    }
}

} // namespace cflow::ui
