#include "cflow/ui/inspector/stall_totals_chart.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <QEvent>
#include <QPainter>

#include "chart_colors.h"
#include "chart_widget.h"
#include "nice_scale.h"

namespace cflow::ui {
namespace {

QString ms_label(double v) { return QString::number(v, 'g', 4); }

constexpr int kXTickEvery = 8;  // label every 8th slot counted from the newest

} // namespace

StallTotalsChart::StallTotalsChart(int slotCount, QWidget* parent)
    : QWidget(parent), slots_(std::max(1, slotCount)), values_(size_t(slots_)) {
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);  // paintEvent fills every pixel
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void StallTotalsChart::setTotals(const std::vector<TokenStall>& tokens) {
    std::vector<Slot> next(static_cast<size_t>(slots_));
    const size_t shown = std::min(tokens.size(), size_t(slots_));
    const size_t offset = size_t(slots_) - shown;
    double maxMs = 0;
    for (size_t i = 0; i < shown; ++i) {
        const TokenStall& t = tokens[tokens.size() - shown + i];
        Slot& s = next[offset + i];
        s.filled = true;
        s.position = t.position;
        s.computeMs = std::max(0.0, t.computeUs / 1000.0);
        s.stallMs = std::max(0.0, t.expertWaitUs / 1000.0);
        s.grammarAllowed = t.grammarAllowedTokens;
        s.grammarVocab = t.grammarVocabTokens;
        maxMs = std::max(maxMs, s.computeMs + s.stallMs);
    }
    const double axisMax = detail::sticky_axis_max(axisMaxMs_, maxMs > 0 ? maxMs * 1.1 : 1.0);
    if (next == values_ && axisMax == axisMaxMs_) return;  // nothing visible changed
    const bool sameAxis = axisMax == axisMaxMs_;
    const auto marked = [](const std::vector<Slot>& v) {
        return std::any_of(v.begin(), v.end(), [](const Slot& s) { return s.grammarVocab > 0; });
    };
    const bool sameLegend = marked(next) == marked(values_);
    values_ = std::move(next);
    axisMaxMs_ = axisMax;
    if (sameAxis && sameLegend) update(plotRect());  // the bars only: labels, legend and grid stay
    else update();
}

int StallTotalsChart::filledSlots() const {
    return int(std::count_if(values_.begin(), values_.end(), [](const Slot& s) { return s.filled; }));
}

double StallTotalsChart::computeMs(int slot) const {
    return slot >= 0 && slot < slots_ ? values_[size_t(slot)].computeMs : -1;
}
double StallTotalsChart::stallMs(int slot) const { return slot >= 0 && slot < slots_ ? values_[size_t(slot)].stallMs : -1; }

int64_t StallTotalsChart::grammarAllowed(int slot) const {
    if (slot < 0 || slot >= slots_ || values_[size_t(slot)].grammarVocab == 0) return -1;
    return values_[size_t(slot)].grammarAllowed;
}
int64_t StallTotalsChart::grammarVocab(int slot) const {
    if (slot < 0 || slot >= slots_ || values_[size_t(slot)].grammarVocab == 0) return -1;
    return values_[size_t(slot)].grammarVocab;
}

QRect StallTotalsChart::slotColumn(int slot) const {
    const QRect plot = plotRect();
    const int x0 = plot.left() + int(int64_t(slot) * plot.width() / slots_);
    const int x1 = plot.left() + int(int64_t(slot + 1) * plot.width() / slots_);
    const int gap = std::max(1, (x1 - x0) / 5);
    return QRect(x0 + gap / 2, plot.top(), std::max(1, x1 - x0 - gap), plot.height());
}

// A strip at the top of the bar's column: the axis keeps 10% headroom above the tallest bar,
// so the mark sits over the bars rather than on them.
QRect StallTotalsChart::grammarMarkRect(int slot) const {
    if (grammarAllowed(slot) < 0) return {};
    const QRect column = slotColumn(slot);
    if (column.height() <= 0) return {};
    return QRect(column.left(), column.top(), column.width(), std::clamp(column.height() / 16, 3, 6));
}

QSize StallTotalsChart::sizeHint() const { return QSize(480, 200); }
QSize StallTotalsChart::minimumSizeHint() const { return QSize(200, 6 * fontMetrics().height()); }

// Room above for the title and legend, left for the tick labels, below for the token labels and
// the axis title. Measuring text shapes it, so the margins are kept until the font changes.
QRect StallTotalsChart::plotRect() const {
    if (margins_.isNull()) {
        const QFontMetrics fm = fontMetrics();
        margins_ = QMargins(fm.horizontalAdvance(QStringLiteral("0.0000")) + 10, fm.height() + 10, 8, 2 * fm.height() + 10);
    }
    return rect().marginsRemoved(margins_);
}

int StallTotalsChart::slotAt(QPoint pos) const {
    const QRect p = plotRect();
    if (p.width() <= 0 || pos.x() < p.left() || pos.x() > p.right() || pos.y() < p.top() || pos.y() > p.bottom()) return -1;
    return std::clamp(int(int64_t(pos.x() - p.left()) * slots_ / p.width()), 0, slots_ - 1);
}

QString StallTotalsChart::toolTipAt(QPoint pos) const {
    const int slot = slotAt(pos);
    if (slot < 0 || !values_[size_t(slot)].filled) return {};
    const Slot& s = values_[size_t(slot)];
    const double total = s.computeMs + s.stallMs;
    const QString times = tr("%1 tokens ago (position %2): compute %3 ms, expert wait %4 ms (%5% stalled)")
                              .arg(slots_ - 1 - slot)
                              .arg(s.position)
                              .arg(s.computeMs, 0, 'f', 3)
                              .arg(s.stallMs, 0, 'f', 3)
                              .arg(total > 0 ? 100.0 * s.stallMs / total : 0.0, 0, 'f', 1);
    if (s.grammarVocab == 0) return times;
    return times + QLatin1Char('\n') + tr("grammar allowed %1 of %2 tokens").arg(s.grammarAllowed).arg(s.grammarVocab);
}

void StallTotalsChart::ensureStatic() {
    const qint64 paletteKey = palette().cacheKey();
    const int grammarLegend =
        std::any_of(values_.begin(), values_.end(), [](const Slot& s) { return s.grammarVocab > 0; }) ? 1 : 0;
    if (!static_.isNull() && staticSize_ == size() && staticAxisMaxMs_ == axisMaxMs_ && staticPalette_ == paletteKey &&
        staticGrammarLegend_ == grammarLegend)
        return;
    staticGrammarLegend_ = grammarLegend;
    staticSize_ = size();
    staticAxisMaxMs_ = axisMaxMs_;
    staticPalette_ = paletteKey;
    static_ = detail::widget_pixmap(this);
    QPainter p(&static_);
    p.fillRect(rect(), palette().base());
    const QFontMetrics fm = fontMetrics();
    const QRect plot = plotRect();
    const QColor text = palette().text().color();

    // Title left, legend right, on one line.
    p.setPen(text);
    p.drawText(QRect(4, 2, width() - 8, fm.height() + 4), Qt::AlignLeft | Qt::AlignVCenter,
               tr("Per token: compute vs expert-wait stall (ms)"));
    int x = width() - 8;
    std::vector<std::pair<QString, QColor>> legend = {{tr("expert wait"), chart_colors::kStall},
                                                      {tr("compute"), chart_colors::kCompute}};
    if (grammarLegend) legend.insert(legend.begin(), {tr("grammar-masked"), chart_colors::kGrammar});
    for (const auto& [label, color] : legend) {
        const int w = fm.horizontalAdvance(label);
        x -= w;
        p.drawText(QRect(x, 2, w, fm.height() + 4), Qt::AlignLeft | Qt::AlignVCenter, label);
        x -= fm.height() + 4;
        p.fillRect(QRect(x, 2 + 3, fm.height() - 2, fm.height() - 2), color);
        x -= 12;
    }
    if (plot.width() <= 0 || plot.height() <= 0) return;

    // Horizontal grid with ms labels.
    const double step = detail::nice_tick_step(axisMaxMs_);
    for (int i = 0;; ++i) {
        const double v = i * step;
        if (v > axisMaxMs_ * (1 + 1e-9)) break;
        const int y = plot.bottom() - int(std::lround(v / axisMaxMs_ * plot.height()));
        p.setPen(QPen(i == 0 ? palette().mid().color() : palette().midlight().color(), 0));
        p.drawLine(plot.left(), y, plot.right(), y);
        p.setPen(text);
        p.drawText(QRect(0, y - fm.height() / 2, plot.left() - 6, fm.height()), Qt::AlignRight | Qt::AlignVCenter,
                   ms_label(v));
    }
    // Token labels under every kXTickEvery-th slot, counted back from the newest (0).
    for (int ago = 0; ago < slots_; ago += kXTickEvery) {
        const int slot = slots_ - 1 - ago;
        const int cx = plot.left() + int((int64_t(slot) * 2 + 1) * plot.width() / (2 * slots_));
        p.drawText(QRect(cx - 30, plot.bottom() + 4, 60, fm.height()), Qt::AlignHCenter | Qt::AlignTop,
                   QString::number(-ago));
    }
    p.drawText(QRect(plot.left(), plot.bottom() + 6 + fm.height(), plot.width(), fm.height()),
               Qt::AlignHCenter | Qt::AlignTop, tr("tokens ago (0 = newest)"));
}

void StallTotalsChart::paintEvent(QPaintEvent*) {
    ensureStatic();
    QPainter p(this);
    p.drawPixmap(0, 0, static_);
    const QRect plot = plotRect();
    if (plot.width() <= 0 || plot.height() <= 0) return;
    const double pxPerMs = plot.height() / axisMaxMs_;
    for (int i = 0; i < slots_; ++i) {
        const Slot& s = values_[size_t(i)];
        if (!s.filled) continue;
        const QRect column = slotColumn(i);
        const int computeTop = plot.bottom() - int(std::lround(s.computeMs * pxPerMs));
        const int stallTop = plot.bottom() - int(std::lround((s.computeMs + s.stallMs) * pxPerMs));
        if (computeTop < plot.bottom())
            p.fillRect(QRect(column.left(), computeTop, column.width(), plot.bottom() - computeTop), chart_colors::kCompute);
        if (stallTop < computeTop)
            p.fillRect(QRect(column.left(), stallTop, column.width(), computeTop - stallTop), chart_colors::kStall);
        if (const QRect mark = grammarMarkRect(i); !mark.isEmpty()) p.fillRect(mark, chart_colors::kGrammar);
    }
}

bool StallTotalsChart::event(QEvent* event) {
    if (event->type() == QEvent::FontChange) {
        margins_ = {};
        static_ = {};
    }
    if (detail::handle_tool_tip(this, event)) return true;
    return QWidget::event(event);
}

} // namespace cflow::ui
