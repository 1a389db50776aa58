#include "cflow/ui/inspector/stall_panel.h"

#include <algorithm>
#include <cmath>

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QEvent>
#include <QHelpEvent>
#include <QLabel>
#include <QPainter>
#include <QPainterPath>
#include <QStackedBarSeries>
#include <QStackedLayout>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>

#include "label_box.h"
#include "panel_hint.h"

namespace cflow::ui {
namespace {

// Smallest of 1, 2, 2.5, 5 x 10^k at or above value (> 0).
double nice_ceiling(double value) {
    const double decade = std::pow(10.0, std::floor(std::log10(value)));
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
        if (m * decade >= value * (1 - 1e-12)) return m * decade;
    return 10.0 * decade;
}

constexpr int kLaneLabelWidth = 34;
const QColor kComputeColor(0x4e, 0x79, 0xa7);
const QColor kStallColor(0xe1, 0x57, 0x59);
const QColor kMarkerColor(0x59, 0xa1, 0x4f);

// QLabel::setText relayouts the panel even for the same text.
void setTextIfChanged(QLabel* label, const QString& text) {
    if (label->text() != text) label->setText(text);
}

} // namespace

// ---- StallTimeline ----------------------------------------------------------------------

StallTimeline::StallTimeline(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);  // paintEvent fills every pixel: skip erasing the parent
    setMinimumSize(160, 90);
}

void StallTimeline::setTokens(const std::vector<const TokenTelemetry*>& tokens, uint32_t layers, bool markDelays) {
    segments_.clear();
    markers_.clear();
    tokenStartsUs_.clear();
    layers_ = layers;
    tokens_ = int(tokens.size());
    // Layers of a token run one after another; tokens follow each other. The LM head's time
    // (totalUs minus the layers) is left as a gap so the lanes line up with wall time.
    double clockUs = 0;
    for (const TokenTelemetry* t : tokens) {
        tokenStartsUs_.push_back(clockUs);
        double layersUs = 0;
        for (const LayerRecord& r : t->layers) {
            if (r.layer >= layers) continue;
            Segment s;
            s.position = t->position;
            s.layer = r.layer;
            s.startUs = clockUs + layersUs;
            s.computeUs = std::max(0.0f, r.computeUs);
            s.expertWaitUs = std::max(0.0f, r.expertWaitUs);
            s.injectionLayer = r.injectionLayer;
            layersUs += s.computeUs + s.expertWaitUs;
            segments_.push_back(s);
            if (markDelays && r.nSelected > 0 && r.injectionLayer > int(r.layer) && uint32_t(r.injectionLayer) < layers)
                markers_.push_back({t->position, r.layer, uint32_t(r.injectionLayer)});
        }
        clockUs += std::max(double(t->totalUs), layersUs);
    }
    totalUs_ = clockUs;
    update();
}

QRect StallTimeline::plotRect() const { return rect().adjusted(kLaneLabelWidth, 4, -4, -4); }

QRectF StallTimeline::segmentRect(const Segment& s) const {
    const QRect p = plotRect();
    if (layers_ == 0 || totalUs_ <= 0) return {};
    const double laneH = double(p.height()) / layers_;
    const double x0 = p.left() + s.startUs / totalUs_ * p.width();
    const double w = (s.computeUs + s.expertWaitUs) / totalUs_ * p.width();
    return QRectF(x0, p.top() + s.layer * laneH + 1, std::max(1.0, w), std::max(1.0, laneH - 2));
}

QString StallTimeline::toolTipAt(QPoint pos) const {
    for (const Segment& s : segments_) {
        const QRectF r = segmentRect(s);
        if (pos.x() < r.left() || pos.x() > r.right() || pos.y() < r.top() || pos.y() > r.bottom()) continue;
        QString text = tr("token at position %1, layer %2: compute %3 µs, expert wait %4 µs")
                           .arg(s.position)
                           .arg(s.layer)
                           .arg(s.computeUs, 0, 'f', 1)
                           .arg(s.expertWaitUs, 0, 'f', 1);
        if (s.injectionLayer > int(s.layer)) text += tr("; its experts are added at layer %1").arg(s.injectionLayer);
        return text;
    }
    return {};
}

QSize StallTimeline::sizeHint() const { return QSize(480, std::max(4, lanes()) * 18 + 8); }

void StallTimeline::ensureStatic() {
    const qint64 paletteKey = palette().cacheKey();
    if (!static_.isNull() && staticSize_ == size() && staticLayers_ == layers_ && staticPalette_ == paletteKey) return;
    staticSize_ = size();
    staticLayers_ = layers_;
    staticPalette_ = paletteKey;
    const qreal dpr = devicePixelRatioF();
    static_ = QPixmap(size() * dpr);
    static_.setDevicePixelRatio(dpr);
    QPainter p(&static_);
    p.fillRect(rect(), palette().base());
    if (layers_ == 0) return;
    const QRect plot = plotRect();
    const double laneH = double(plot.height()) / layers_;
    p.setPen(palette().text().color());
    for (uint32_t l = 0; l < layers_; ++l)
        p.drawText(QRectF(0, plot.top() + l * laneH, kLaneLabelWidth - 4, laneH), Qt::AlignRight | Qt::AlignVCenter,
                   QString::number(l));
}

void StallTimeline::paintEvent(QPaintEvent*) {
    QPainter p(this);
    if (layers_ == 0 || segments_.empty()) {
        p.fillRect(rect(), palette().base());
        return;
    }
    ensureStatic();  // background and lane labels
    p.drawPixmap(0, 0, static_);
    const QRect plot = plotRect();
    p.setPen(QPen(palette().mid().color(), 1, Qt::DotLine));
    for (double start : tokenStartsUs_) {
        const double x = plot.left() + start / totalUs_ * plot.width();
        p.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
    }
    p.setPen(Qt::NoPen);
    for (const Segment& s : segments_) {
        const QRectF r = segmentRect(s);
        const double total = s.computeUs + s.expertWaitUs;
        const double computeW = total > 0 ? r.width() * s.computeUs / total : r.width();
        p.fillRect(QRectF(r.left(), r.top(), computeW, r.height()), kComputeColor);
        if (s.expertWaitUs > 0) p.fillRect(QRectF(r.left() + computeW, r.top(), r.width() - computeW, r.height()), kStallColor);
    }
    // Routing layer -> injection layer: from the end of the routing layer to the start of the
    // layer where the experts' output joins the residual, within the same token.
    p.setPen(QPen(kMarkerColor, 1.5));
    p.setRenderHint(QPainter::Antialiasing, true);
    for (const Marker& m : markers_) {
        const Segment* from = nullptr;
        const Segment* to = nullptr;
        for (const Segment& s : segments_) {
            if (s.position != m.position) continue;
            if (s.layer == m.fromLayer) from = &s;
            if (s.layer == m.toLayer) to = &s;
        }
        if (!from || !to) continue;
        const QRectF a = segmentRect(*from), b = segmentRect(*to);
        const QPointF start(a.right(), a.center().y()), end(b.left(), b.center().y());
        p.drawLine(start, end);
        QPainterPath head;
        head.moveTo(end);
        head.lineTo(end + QPointF(-5, -3));
        head.lineTo(end + QPointF(-5, 3));
        head.closeSubpath();
        p.fillPath(head, kMarkerColor);
    }
}

bool StallTimeline::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const QString text = toolTipAt(help->pos());
        if (text.isEmpty()) QToolTip::hideText();
        else QToolTip::showText(help->globalPos(), text, this);
        return true;
    }
    return QWidget::event(event);
}

// ---- StallPanel ---------------------------------------------------------------------------

StallPanel::StallPanel(QWidget* parent) : QWidget(parent) {
    hint_ = new QLabel(this);
    hint_->setWordWrap(true);
    hint_->setAlignment(Qt::AlignCenter);
    hint_->setMargin(16);

    content_ = new QWidget(this);
    auto* title = new QLabel(tr("Last %1 tokens: compute (blue) and waiting for expert weights (red) per layer; "
                                "green arrows: routing layer → layer its experts are added to")
                                 .arg(kTimelineTokens),
                             content_);
    title->setWordWrap(true);
    timeline_ = new StallTimeline(content_);
    summary_ = new QLabel(content_);
    summary_->setWordWrap(true);
    auto* summaryBox = new detail::LabelBox(summary_, content_);

    chart_ = new QChart;
    chart_->setTitle(tr("Per token: compute vs expert-wait stall (ms)"));
    chart_->setAnimationOptions(QChart::NoAnimation);
    chart_->legend()->setAlignment(Qt::AlignBottom);
    bars_ = new QStackedBarSeries(chart_);
    compute_ = new QBarSet(tr("compute"));
    compute_->setColor(kComputeColor);
    stall_ = new QBarSet(tr("expert wait"));
    stall_->setColor(kStallColor);
    bars_->append(compute_);
    bars_->append(stall_);
    chart_->addSeries(bars_);
    tokenAxis_ = new QBarCategoryAxis(chart_);
    tokenAxis_->setTitleText(tr("tokens ago (0 = newest)"));
    msAxis_ = new QValueAxis(chart_);
    msAxis_->setTitleText(tr("ms"));
    chart_->addAxis(tokenAxis_, Qt::AlignBottom);
    chart_->addAxis(msAxis_, Qt::AlignLeft);
    bars_->attachAxis(tokenAxis_);
    bars_->attachAxis(msAxis_);
    view_ = new QChartView(chart_, content_);
    view_->setMinimumHeight(180);

    auto* layout = new QVBoxLayout(content_);
    layout->addWidget(title);
    layout->addWidget(timeline_, 1);
    layout->addWidget(summaryBox);
    layout->addWidget(view_, 1);

    stack_ = new QStackedLayout(this);
    stack_->addWidget(hint_);
    stack_->addWidget(content_);
    setInspectorGeometry({});
}

void StallPanel::setInspectorGeometry(const InspectorGeometry& geometry) {
    geometry_ = geometry;
    detail::show_content_or_hint(stack_, hint_, content_, geometry,
                                 tr("%1 is a dense model: it has no expert weights to fetch, so there are no expert-wait "
                                    "stalls to overlap. Open a mixture-of-experts model (the bundled default model is one) "
                                    "to see how delayed experts hide their loading behind compute."),
                                 tr("No expert activity recorded yet. Generate text with a mixture-of-experts model to see "
                                    "compute vs expert-wait stalls per layer."));
}

void StallPanel::refresh(const TelemetryHistory& history) {
    if (geometry_.dense()) return;
    const auto& w = history.window();
    std::vector<const TokenTelemetry*> recent;
    for (size_t i = w.size() > kTimelineTokens ? w.size() - kTimelineTokens : 0; i < w.size(); ++i) recent.push_back(&w[i]);
    timeline_->setTokens(recent, geometry_.layers, geometry_.delayed());

    // The bars are a fixed row of kTotalsTokens slots, newest on the right, updated in place:
    // changing categories or set sizes makes QtCharts rebuild its items, too slow at 30 Hz.
    const std::vector<TokenStall> totals = token_stalls(history, kTotalsTokens);
    if (tokenAxis_->count() != int(kTotalsTokens)) {
        QStringList categories;
        for (size_t i = 0; i < kTotalsTokens; ++i) categories << QString::number(int(i) - int(kTotalsTokens) + 1);
        tokenAxis_->clear();
        tokenAxis_->append(categories);
        compute_->remove(0, compute_->count());
        stall_->remove(0, stall_->count());
        for (size_t i = 0; i < kTotalsTokens; ++i) {
            compute_->append(0.0);
            stall_->append(0.0);
        }
    }
    double maxMs = 0, sumCompute = 0, sumStall = 0;
    const size_t offset = kTotalsTokens - totals.size();
    for (size_t i = 0; i < kTotalsTokens; ++i) {
        const TokenStall* s = i >= offset ? &totals[i - offset] : nullptr;
        const double computeMs = s ? s->computeUs / 1000.0 : 0.0, stallMs = s ? s->expertWaitUs / 1000.0 : 0.0;
        if (compute_->at(int(i)) != computeMs) compute_->replace(int(i), computeMs);
        if (stall_->at(int(i)) != stallMs) stall_->replace(int(i), stallMs);
        maxMs = std::max(maxMs, computeMs + stallMs);
        if (s) {
            sumCompute += s->computeUs;
            sumStall += s->expertWaitUs;
        }
    }
    // A "nice" ceiling (1, 2, 2.5, 5 x 10^k) changes only when the data crosses a step: a new range
    // every frame made QtCharts relayout the axis each time (~2 ms per frame, cflow_bench_inspector).
    const double axisMax = nice_ceiling(maxMs > 0 ? maxMs * 1.1 : 1.0);
    if (msAxis_->max() != axisMax) msAxis_->setRange(0, axisMax);

    shownTokens_ = totals.size();
    if (totals.empty()) {
        setTextIfChanged(summary_, tr("Generate text to see where each token's time goes."));
        return;
    }
    const double all = sumCompute + sumStall;
    setTextIfChanged(summary_, tr("Last %1 tokens: %2 ms compute, %3 ms waiting for experts (%4% of layer time stalled)%5.")
                          .arg(totals.size())
                          .arg(sumCompute / 1000.0, 0, 'f', 2)
                          .arg(sumStall / 1000.0, 0, 'f', 2)
                          .arg(all > 0 ? 100.0 * sumStall / all : 0.0, 0, 'f', 1)
                          .arg(geometry_.delayed() ? tr("; delays: dense %1, expert %2 layers")
                                                         .arg(geometry_.denseDelay)
                                                         .arg(geometry_.expertDelay)
                                                   : QString()));
}

int StallPanel::totalsBarCount() const { return int(tokenAxis_->count()); }

size_t StallPanel::totalsTokenCount() const { return shownTokens_; }

double StallPanel::totalsValue(int set, int token) const {
    const QBarSet* s = set == 0 ? compute_ : stall_;
    return token >= 0 && token < s->count() ? s->at(token) : -1;
}

bool StallPanel::showingHint() const { return stack_->currentWidget() == hint_; }
QString StallPanel::hintText() const { return hint_->text(); }
QString StallPanel::summaryText() const { return summary_->text(); }

} // namespace cflow::ui
