#include "cflow/ui/status_area.h"

#include <QHBoxLayout>
#include <QPainter>
#include <QProgressBar>
#include <QStringList>

namespace cflow::ui {

// A one-line text that asks for no minimum width and paints itself elided.
class ElidedText : public QWidget {
public:
    explicit ElidedText(QWidget* parent) : QWidget(parent) {
        setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    }
    void setText(const QString& text) {
        if (text == text_) return;
        text_ = text;
        setToolTip(text);
        setAccessibleName(text);
        updateGeometry();
        update();
    }
    const QString& text() const { return text_; }
    void setColor(const QColor& color) {
        color_ = color;
        update();
    }
    QSize sizeHint() const override { return {fontMetrics().horizontalAdvance(text_) + 8, fontMetrics().height()}; }
    QSize minimumSizeHint() const override { return {0, fontMetrics().height()}; }

protected:
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.setPen(color_.isValid() ? color_ : palette().color(QPalette::WindowText));
        p.drawText(rect(), Qt::AlignVCenter | Qt::AlignLeft, fontMetrics().elidedText(text_, Qt::ElideRight, width()));
    }

private:
    QString text_;
    QColor color_;
};

StatusArea::StatusArea(QWidget* parent) : QWidget(parent) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    message_ = new ElidedText(this);
    message_->setObjectName(QStringLiteral("statusMessage"));
    progress_ = new QProgressBar(this);
    progress_->setObjectName(QStringLiteral("promptProgress"));
    progress_->setAccessibleName(tr("Prompt progress"));
    progress_->setFormat(tr("prompt %v / %m"));
    progress_->setMaximumWidth(180);
    progress_->setMinimumWidth(90);
    progress_->hide();
    activity_ = new ElidedText(this);
    activity_->setObjectName(QStringLiteral("statusActivity"));
    metrics_ = new ElidedText(this);
    metrics_->setObjectName(QStringLiteral("metrics"));
    server_ = new ElidedText(this);
    server_->setObjectName(QStringLiteral("serverStatus"));
    server_->hide();
    layout->addWidget(message_, 3);
    layout->addWidget(progress_);
    layout->addWidget(activity_, 1);
    layout->addWidget(metrics_, 4);
    layout->addWidget(server_, 2);
}

void StatusArea::showServer(const QString& text) {
    server_->setText(text);
    server_->setVisible(!text.isEmpty());
}

QString StatusArea::server() const { return server_->text(); }

void StatusArea::showInfo(const QString& text) {
    error_ = false;
    message_->setColor({});
    message_->setText(text);
}

void StatusArea::showError(const QString& text) {
    error_ = true;
    message_->setColor(QColor(0xb0, 0x00, 0x20));
    message_->setText(text);
}

void StatusArea::showPromptProgress(int processed, int total) {
    if (total <= 0 || processed >= total) {
        progress_->hide();
        return;
    }
    progress_->setRange(0, total);
    progress_->setValue(processed);
    progress_->show();
}

void StatusArea::showDecoding(int tokens, double tokensPerS) {
    progress_->hide();
    activity_->setText(tr("%1 tokens · %2 tok/s").arg(tokens).arg(tokensPerS, 0, 'f', 1));
}

void StatusArea::showMetrics(const QString& text) { metrics_->setText(text); }

void StatusArea::clearActivity() {
    progress_->hide();
    activity_->setText(QString());
}

QString StatusArea::message() const { return message_->text(); }

QString StatusArea::activity() const {
    if (!progress_->isHidden()) return tr("prompt %1 / %2").arg(progress_->value()).arg(progress_->maximum());
    return activity_->text();
}

QString StatusArea::metrics() const { return metrics_->text(); }

QString remote_reply_metrics_text(const ReplyStats& stats) {
    QStringList parts;
    parts << StatusArea::tr("server · first text %1 ms").arg(stats.timeToFirstTokenMs, 0, 'f', 0);
    parts << StatusArea::tr("%1 chunks at %2/s as received").arg(stats.chunks).arg(stats.receivedChunksPerS, 0, 'f', 1);
    if (stats.usagePromptTokens >= 0)
        parts << StatusArea::tr("usage: prompt %1 + reply %2 tokens").arg(stats.usagePromptTokens).arg(stats.usageCompletionTokens);
    else
        parts << StatusArea::tr("no usage reported");
    if (stats.hasServerTimings)
        parts << StatusArea::tr("server timings: prompt %1 tok in %2 ms, decode %3 tok/s")
                     .arg(stats.serverPromptTokens)
                     .arg(stats.serverPromptMs, 0, 'f', 0)
                     .arg(stats.serverPredictedPerS, 0, 'f', 1);
    if (stats.attempts > 1) parts << StatusArea::tr("%1 attempts (busy server retried)").arg(stats.attempts);
    parts << (stats.cutReason.isEmpty() ? reply_end_name(stats) : StatusArea::tr("cut"));
    return parts.join(QStringLiteral(" · "));
}

} // namespace cflow::ui
