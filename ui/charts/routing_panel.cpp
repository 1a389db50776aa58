#include "cflow/ui/inspector/routing_panel.h"

#include <algorithm>

#include <QEvent>
#include <QFontMetrics>
#include <QLinearGradient>
#include <QLabel>
#include <QPainter>
#include <QRegion>
#include <QStackedLayout>
#include <QVBoxLayout>

#include "chart_widget.h"
#include "panel_hint.h"

namespace cflow::ui {
namespace {

constexpr int kMarginLeft = 34;   // room for layer labels
constexpr int kMarginTop = 16;    // room for column labels
constexpr int kMinCell = 6;
constexpr int kRoutingLegendGap = 4;     // pixels between the grid and its scale or legend, and between legend items
constexpr int kRoutingScaleMinBar = 40;  // a narrower gradient says nothing: the scale hides instead
constexpr int kRoutingScaleMaxBar = 200;

// Cells stretch to fill the widget; index of the cell containing coordinate v, or -1.
int cell_index(int v, int origin, int extent, int n) {
    if (n <= 0 || extent <= 0 || v < origin || v >= origin + extent) return -1;
    return std::min(n - 1, int((int64_t(v - origin) * n) / extent));
}
QRect cell_rect(const QRect& grid, int row, int col, int rows, int cols) {
    const int x0 = grid.left() + int(int64_t(col) * grid.width() / cols);
    const int x1 = grid.left() + int(int64_t(col + 1) * grid.width() / cols);
    const int y0 = grid.top() + int(int64_t(row) * grid.height() / rows);
    const int y1 = grid.top() + int(int64_t(row + 1) * grid.height() / rows);
    return QRect(QPoint(x0, y0), QPoint(x1 - 1, y1 - 1));
}

// `color` at opacity `alpha` composited over the opaque `base`: lets the per-frame cells be
// filled opaquely (no per-pixel blending) with the colour the translucent fill produced.
QRgb over(QRgb base, QRgb color, float alpha) {
    const int a = int(std::clamp(alpha, 0.0f, 1.0f) * 255.0f + 0.5f), b = 255 - a;
    return qRgb((qRed(color) * a + qRed(base) * b + 127) / 255, (qGreen(color) * a + qGreen(base) * b + 127) / 255,
                (qBlue(color) * a + qBlue(base) * b + 127) / 255);
}

// The corner above the layer numbers names the rows (the columns are named by the panel's titles).
// Left out where the font is too wide for the margin (an elided "lay…" says less than nothing).
void draw_layer_axis_label(QPainter& p, const QFontMetrics& fm) {
    const QString label = QObject::tr("layer");
    if (fm.horizontalAdvance(label) <= kMarginLeft - 4)
        p.drawText(QRect(0, 0, kMarginLeft - 4, kMarginTop), Qt::AlignRight | Qt::AlignVCenter, label);
}

// Where the heatmap's scale goes in the row under the grid: [label] 0% [gradient] 100%.
struct HeatmapScaleLayout {
    QRect label, zero, bar, full;  // all empty: no room
    QString labelText;             // the longest wording that fits; "" when none does
};

HeatmapScaleLayout heatmap_scale_layout(const QRect& row, const QFontMetrics& fm) {
    HeatmapScaleLayout out;
    const QString zero = QStringLiteral("0%"), full = QStringLiteral("100%");
    const int zeroW = fm.horizontalAdvance(zero), fullW = fm.horizontalAdvance(full);
    const int fixed = zeroW + fullW + 2 * kRoutingLegendGap;
    if (row.width() < fixed + kRoutingScaleMinBar) return out;
    int labelW = 0;
    for (const QString& wording : {QObject::tr("share of the window's tokens routed to the expert:"),
                                   QObject::tr("share of tokens routed:"), QObject::tr("tokens:")}) {
        const int w = fm.horizontalAdvance(wording) + kRoutingLegendGap;
        if (row.width() < fixed + kRoutingScaleMinBar + w) continue;
        out.labelText = wording;
        labelW = w;
        break;
    }
    const int barW = std::min(kRoutingScaleMaxBar, row.width() - fixed - labelW);
    int x = row.left();
    if (labelW > 0) {
        out.label = QRect(x, row.top(), labelW - kRoutingLegendGap, row.height());
        x += labelW;
    }
    out.zero = QRect(x, row.top(), zeroW, row.height());
    x += zeroW + kRoutingLegendGap;
    out.bar = QRect(x, row.top() + 2, barW, std::max(2, row.height() - 4));
    x += barW + kRoutingLegendGap;
    out.full = QRect(x, row.top(), fullW, row.height());
    return out;
}

} // namespace

QColor expert_color(uint32_t expert, uint32_t experts) {
    const int hue = experts == 0 ? 0 : int((uint64_t(expert) * 360) / experts) % 360;
    return QColor::fromHsv(hue, 200, 220);
}

// ---- ExpertHeatmap --------------------------------------------------------------------------

ExpertHeatmap::ExpertHeatmap(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);  // paintEvent fills every pixel: skip erasing the parent
    setMinimumSize(120, 80);
}

void ExpertHeatmap::setCounts(RoutingCounts counts) {
    const bool same = counts.layers == counts_.layers && counts.experts == counts_.experts &&
                      counts.tokens == counts_.tokens && counts.counts == counts_.counts;
    counts_ = std::move(counts);
    if (!same) update();  // nothing visible changed: skip the repaint
}

uint32_t ExpertHeatmap::count(int layer, int expert) const {
    if (layer < 0 || expert < 0 || layer >= rows() || expert >= columns()) return 0;
    return counts_.at(uint32_t(layer), uint32_t(expert));
}

int ExpertHeatmap::scaleHeight() const {
    // The cells keep their minimum size first: the scale goes when both do not fit.
    const QFontMetrics fm = fontMetrics();
    const int needed = fm.height() + kRoutingLegendGap;
    if (rows() == 0 || height() - kMarginTop - 2 - needed < rows() * kMinCell) return 0;
    const QRect row(kMarginLeft, 0, width() - kMarginLeft - 2, fm.height());
    return heatmap_scale_layout(row, fm).bar.isEmpty() ? 0 : needed;
}

QRect ExpertHeatmap::gridRect() const {
    // Cell geometry is asked for per cell and per frame: the scale's room is worked out once per size.
    if (layoutSize_ != size() || layoutRows_ != rows()) {
        layoutSize_ = size();
        layoutRows_ = rows();
        layoutScaleHeight_ = scaleHeight();
    }
    return rect().adjusted(kMarginLeft, kMarginTop, -2, -2 - layoutScaleHeight_);
}

QRect ExpertHeatmap::scaleBarRect() const {
    const QRect g = gridRect();
    if (layoutScaleHeight_ == 0) return {};
    const QFontMetrics fm = fontMetrics();
    return heatmap_scale_layout(QRect(g.left(), g.bottom() + 1 + kRoutingLegendGap, g.width(), fm.height()), fm).bar;
}

QRect ExpertHeatmap::cellRect(int layer, int expert) const {
    if (rows() == 0 || columns() == 0) return {};
    return cell_rect(gridRect(), layer, expert, rows(), columns());
}

std::optional<std::pair<int, int>> ExpertHeatmap::cellAt(QPoint pos) const {
    const QRect g = gridRect();
    const int layer = cell_index(pos.y(), g.top(), g.height(), rows());
    const int expert = cell_index(pos.x(), g.left(), g.width(), columns());
    if (layer < 0 || expert < 0) return std::nullopt;
    return std::make_pair(layer, expert);
}

QString ExpertHeatmap::cellToolTip(int layer, int expert) const {
    if (layer < 0 || expert < 0 || layer >= rows() || expert >= columns()) return {};
    const uint32_t n = count(layer, expert);
    const double share = counts_.tokens ? 100.0 * n / counts_.tokens : 0.0;
    return tr("Layer %1, expert %2: chosen for %3 of the last %4 tokens (%5%)")
        .arg(layer)
        .arg(expert)
        .arg(n)
        .arg(counts_.tokens)
        .arg(share, 0, 'f', 0);
}

QString ExpertHeatmap::toolTipAt(QPoint pos) const {
    const auto cell = cellAt(pos);
    if (cell) return cellToolTip(cell->first, cell->second);
    if (layoutScaleHeight_ > 0 && pos.y() > gridRect().bottom())
        return tr("Cell colour: the share of the last %1 tokens whose router chose that expert at that layer "
                  "(0%: none of them, 100%: every one)")
            .arg(counts_.tokens);
    return {};
}

QSize ExpertHeatmap::sizeHint() const {
    return QSize(kMarginLeft + std::max(8, columns()) * 22, kMarginTop + std::max(4, rows()) * 16);
}

void ExpertHeatmap::ensureStatic() {
    const qint64 paletteKey = palette().cacheKey();
    if (!static_.isNull() && staticSize_ == size() && staticRows_ == rows() && staticCols_ == columns() &&
        staticPalette_ == paletteKey)
        return;
    staticSize_ = size();
    staticRows_ = rows();
    staticCols_ = columns();
    staticPalette_ = paletteKey;
    static_ = detail::widget_pixmap(this);
    staticOnly_ = QRegion(rect());
    for (int l = 0; l < rows(); ++l)
        for (int e = 0; e < columns(); ++e) staticOnly_ -= QRegion(cellRect(l, e).adjusted(1, 1, 0, 0));
    QPainter p(&static_);
    p.fillRect(rect(), palette().base());
    if (rows() == 0 || columns() == 0) return;
    // Cell outlines: the per-frame fills cover only the cells' insides (cellRect less its
    // top/left outline), so the grid drawn here stays as it was drawn over each cell.
    p.setPen(palette().mid().color());
    p.setBrush(Qt::NoBrush);
    for (int l = 0; l < rows(); ++l)
        for (int e = 0; e < columns(); ++e) p.drawRect(cellRect(l, e));
    p.setPen(palette().text().color());
    const QRect g = gridRect();
    for (int l = 0; l < rows(); ++l) {
        const QRect r = cellRect(l, 0);
        p.drawText(QRect(0, r.top(), kMarginLeft - 4, r.height()), Qt::AlignRight | Qt::AlignVCenter, QString::number(l));
    }
    for (int e = 0; e < columns(); ++e) {
        const QRect r = cellRect(0, e);
        p.drawText(QRect(r.left(), 0, r.width(), g.top()), Qt::AlignCenter, QString::number(e));
    }
    const QFontMetrics fm = fontMetrics();
    draw_layer_axis_label(p, fm);
    const QRect bar = scaleBarRect();
    if (bar.isEmpty()) return;
    // The cells blend the hot colour over the base in proportion to the share (over()), which
    // is this gradient's linear interpolation.
    const HeatmapScaleLayout scale =
        heatmap_scale_layout(QRect(g.left(), g.bottom() + 1 + kRoutingLegendGap, g.width(), fm.height()), fm);
    if (!scale.label.isEmpty()) p.drawText(scale.label, Qt::AlignLeft | Qt::AlignVCenter, scale.labelText);
    p.drawText(scale.zero, Qt::AlignLeft | Qt::AlignVCenter, QStringLiteral("0%"));
    p.drawText(scale.full, Qt::AlignLeft | Qt::AlignVCenter, QStringLiteral("100%"));
    QLinearGradient gradient(bar.left(), 0, bar.right(), 0);
    gradient.setColorAt(0, palette().base().color());
    gradient.setColorAt(1, QColor(hotColor()));
    p.fillRect(bar, gradient);
    p.setPen(palette().mid().color());
    p.drawRect(bar.adjusted(-1, -1, 0, 0));
}

void ExpertHeatmap::paintEvent(QPaintEvent*) {
    ensureStatic();
    QPainter p(this);
    // Every cell is filled below, so only the outlines and labels come from the pixmap (a
    // full-widget blit was a third of this paint).
    p.setClipRegion(staticOnly_);
    p.drawPixmap(0, 0, static_);
    p.setClipping(false);
    if (rows() == 0 || columns() == 0) return;
    const double maxCount = std::max<double>(1.0, counts_.tokens);
    const QRgb base = palette().base().color().rgb(), hot = hotColor();
    for (int l = 0; l < rows(); ++l) {
        for (int e = 0; e < columns(); ++e) {
            const uint32_t n = count(l, e);
            p.fillRect(cellRect(l, e).adjusted(1, 1, 0, 0), QColor(over(base, hot, float(std::clamp(n / maxCount, 0.0, 1.0)))));
        }
    }
}

bool ExpertHeatmap::event(QEvent* event) {
    if (detail::handle_tool_tip(this, event)) return true;
    if (event->type() == QEvent::FontChange) {
        layoutSize_ = QSize();  // the scale's room depends on the text size
        static_ = QPixmap();
    }
    return QWidget::event(event);
}

// ---- TokenStrip ---------------------------------------------------------------------------

TokenStrip::TokenStrip(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setMinimumSize(120, 80);
}

void TokenStrip::setColumns(std::vector<Column> columns, uint32_t layers, uint32_t experts) {
    const bool sameRows = layers == layers_ && experts == experts_;  // the legend lists the experts
    columns_ = std::move(columns);
    layers_ = layers;
    if (experts != experts_ || expertRgb_.size() != experts) {
        expertRgb_.resize(experts);
        for (uint32_t e = 0; e < experts; ++e) expertRgb_[e] = expert_color(e, experts).rgb();
    }
    experts_ = experts;
    // A highlighted column's frame and label reach into the margins and move with the columns.
    if (sameRows && !highlighted_) update(gridRect());
    else update();
}

bool TokenStrip::highlightToken(uint32_t position) {
    if (highlighted_ != position) {
        highlighted_ = position;
        update();
    }
    return highlightedColumn() >= 0;
}

int TokenStrip::highlightedColumn() const {
    if (!highlighted_) return -1;
    for (size_t i = 0; i < columns_.size(); ++i)
        if (columns_[i].position == *highlighted_) return int(i);
    return -1;
}

TokenStrip::LegendLayout TokenStrip::legendLayout() const {
    LegendLayout out;
    const QFontMetrics fm = fontMetrics();
    const int line = fm.height();
    // The cells keep their minimum size first: the legend goes when both do not fit.
    if (rows() == 0 || experts_ == 0 || height() - kMarginTop - 2 - (line + kRoutingLegendGap) < rows() * kMinCell) return out;
    const QRect area(kMarginLeft, height() - 2 - line, width() - kMarginLeft - 2, line);
    const int prefixW = fm.horizontalAdvance(tr("expert:")) + kRoutingLegendGap;
    const int swatch = std::max(4, line - 4);
    const int step = swatch + 2 + fm.horizontalAdvance(QString::number(experts_ - 1)) + kRoutingLegendGap;
    const int noteW = kRoutingLegendGap + fm.horizontalAdvance(tr("paler: lower routing weight"));
    if (prefixW + int(experts_) * step <= area.width()) {
        out.swatchStep = step;
        out.showsWeightNote = prefixW + int(experts_) * step + noteW <= area.width();
    } else {
        // Too many experts to number: one hue bar from expert 0 to the last.
        const int ends = fm.horizontalAdvance(QStringLiteral("0")) + fm.horizontalAdvance(QString::number(experts_ - 1)) + 2 * kRoutingLegendGap;
        const int room = area.width() - prefixW - ends;
        if (room < kRoutingScaleMinBar) return out;
        const int barW = std::min(room, std::max<int>(kRoutingScaleMinBar, std::min<int>(kRoutingScaleMaxBar, int(experts_) * 2)));
        out.hueBar = QRect(area.left() + prefixW + fm.horizontalAdvance(QStringLiteral("0")) + kRoutingLegendGap, area.top() + 2, barW,
                           std::max(2, line - 4));
        out.showsWeightNote = out.hueBar.right() + ends + noteW <= area.right();
    }
    out.area = area;
    out.swatchesLeft = area.left() + prefixW;
    return out;
}

int TokenStrip::legendHeight() const { return legendLayout().area.isEmpty() ? 0 : fontMetrics().height() + kRoutingLegendGap; }

QRect TokenStrip::gridRect() const {
    // Cell geometry is asked for per cell and per frame: the legend's room is worked out once per shape.
    if (layoutSize_ != size() || layoutRows_ != rows() || layoutExperts_ != experts_) {
        layoutSize_ = size();
        layoutRows_ = rows();
        layoutExperts_ = experts_;
        layoutLegendHeight_ = legendHeight();
    }
    return rect().adjusted(kMarginLeft, kMarginTop, -2, -2 - layoutLegendHeight_);
}

QRect TokenStrip::legendRect() const { return legendLayout().area; }

QRect TokenStrip::legendSwatchRect(uint32_t expert) const {
    const LegendLayout l = legendLayout();
    if (l.area.isEmpty() || l.swatchStep == 0 || expert >= experts_) return {};
    const int swatch = std::max(4, l.area.height() - 4);
    return QRect(l.swatchesLeft + int(expert) * l.swatchStep, l.area.top() + (l.area.height() - swatch) / 2, swatch, swatch);
}

QRect TokenStrip::cellRect(int layer, int column) const {
    if (rows() == 0 || columns() == 0) return {};
    return cell_rect(gridRect(), layer, column, rows(), columns());
}

QString TokenStrip::toolTipAt(QPoint pos) const {
    const QRect g = gridRect();
    if (layoutLegendHeight_ > 0 && pos.y() > g.bottom())
        return tr("Each expert has its own colour; a cell is split into one band per expert the token used at that "
                  "layer, left to right in router order, paler where the routing weight is lower");
    const int layer = cell_index(pos.y(), g.top(), g.height(), rows());
    const int col = cell_index(pos.x(), g.left(), g.width(), columns());
    if (layer < 0 || col < 0) return {};
    const Column& c = columns_[size_t(col)];
    if (size_t(layer) >= c.layers.size()) return {};
    const Choice& choice = c.layers[size_t(layer)];
    QString tokenText = tr("token %1 at position %2").arg(c.token).arg(c.position);
    if (namer_) {
        const QString name = namer_(c.token);
        if (!name.isEmpty()) tokenText = tr("token %1 (id %2) at position %3").arg(name).arg(c.token).arg(c.position);
    }
    if (choice.nSelected == 0) return tr("%1, layer %2: no experts").arg(tokenText).arg(layer);
    // The cell is split into one band per chosen expert, left to right in router order.
    const QRect r = cellRect(layer, col);
    const int n = std::min<int>(choice.nSelected, int(kMaxTopK));
    const int band = std::clamp(int((int64_t(pos.x() - r.left()) * n) / std::max(1, r.width())), 0, n - 1);
    QString text = tr("%1, layer %2: expert %3, routing weight %4")
                       .arg(tokenText)
                       .arg(layer)
                       .arg(choice.experts[size_t(band)])
                       .arg(double(choice.weights[size_t(band)]), 0, 'f', 3);
    // Delayed models add this router's experts to a later layer's residual.
    if (choice.injectionLayer >= 0 && choice.injectionLayer != layer)
        text += tr(" (added at layer %1)").arg(choice.injectionLayer);
    QStringList all;
    for (int i = 0; i < n; ++i)
        all << tr("%1 (%2)").arg(choice.experts[size_t(i)]).arg(double(choice.weights[size_t(i)]), 0, 'f', 2);
    return text + QLatin1Char('\n') + tr("all experts of this cell: %1").arg(all.join(QStringLiteral(", ")));
}

QSize TokenStrip::sizeHint() const { return QSize(kMarginLeft + 64 * 8, kMarginTop + std::max(4, rows()) * 16); }

void TokenStrip::ensureStatic() {
    const qint64 paletteKey = palette().cacheKey();
    // Row labels depend on the row count and the grid's height only; the column count
    // (growing while the window fills) does not move them.
    if (!static_.isNull() && staticSize_ == size() && staticRows_ == rows() && staticExperts_ == experts_ &&
        staticPalette_ == paletteKey)
        return;
    staticSize_ = size();
    staticRows_ = rows();
    staticExperts_ = experts_;
    staticPalette_ = paletteKey;
    static_ = detail::widget_pixmap(this);
    QPainter p(&static_);
    p.fillRect(rect(), palette().base());
    if (rows() == 0) return;
    p.setPen(palette().text().color());
    const QRect g = gridRect();
    for (int l = 0; l < rows(); ++l) {
        const QRect r = cell_rect(g, l, 0, rows(), 1);
        p.drawText(QRect(0, r.top(), kMarginLeft - 4, r.height()), Qt::AlignRight | Qt::AlignVCenter, QString::number(l));
    }
    const QFontMetrics fm = fontMetrics();
    draw_layer_axis_label(p, fm);
    const LegendLayout legend = legendLayout();
    if (legend.area.isEmpty()) return;
    const QRect& a = legend.area;
    p.drawText(QRect(a.left(), a.top(), legend.swatchesLeft - a.left(), a.height()), Qt::AlignLeft | Qt::AlignVCenter, tr("expert:"));
    int noteLeft = 0;
    if (legend.swatchStep > 0) {
        for (uint32_t e = 0; e < experts_; ++e) {
            const QRect sw = legendSwatchRect(e);
            p.fillRect(sw, expert_color(e, experts_));
            p.drawText(QRect(sw.right() + 3, a.top(), legend.swatchStep, a.height()), Qt::AlignLeft | Qt::AlignVCenter,
                       QString::number(e));
        }
        noteLeft = legend.swatchesLeft + int(experts_) * legend.swatchStep;
    } else {
        const QRect& bar = legend.hueBar;
        p.drawText(QRect(legend.swatchesLeft, a.top(), bar.left() - legend.swatchesLeft, a.height()), Qt::AlignLeft | Qt::AlignVCenter,
                   QStringLiteral("0"));
        for (int x = 0; x < bar.width(); ++x)
            p.fillRect(QRect(bar.left() + x, bar.top(), 1, bar.height()),
                       expert_color(uint32_t(int64_t(x) * experts_ / bar.width()), experts_));
        const QString last = QString::number(experts_ - 1);
        p.drawText(QRect(bar.right() + 1 + kRoutingLegendGap, a.top(), fm.horizontalAdvance(last) + 1, a.height()),
                   Qt::AlignLeft | Qt::AlignVCenter, last);
        noteLeft = bar.right() + 1 + 2 * kRoutingLegendGap + fm.horizontalAdvance(last);
    }
    if (legend.showsWeightNote)
        p.drawText(QRect(noteLeft + kRoutingLegendGap, a.top(), a.right() - noteLeft, a.height()), Qt::AlignLeft | Qt::AlignVCenter,
                   tr("paler: lower routing weight"));
}

void TokenStrip::paintEvent(QPaintEvent*) {
    ensureStatic();
    QPainter p(this);
    if (rows() == 0 || columns() == 0) {
        p.fillRect(rect(), palette().base());
        return;
    }
    const QRect g = gridRect();
    // The cells below cover the grid: copy the cached labels and margins only around it (each
    // full-widget blit is a memcpy of the whole widget, a third of this paint's time).
    p.setClipRegion(QRegion(rect()).subtracted(QRegion(g)));
    p.drawPixmap(0, 0, static_);
    p.setClipping(false);
    // Every pixel row of a layer's band is the same: build it once and copy it down the band
    // (one drawImage instead of a fillRect per expert band, ~768 of them per frame).
    const QRgb base = palette().base().color().rgb();
    if (g.width() <= 0 || g.height() <= 0) return;
    if (cells_.size() != g.size()) cells_ = QImage(g.size(), QImage::Format_RGB32);
    cellLine_.resize(size_t(g.width()));
    const int nCols = columns(), nRows = rows(), gw = g.width(), gh = g.height();
    for (int l = 0; l < nRows; ++l) {
        std::fill(cellLine_.begin(), cellLine_.end(), base);
        for (int col = 0; col < nCols; ++col) {
            const Column& c = columns_[size_t(col)];
            if (size_t(l) >= c.layers.size()) continue;
            const Choice& choice = c.layers[size_t(l)];
            const int n = std::min<int>(choice.nSelected, int(kMaxTopK));
            if (n <= 0) continue;
            const int x0c = int(int64_t(col) * gw / nCols);
            const int wc = int(int64_t(col + 1) * gw / nCols) - x0c;  // == cellRect().width()
            for (int i = 0; i < n; ++i) {
                const int x0 = x0c + int(int64_t(i) * wc / n);
                const int x1 = std::min(gw, std::max(x0 + 1, x0c + int(int64_t(i + 1) * wc / n)));
                const uint32_t e = choice.experts[size_t(i)];
                const QRgb hue = e < expertRgb_.size() ? expertRgb_[e] : expert_color(e, experts_).rgb();
                const float alpha = std::clamp(0.35f + 0.65f * choice.weights[size_t(i)], 0.0f, 1.0f);
                std::fill(cellLine_.begin() + x0, cellLine_.begin() + x1, over(base, hue, alpha));
            }
        }
        const int y0 = int(int64_t(l) * gh / nRows), y1 = int(int64_t(l + 1) * gh / nRows);
        for (int y = y0; y < y1; ++y)
            std::copy(cellLine_.begin(), cellLine_.end(), reinterpret_cast<QRgb*>(cells_.scanLine(y)));
    }
    p.drawImage(g.topLeft(), cells_);
    const int hi = highlightedColumn();
    if (hi >= 0) {
        const QRect top = cellRect(0, hi), bottom = cellRect(rows() - 1, hi);
        p.setPen(QPen(palette().highlight().color(), 2));
        p.setBrush(Qt::NoBrush);
        p.drawRect(QRect(top.topLeft(), bottom.bottomRight()).adjusted(-1, -1, 1, 1));
        p.drawText(QRect(top.left() - 20, 0, top.width() + 40, kMarginTop), Qt::AlignCenter,
                   QString::number(columns_[size_t(hi)].position));
    }
}

bool TokenStrip::event(QEvent* event) {
    if (detail::handle_tool_tip(this, event)) return true;
    if (event->type() == QEvent::FontChange) {
        layoutSize_ = QSize();  // the legend's room depends on the text size
        static_ = QPixmap();
    }
    return QWidget::event(event);
}

// ---- RoutingPanel -------------------------------------------------------------------------

RoutingPanel::RoutingPanel(QWidget* parent) : QWidget(parent) {
    hint_ = detail::make_panel_hint(this);

    content_ = new QWidget(this);
    caption_ = new QLabel(content_);
    caption_->setObjectName(QStringLiteral("routingCaption"));
    caption_->setWordWrap(true);
    heatmap_ = new ExpertHeatmap(content_);
    strip_ = new TokenStrip(content_);
    auto* heatTitle = new QLabel(tr("Experts chosen per layer over the recent tokens (rows: layers, columns: experts)"), content_);
    auto* stripTitle = new QLabel(tr("Experts each recent token used (rows: layers, columns: tokens, newest right; "
                                     "a cell holds one band per chosen expert, left to right in router order)"),
                                  content_);
    // Wrapped, the titles do not set the panel's minimum width (a narrow dock keeps them whole).
    heatTitle->setWordWrap(true);
    stripTitle->setWordWrap(true);
    auto* layout = new QVBoxLayout(content_);
    layout->addWidget(caption_);
    layout->addWidget(heatTitle);
    layout->addWidget(heatmap_, 1);
    layout->addWidget(stripTitle);
    layout->addWidget(strip_, 1);

    stack_ = new QStackedLayout(this);
    stack_->addWidget(hint_);
    stack_->addWidget(content_);
    setInspectorGeometry({});
}

void RoutingPanel::setInspectorGeometry(const InspectorGeometry& geometry) {
    geometry_ = geometry;
    detail::show_content_or_hint(stack_, hint_, content_, geometry,
                                 tr("%1 is a dense model: every token reads all of its weights, so there is no expert "
                                    "routing to show. Open a mixture-of-experts model (the bundled default model is one) "
                                    "to see which experts each token uses."),
                                 tr("No expert routing recorded yet. Generate text with a mixture-of-experts model "
                                    "to see which experts each token uses."));
}

void RoutingPanel::setTokenNamer(TokenNamer namer) { strip_->setTokenNamer(std::move(namer)); }

void RoutingPanel::refresh(const TelemetryHistory& history) {
    if (geometry_.dense()) return;
    const uint32_t layers = geometry_.layers, experts = geometry_.experts;
    RoutingCounts counts = count_routing(history, layers, experts);
    const QString caption =
        history.window().empty()
            ? tr("No tokens yet: generate text to see which of the %1 experts (top-%2) each token uses, layer by layer.")
                  .arg(experts)
                  .arg(geometry_.topK)
            : tr("Top-%1 of %2 experts; window: the last %3 tokens. Hover a cell for details.")
                  .arg(geometry_.topK)
                  .arg(experts)
                  .arg(history.windowTokens());
    if (caption_->text() != caption) caption_->setText(caption);  // setText relayouts even for the same text
    heatmap_->setCounts(std::move(counts));

    std::vector<TokenStrip::Column> columns;
    columns.reserve(history.window().size());
    for (const TokenTelemetry& t : history.window()) {
        TokenStrip::Column c;
        c.position = t.position;
        c.token = t.token;
        c.layers.resize(layers);
        for (const LayerRecord& r : t.layers) {
            if (r.layer >= layers) continue;
            TokenStrip::Choice& choice = c.layers[r.layer];
            choice.nSelected = std::min<uint8_t>(r.nSelected, uint8_t(kMaxTopK));
            choice.experts = r.experts;
            choice.weights = r.expertWeights;
            choice.injectionLayer = r.injectionLayer;
        }
        columns.push_back(std::move(c));
    }
    strip_->setColumns(std::move(columns), layers, experts);
}

void RoutingPanel::highlightToken(uint32_t position) { strip_->highlightToken(position); }

bool RoutingPanel::showingHint() const { return stack_->currentWidget() == hint_; }
QString RoutingPanel::hintText() const { return hint_->text(); }

} // namespace cflow::ui
