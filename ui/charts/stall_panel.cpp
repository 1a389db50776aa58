#include "cflow/ui/inspector/stall_panel.h"

#include <algorithm>
#include <cmath>

#include <QButtonGroup>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QRegion>
#include <QStackedLayout>
#include <QToolButton>
#include <QVBoxLayout>

#include "cflow/ui/inspector/stall_totals_chart.h"
#include "chart_colors.h"
#include "chart_widget.h"
#include "label_box.h"
#include "panel_hint.h"
#include "throttled_text.h"

namespace cflow::ui {
namespace {

constexpr int kLaneLabelWidth = 34;
using chart_colors::kCompute;
using chart_colors::kMarker;
using chart_colors::kStall;


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
    const bool sameLanes = layers == layers_;
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
    if (sameLanes) update(plotRect());  // segments, boundaries and arrows stay inside the plot
    else update();
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
    static_ = detail::widget_pixmap(this);
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
    if (layers_ == 0) {
        p.fillRect(rect(), palette().base());
        return;
    }
    ensureStatic();  // background and lane labels
    if (segments_.empty()) {
        // No token yet (a new conversation or model): the lanes are labelled all the same.
        p.drawPixmap(0, 0, static_);
        return;
    }
    const QRect plot = plotRect();
    // Lane labels from the cache, the plot filled plainly: a full-widget blit costs a memcpy of
    // the widget per frame. Token boundaries are solid light lines: dashed pens are stroked
    // segment by segment, several times slower.
    p.setClipRegion(QRegion(rect()).subtracted(QRegion(plot)));
    p.drawPixmap(0, 0, static_);
    p.setClipping(false);
    p.fillRect(plot, palette().base());
    // Whole-pixel rects take the raster engine's solid-fill path; fractional ones are rasterised.
    const QColor boundary = palette().midlight().color();
    for (double start : tokenStartsUs_) {
        const int x = int(plot.left() + start / totalUs_ * plot.width());
        p.fillRect(QRect(x, plot.top(), 1, plot.height()), boundary);
    }
    for (const Segment& s : segments_) {
        const QRectF r = segmentRect(s);
        const double total = s.computeUs + s.expertWaitUs;
        const int left = int(std::lround(r.left())), right = std::max(left + 1, int(std::lround(r.right())));
        const int split = total > 0 ? left + int(std::lround((right - left) * s.computeUs / total)) : right;
        const int top = int(std::lround(r.top())), height = std::max(1, int(std::lround(r.height())));
        if (split > left) p.fillRect(QRect(left, top, split - left, height), kCompute);
        if (right > split) p.fillRect(QRect(split, top, right - split, height), kStall);
    }
    // Routing layer -> injection layer: from the end of the routing layer to the start of the
    // layer where the experts' output joins the residual, within the same token.
    // A cosmetic pen (width 0: one device pixel) is drawn by the fast line rasteriser; wider pens
    // go through the path stroker.
    p.setPen(QPen(kMarker, 0));
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
        // The arrowhead as three short vertical runs: a filled polygon goes through the path
        // rasteriser (most of this paint's time with a dozen arrows).
        const QPoint tip = end.toPoint();
        for (int dx = 1; dx <= 5; dx += 2) p.fillRect(QRect(tip.x() - dx - 1, tip.y() - (dx + 1) / 2, 2, dx + 1), kMarker);
    }
}

bool StallTimeline::event(QEvent* event) {
    if (detail::handle_tool_tip(this, event)) return true;
    return QWidget::event(event);
}

// ---- StallPanel ---------------------------------------------------------------------------

StallPanel::StallPanel(QWidget* parent) : QWidget(parent) {
    hint_ = detail::make_panel_hint(this);

    content_ = new QWidget(this);
    auto* title = new QLabel(tr("Last %1 tokens: compute (blue) and waiting for expert weights (red) per layer; "
                                "green arrows: routing layer → layer its experts are added to")
                                 .arg(kTimelineTokens),
                             content_);
    title->setWordWrap(true);
    timeline_ = new StallTimeline(content_);
    summary_ = new QLabel(content_);
    summary_->setObjectName(QStringLiteral("stallSummary"));
    summary_->setWordWrap(true);
    summaryText_ = std::make_unique<detail::ThrottledText>(summary_);
    auto* summaryBox = new detail::LabelBox(summary_, content_);

    totals_ = new StallTotalsChart(int(kTotalsTokens), content_);
    totals_->setMinimumHeight(96);

    // The paper's A/B (5.14) on the user's own conversation: switch arms between replies and the
    // per-arm figures below accumulate side by side.
    auto* armRow = new QHBoxLayout;
    armRow->addWidget(new QLabel(tr("Expert reads:"), content_));
    armButtons_ = new QButtonGroup(this);
    armButtons_->setExclusive(true);
    const struct {
        ExpertFetch fetch;
        const char* name;
        QString tip;
    } arms[] = {{ExpertFetch::Mapped, "Mapped", tr("Experts through the page cache (memory-mapped file)")},
                {ExpertFetch::Sync, "Sync", tr("Direct I/O, waited for at the routing layer: the stall to compare with")},
                {ExpertFetch::Staged, "Staged", tr("Direct I/O issued at the routing layer, awaited where the experts are added")}};
    for (const auto& arm : arms) {
        auto* button = new QToolButton(content_);
        button->setText(QString::fromLatin1(arm.name).toLower());
        button->setObjectName(QStringLiteral("arm") + QString::fromLatin1(arm.name));
        button->setAccessibleName(tr("Expert reads: %1").arg(QString::fromLatin1(arm.name).toLower()));
        button->setToolTip(arm.tip + tr(". The next reply uses it."));
        button->setCheckable(true);
        armButtons_->addButton(button, int(arm.fetch));
        armRow->addWidget(button);
    }
    armRow->addStretch(1);
    armButtons_->button(int(ExpertFetch::Mapped))->setChecked(true);
    connect(armButtons_, &QButtonGroup::idClicked, this,
            [this](int id) { emit expertFetchRequested(static_cast<ExpertFetch>(id)); });
    arms_ = new QLabel(content_);
    arms_->setObjectName(QStringLiteral("armFigures"));
    arms_->setWordWrap(true);
    armsText_ = std::make_unique<detail::ThrottledText>(arms_);

    auto* layout = new QVBoxLayout(content_);
    // The summary first: before any token it is the panel's explanation, and a short dock
    // shows the top of the panel.
    layout->addWidget(summaryBox);
    layout->addLayout(armRow);
    layout->addWidget(new detail::LabelBox(arms_, content_));
    layout->addWidget(title);
    layout->addWidget(timeline_, 1);
    layout->addWidget(totals_, 1);

    stack_ = new QStackedLayout(this);
    stack_->addWidget(hint_);
    stack_->addWidget(content_);
    setInspectorGeometry({});
}

StallPanel::~StallPanel() = default;

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

    refreshArms(history);
    const std::vector<TokenStall> totals = token_stalls(history, kTotalsTokens);
    totals_->setTotals(totals);
    double sumCompute = 0, sumStall = 0;
    for (const TokenStall& s : totals) {
        sumCompute += s.computeUs;
        sumStall += s.expertWaitUs;
    }
    if (totals.empty()) {
        summaryText_->setText(tr("Generate text to see where each token's time goes."));
        return;
    }
    const double all = sumCompute + sumStall;
    summaryText_->setText(tr("Last %1 tokens: %2 ms compute, %3 ms waiting for experts (%4% of layer time stalled)%5.")
                          .arg(totals.size())
                          .arg(sumCompute / 1000.0, 0, 'f', 2)
                          .arg(sumStall / 1000.0, 0, 'f', 2)
                          .arg(all > 0 ? 100.0 * sumStall / all : 0.0, 0, 'f', 1)
                          .arg(geometry_.delayed() ? tr("; delays: dense %1, expert %2 layers")
                                                         .arg(geometry_.denseDelay)
                                                         .arg(geometry_.expertDelay)
                                                   : QString()));
}

void StallPanel::refreshArms(const TelemetryHistory& history) {
    const ArmTotals& mapped = history.armTotals(size_t(ExpertFetch::Mapped));
    const ArmTotals& sync = history.armTotals(size_t(ExpertFetch::Sync));
    const ArmTotals& staged = history.armTotals(size_t(ExpertFetch::Staged));
    QStringList lines;
    for (const auto& [fetch, arm] : {std::pair{ExpertFetch::Mapped, &mapped}, {ExpertFetch::Sync, &sync}, {ExpertFetch::Staged, &staged}}) {
        if (arm->tokens == 0) continue;
        QString line = tr("%1: %2 tokens, %3 ms/token (compute %4 ms, expert wait %5 ms)")
                           .arg(QString::fromLatin1(expert_fetch_name(fetch).data()))
                           .arg(arm->tokens)
                           .arg(arm->msPerToken(), 0, 'f', 2)
                           .arg(arm->computeMsPerToken(), 0, 'f', 2)
                           .arg(arm->stallMsPerToken(), 0, 'f', 2);
        if (arm->cacheHits + arm->cacheMisses > 0) line += tr(", cache %1% hits").arg(100.0 * arm->hitRate(), 0, 'f', 1);
        lines << line;
    }
    if (sync.tokens > 0 && staged.tokens > 0 && sync.stallUs > 0) {
        const double hidden = 1.0 - staged.stallMsPerToken() / sync.stallMsPerToken();
        QString line = hidden >= 0 ? tr("Staged hides %1% of sync's expert wait").arg(100.0 * hidden, 0, 'f', 1)
                                   : tr("Staged waits %1% longer than sync for its experts").arg(-100.0 * hidden, 0, 'f', 1);
        line += tr(" and runs at %1× sync's speed").arg(sync.msPerToken() / std::max(1e-9, staged.msPerToken()), 0, 'f', 2);
        // Without an expert delay each expert is needed right after its routing: there is no
        // compute to read it behind, so the overlap model's prediction does not apply.
        const bool no_overlap = geometry_.fromModel && !geometry_.dense() && geometry_.expertDelay == 0;
        if (no_overlap) {
            line += tr("; this model uses each expert right after routing it (no expert delay), so staged reads have no "
                       "compute to overlap and cannot beat sync");
        } else if (mapped.tokens > 0) {
            // The paper's model with C the mapped step and IO sync's wait.
            const double c = mapped.msPerToken(), io = sync.stallMsPerToken();
            line += tr("; (C+IO)/max(C,IO) predicts %1× (C = mapped step, IO = sync's wait)")
                        .arg((c + io) / std::max({c, io, 1e-9}), 0, 'f', 2);
        }
        lines << line + QLatin1Char('.');
    } else {
        lines << tr("Switch the arm above between replies to compare: each arm's figures add up over this conversation.");
    }
    armsText_->setText(lines.join(QLatin1Char('\n')));
}

void StallPanel::setExpertFetch(ExpertFetch fetch) {
    if (QAbstractButton* button = armButtons_->button(int(fetch))) button->setChecked(true);
}

ExpertFetch StallPanel::checkedExpertFetch() const { return static_cast<ExpertFetch>(armButtons_->checkedId()); }

QString StallPanel::armsText() const { return armsText_->text(); }

int StallPanel::totalsBarCount() const { return totals_->slotCount(); }

size_t StallPanel::totalsTokenCount() const { return size_t(totals_->filledSlots()); }

double StallPanel::totalsValue(int set, int token) const {
    return set == 0 ? totals_->computeMs(token) : totals_->stallMs(token);
}

bool StallPanel::showingHint() const { return stack_->currentWidget() == hint_; }
QString StallPanel::hintText() const { return hint_->text(); }
QString StallPanel::summaryText() const { return summaryText_->text(); }

} // namespace cflow::ui
