#include "cflow/ui/context_gauge.h"

#include <algorithm>

#include <QPainter>
#include <QPaintEvent>

namespace cflow::ui {
namespace {

// The prompt in the palette's highlight, the reply in green, free space in the base colour.
const QColor kGaugeReplyColor(0x2e, 0x9e, 0x5b);
constexpr int kGaugeMinWidthPx = 140;

QString gauge_policy_text(ContextPolicy policy) {
    switch (policy) {
    case ContextPolicy::Stop:
        return ContextGauge::tr("When it is full the reply stops (policy: Stop at the limit).");
    case ContextPolicy::DropOldest:
        return ContextGauge::tr("When it is full the oldest turns are dropped and the reply goes on "
                                "(policy: Drop oldest turns; the system prompt stays).");
    case ContextPolicy::SlidingWindow:
        return ContextGauge::tr("When it is full the oldest tokens slide out and the reply goes on "
                                "(policy: Sliding window; the system prompt stays).");
    }
    return {};
}

} // namespace

ContextGauge::ContextGauge(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("contextGauge"));
    setAccessibleName(tr("Context used"));
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    refresh();
}

void ContextGauge::setUsage(int promptTokens, int replyTokens, int contextTokens) {
    promptTokens_ = promptTokens;
    replyTokens_ = std::max(0, replyTokens);
    contextTokens_ = std::max(0, contextTokens);
    refresh();
}

void ContextGauge::setPolicy(ContextPolicy policy) {
    policy_ = policy;
    refresh();
}

void ContextGauge::setCountedByServer(bool byServer) {
    if (byServer == countedByServer_) return;
    countedByServer_ = byServer;
    refresh();
}

void ContextGauge::refresh() {
    if (countedByServer_) {
        // The server's context size is not known here: a figure without a limit, not a full gauge.
        text_ = promptTokens_ + replyTokens_ > 0
                    ? tr("Context: %1 tokens (the server's count after the last reply)").arg(promptTokens_ + replyTokens_)
                    : tr("Context: counted by the server");
        const QString tip = tr("A server writes the replies: it renders the prompt and counts its tokens, and its context "
                               "size is not known here. After each reply the gauge shows the server's usage (prompt + reply).");
        setToolTip(tip);
        setAccessibleDescription(tip);
        if (const int hintWidth = sizeHint().width(); hintWidth != hintWidthPx_) {
            hintWidthPx_ = hintWidth;
            updateGeometry();
        }
        update();
        return;
    }
    if (contextTokens_ == 0) text_ = tr("Context: no model");
    else if (promptTokens_ < 0) text_ = tr("Context: measured when the other reply ends / %1 tokens").arg(contextTokens_);
    else text_ = tr("Context: %1 / %2 tokens").arg(promptTokens_ + replyTokens_).arg(contextTokens_);
    QString tip = text_;
    if (contextTokens_ > 0 && promptTokens_ >= 0) {
        const int free = std::max(0, contextTokens_ - promptTokens_ - replyTokens_);
        tip = tr("Prompt %1 tokens (the conversation as the model reads it)").arg(promptTokens_);
        if (replyTokens_ > 0) tip += tr(" · this reply %1").arg(replyTokens_);
        tip += tr(" · free %1 of %2.").arg(free).arg(contextTokens_) + u'\n' + gauge_policy_text(policy_);
    }
    setToolTip(tip);
    setAccessibleDescription(tip);
    // The numbers change with every streamed batch: the layout is asked again only when the
    // wanted width changes, not ten times a second for a repaint.
    if (const int hintWidth = sizeHint().width(); hintWidth != hintWidthPx_) {
        hintWidthPx_ = hintWidth;
        updateGeometry();
    }
    update();
}

QSize ContextGauge::sizeHint() const {
    const QFontMetrics metrics = fontMetrics();
    return {metrics.horizontalAdvance(text_) + 16, metrics.height() + 6};
}

QSize ContextGauge::minimumSizeHint() const { return {kGaugeMinWidthPx, fontMetrics().height() + 6}; }

void ContextGauge::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QRect bar = rect().adjusted(0, 1, -1, -2);
    p.fillRect(bar, palette().base());
    if (contextTokens_ > 0 && promptTokens_ >= 0) {
        // Widths from the token counts, clamped: a count past the context (a reply that shifted
        // the cache) fills the bar rather than spilling out of it.
        const auto width_of = [&](int tokens) {
            return int(int64_t(std::clamp(tokens, 0, contextTokens_)) * bar.width() / contextTokens_);
        };
        const int promptPx = width_of(promptTokens_);
        const int replyPx = std::min(bar.width() - promptPx, width_of(replyTokens_));
        QColor prompt = palette().highlight().color();
        prompt.setAlpha(150);
        p.fillRect(QRect(bar.left(), bar.top(), promptPx, bar.height()), prompt);
        p.fillRect(QRect(bar.left() + promptPx, bar.top(), replyPx, bar.height()), kGaugeReplyColor);
    }
    p.setPen(palette().mid().color());
    p.drawRect(bar);
    p.setPen(palette().text().color());
    p.drawText(bar.adjusted(6, 0, -6, 0), Qt::AlignVCenter | Qt::AlignLeft,
               fontMetrics().elidedText(text_, Qt::ElideRight, bar.width() - 12));
}

} // namespace cflow::ui
