#include "cflow/ui/inspector/bandwidth_chart.h"

#include <algorithm>
#include <cmath>

#include <QEvent>
#include <QPainter>

#include "chart_colors.h"
#include "chart_widget.h"
#include "nice_scale.h"

namespace cflow::ui {
namespace {

const char* const kStreamLabels[BandwidthChart::kStreams] = {"attention", "dense", "experts", "router", "vocab"};

QString tick_label(double v) { return QString::number(v, 'g', 4); }

// One legend entry: a swatch (bar colour, line or dashed line) and its text.
struct LegendItem {
    QString text;
    QColor color;
    enum Kind { Bar, Line, Dashed } kind = Bar;
};

std::vector<LegendItem> legend_items(bool withSpeedOfLight) {
    std::vector<LegendItem> items;
    for (int s = 0; s < BandwidthChart::kStreams; ++s)
        items.push_back({BandwidthChart::streamLabel(s), chart_colors::kStreams[size_t(s)], LegendItem::Bar});
    items.push_back({QObject::tr("achieved GB/s"), chart_colors::kAchieved, LegendItem::Line});
    if (withSpeedOfLight)
        items.push_back({QObject::tr("machine read bandwidth (speed of light)"), chart_colors::kSpeedOfLight, LegendItem::Dashed});
    return items;
}

constexpr int kSwatch = 18;      // swatch width, px
constexpr int kLegendGap = 14;   // between legend entries, px

// Legend entries flowed into rows no wider than `width`; returns the rows' item ranges.
std::vector<std::pair<size_t, size_t>> legend_rows(const std::vector<LegendItem>& items, const QFontMetrics& fm, int width) {
    std::vector<std::pair<size_t, size_t>> rows;
    size_t first = 0;
    int x = 0;
    for (size_t i = 0; i < items.size(); ++i) {
        const int w = kSwatch + 4 + fm.horizontalAdvance(items[i].text);
        if (i > first && x + kLegendGap + w > width) {
            rows.push_back({first, i});
            first = i;
            x = 0;
        }
        x += (i > first ? kLegendGap : 0) + w;
    }
    if (first < items.size()) rows.push_back({first, items.size()});
    return rows;
}

// A dashed horizontal line as solid runs: dashed pens are stroked segment by segment.
void dashed_hline(QPainter& p, int x0, int x1, int y, const QColor& color) {
    for (int x = x0; x < x1; x += 12) p.fillRect(QRect(x, y - 1, std::min(7, x1 - x), 2), color);
}

} // namespace

BandwidthChart::BandwidthChart(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);  // paintEvent fills every pixel
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

QString BandwidthChart::streamLabel(int stream) {
    return stream >= 0 && stream < kStreams ? QString::fromLatin1(kStreamLabels[stream]) : QString();
}

void BandwidthChart::setLayers(int layers) {
    layers = std::max(0, layers);
    if (layers == layers_) return;
    layers_ = layers;
    for (auto& values : bytes_) values.assign(size_t(layers), 0.0);
    achievedGBps_.assign(size_t(layers), 0.0);
    updateAxes();
    update();
}

void BandwidthChart::setData(const std::array<std::vector<double>, kStreams>& bytes, const QString& unit,
                             const std::vector<double>& achievedGBps) {
    const bool unitChanged = unit != unit_;
    bool changed = unitChanged;
    for (int s = 0; s < kStreams; ++s) {
        for (int l = 0; l < layers_; ++l) {
            const double v = size_t(l) < bytes[size_t(s)].size() ? bytes[size_t(s)][size_t(l)] : 0.0;
            changed |= v != bytes_[size_t(s)][size_t(l)];
            bytes_[size_t(s)][size_t(l)] = v;
        }
    }
    for (int l = 0; l < layers_; ++l) {
        const double v = size_t(l) < achievedGBps.size() ? achievedGBps[size_t(l)] : 0.0;
        changed |= v != achievedGBps_[size_t(l)];
        achievedGBps_[size_t(l)] = v;
    }
    unit_ = unit;
    if (!changed) return;  // nothing visible changed: skip the repaint
    const double bytesMax = bytesAxisMax_, rateMax = rateAxisMax_;
    updateAxes();
    // Same axes: only the plot (and the line markers' overhang) needs repainting.
    if (!unitChanged && bytesMax == bytesAxisMax_ && rateMax == rateAxisMax_) update(plotRect().adjusted(-4, -4, 4, 4));
    else update();
}

void BandwidthChart::setSpeedOfLight(double gbps) {
    gbps = std::max(0.0, gbps);
    if (gbps == speedOfLightGBps_) return;
    speedOfLightGBps_ = gbps;
    margins_ = {};  // the legend gains or loses an entry
    updateAxes();
    update();
}

double BandwidthChart::bytes(int stream, int layer) const {
    if (stream < 0 || stream >= kStreams || layer < 0 || layer >= layers_) return -1;
    return bytes_[size_t(stream)][size_t(layer)];
}

double BandwidthChart::achieved(int layer) const {
    return layer >= 0 && layer < layers_ ? achievedGBps_[size_t(layer)] : -1;
}

void BandwidthChart::updateAxes() {
    double maxTotal = 0, maxRate = speedOfLightGBps_;
    for (int l = 0; l < layers_; ++l) {
        double total = 0;
        for (const auto& values : bytes_) total += values[size_t(l)];
        maxTotal = std::max(maxTotal, total);
        maxRate = std::max(maxRate, achievedGBps_[size_t(l)]);
    }
    bytesAxisMax_ = detail::sticky_axis_max(bytesAxisMax_, maxTotal > 0 ? maxTotal * 1.1 : 1.0);
    rateAxisMax_ = detail::sticky_axis_max(rateAxisMax_, maxRate > 0 ? maxRate * 1.1 : 1.0);
}

QSize BandwidthChart::sizeHint() const { return QSize(640, 260); }
QSize BandwidthChart::minimumSizeHint() const { return QSize(240, 6 * fontMetrics().height()); }

// Title above; tick labels and a rotated axis title on both sides; layer labels, the axis title
// and the legend rows below. Measuring text shapes it, so the margins are kept until the font,
// the width or the legend changes.
QRect BandwidthChart::plotRect() const {
    if (margins_.isNull() || marginsWidth_ != width()) {
        const QFontMetrics fm = fontMetrics();
        const int side = fm.horizontalAdvance(QStringLiteral("0000.0")) + fm.height() + 14;
        const int rows = int(legend_rows(legend_items(speedOfLightGBps_ > 0), fm, std::max(1, width() - 16)).size());
        margins_ = QMargins(side, fm.height() + 12, side, 2 * (fm.height() + 4) + rows * (fm.height() + 4) + 6);
        marginsWidth_ = width();
    }
    return rect().marginsRemoved(margins_);
}

int BandwidthChart::layerAt(QPoint pos) const {
    const QRect p = plotRect();
    if (layers_ == 0 || p.width() <= 0 || pos.x() < p.left() || pos.x() > p.right() || pos.y() < p.top() ||
        pos.y() > p.bottom())
        return -1;
    return std::clamp(int(int64_t(pos.x() - p.left()) * layers_ / p.width()), 0, layers_ - 1);
}

QRect BandwidthChart::barRect(int layer) const {
    const QRect p = plotRect();
    const int x0 = p.left() + int(int64_t(layer) * p.width() / layers_);
    const int x1 = p.left() + int(int64_t(layer + 1) * p.width() / layers_);
    const int gap = std::max(2, (x1 - x0) * 2 / 5);
    return QRect(x0 + gap / 2, p.top(), std::max(1, x1 - x0 - gap), p.height());
}

QString BandwidthChart::toolTipAt(QPoint pos) const {
    const int layer = layerAt(pos);
    if (layer < 0) return {};
    QStringList parts;
    double total = 0;
    for (int s = 0; s < kStreams; ++s) {
        const double v = bytes_[size_t(s)][size_t(layer)];
        total += v;
        parts << tr("%1 %2").arg(streamLabel(s)).arg(v, 0, 'f', 2);
    }
    return tr("layer %1: %2 %3 per token (%4); achieved %5 GB/s")
        .arg(layer)
        .arg(total, 0, 'f', 2)
        .arg(unit_, parts.join(QStringLiteral(", ")))
        .arg(achievedGBps_[size_t(layer)], 0, 'f', 2);
}

void BandwidthChart::ensureStatic() {
    const qint64 paletteKey = palette().cacheKey();
    if (!static_.isNull() && staticSize_ == size() && staticPalette_ == paletteKey && staticLayers_ == layers_ &&
        staticUnit_ == unit_ && staticBytesMax_ == bytesAxisMax_ && staticRateMax_ == rateAxisMax_ &&
        staticSpeedOfLight_ == speedOfLightGBps_)
        return;
    staticSize_ = size();
    staticPalette_ = paletteKey;
    staticLayers_ = layers_;
    staticUnit_ = unit_;
    staticBytesMax_ = bytesAxisMax_;
    staticRateMax_ = rateAxisMax_;
    staticSpeedOfLight_ = speedOfLightGBps_;
    static_ = detail::widget_pixmap(this);
    QPainter p(&static_);
    p.fillRect(rect(), palette().base());
    const QFontMetrics fm = fontMetrics();
    const QColor text = palette().text().color();
    const QRect plot = plotRect();
    p.setPen(text);
    p.drawText(QRect(0, 2, width(), fm.height() + 6), Qt::AlignCenter, tr("Weight bytes read per token, by layer and stream"));
    if (plot.width() <= 0 || plot.height() <= 0) return;

    // Left axis: grid lines and labels at round steps; right axis: labels only.
    const double bytesStep = detail::nice_tick_step(bytesAxisMax_), rateStep = detail::nice_tick_step(rateAxisMax_);
    for (int i = 0; i * bytesStep <= bytesAxisMax_ * (1 + 1e-9); ++i) {
        const int y = plot.bottom() - int(std::lround(i * bytesStep / bytesAxisMax_ * plot.height()));
        p.setPen(QPen(i == 0 ? palette().mid().color() : palette().midlight().color(), 0));
        p.drawLine(plot.left(), y, plot.right(), y);
        p.setPen(text);
        p.drawText(QRect(0, y - fm.height() / 2, plot.left() - 6, fm.height()), Qt::AlignRight | Qt::AlignVCenter,
                   tick_label(i * bytesStep));
    }
    for (int i = 0; i * rateStep <= rateAxisMax_ * (1 + 1e-9); ++i) {
        const int y = plot.bottom() - int(std::lround(i * rateStep / rateAxisMax_ * plot.height()));
        p.drawText(QRect(plot.right() + 6, y - fm.height() / 2, width() - plot.right() - 6, fm.height()),
                   Qt::AlignLeft | Qt::AlignVCenter, tick_label(i * rateStep));
    }
    // Rotated axis titles at the outer edges.
    for (const auto& [title, x, angle] : {std::tuple{tr("%1 per token").arg(unit_), 2, -90},
                                          std::tuple{tr("GB/s"), width() - 2, 90}}) {
        p.save();
        p.translate(x, plot.center().y());
        p.rotate(angle);
        p.drawText(QRect(-plot.height() / 2, 0, plot.height(), fm.height()), Qt::AlignCenter, title);
        p.restore();
    }
    // Layer labels and the axis title below the plot.
    for (int l = 0; l < layers_; ++l) {
        const QRect bar = barRect(l);
        p.drawText(QRect(bar.center().x() - 30, plot.bottom() + 4, 60, fm.height()), Qt::AlignHCenter | Qt::AlignTop,
                   QString::number(l));
    }
    p.drawText(QRect(plot.left(), plot.bottom() + 8 + fm.height(), plot.width(), fm.height()), Qt::AlignCenter,
               tr("layer"));
    // Legend rows, centred.
    const std::vector<LegendItem> items = legend_items(speedOfLightGBps_ > 0);
    int y = plot.bottom() + 2 * (fm.height() + 4) + 6;
    for (const auto& [first, last] : legend_rows(items, fm, std::max(1, width() - 16))) {
        int rowWidth = 0;
        for (size_t i = first; i < last; ++i)
            rowWidth += (i > first ? kLegendGap : 0) + kSwatch + 4 + fm.horizontalAdvance(items[i].text);
        int x = (width() - rowWidth) / 2;
        for (size_t i = first; i < last; ++i) {
            const LegendItem& item = items[i];
            const int cy = y + fm.height() / 2;
            if (item.kind == LegendItem::Bar) p.fillRect(QRect(x + 4, cy - 5, kSwatch - 8, 10), item.color);
            else if (item.kind == LegendItem::Line) p.fillRect(QRect(x, cy - 1, kSwatch, 2), item.color);
            else dashed_hline(p, x, x + kSwatch, cy, item.color);
            p.setPen(text);
            p.drawText(QRect(x + kSwatch + 4, y, fm.horizontalAdvance(item.text) + 2, fm.height()),
                       Qt::AlignLeft | Qt::AlignVCenter, item.text);
            x += kSwatch + 4 + fm.horizontalAdvance(item.text) + kLegendGap;
        }
        y += fm.height() + 4;
    }
    if (speedOfLightGBps_ > 0) {
        const int ys = plot.bottom() - int(std::lround(speedOfLightGBps_ / rateAxisMax_ * plot.height()));
        dashed_hline(p, plot.left(), plot.right(), ys, chart_colors::kSpeedOfLight);
    }
}

void BandwidthChart::paintEvent(QPaintEvent*) {
    ensureStatic();
    QPainter p(this);
    p.drawPixmap(0, 0, static_);
    const QRect plot = plotRect();
    if (layers_ == 0 || plot.width() <= 0 || plot.height() <= 0) return;
    const double pxPerUnit = plot.height() / bytesAxisMax_;
    std::vector<QPointF> line;
    line.reserve(size_t(layers_));
    for (int l = 0; l < layers_; ++l) {
        const QRect bar = barRect(l);
        double sum = 0;
        int top = plot.bottom() + 1;
        for (int s = 0; s < kStreams; ++s) {
            sum += bytes_[size_t(s)][size_t(l)];
            const int y = plot.bottom() + 1 - int(std::lround(sum * pxPerUnit));
            if (y < top) p.fillRect(QRect(bar.left(), y, bar.width(), top - y), chart_colors::kStreams[size_t(s)]);
            top = std::min(top, y);
        }
        line.emplace_back(bar.center().x() + 0.5,
                          plot.bottom() - achievedGBps_[size_t(l)] / rateAxisMax_ * plot.height());
    }
    // Two one-pixel cosmetic polylines a pixel apart: the raster engine draws cosmetic lines
    // directly, while a 2-px pen is stroked into a path and filled (0.6 ms for six points).
    p.setRenderHint(QPainter::Antialiasing, true);
    p.setPen(QPen(chart_colors::kAchieved, 0));
    p.drawPolyline(line.data(), int(line.size()));
    p.translate(0, 1);
    p.drawPolyline(line.data(), int(line.size()));
    p.translate(0, -1);
    p.setRenderHint(QPainter::Antialiasing, false);
    for (const QPointF& pt : line) p.fillRect(QRectF(pt.x() - 2.5, pt.y() - 2.5, 5, 5).toAlignedRect(), chart_colors::kAchieved);
}

bool BandwidthChart::event(QEvent* event) {
    if (event->type() == QEvent::FontChange) {
        margins_ = {};
        static_ = {};
    }
    if (detail::handle_tool_tip(this, event)) return true;
    return QWidget::event(event);
}

} // namespace cflow::ui
