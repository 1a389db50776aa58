#pragma once
// Internal to the inspector charts: a label whose text follows live numbers at most a few times
// a second. Numbers that change 30 times a second cannot be read anyway, and every change costs
// a text layout for the size hint and another for the paint (~0.3 ms per label per frame,
// cflow_bench_inspector). The newest text always lands: a change inside the interval is shown
// when the interval ends.
#include <QElapsedTimer>
#include <QLabel>
#include <QString>
#include <QTimer>

namespace cflow::ui::detail {

class ThrottledText {
public:
    static constexpr int kDefaultIntervalMs = 200;

    explicit ThrottledText(QLabel* label, int intervalMs = kDefaultIntervalMs) : label_(label), intervalMs_(intervalMs) {
        timer_.setSingleShot(true);
        QObject::connect(&timer_, &QTimer::timeout, label_, [this] { show(); });
    }
    ThrottledText(const ThrottledText&) = delete;
    ThrottledText& operator=(const ThrottledText&) = delete;

    void setText(const QString& text) {
        if (text == latest_) return;
        latest_ = text;
        const qint64 sinceShownMs = lastShown_.isValid() ? lastShown_.elapsed() : intervalMs_;
        if (sinceShownMs >= intervalMs_) show();
        else if (!timer_.isActive()) timer_.start(int(intervalMs_ - sinceShownMs));
    }
    // The text the label shows now or will show by the end of the interval.
    const QString& text() const { return latest_; }

private:
    void show() {
        timer_.stop();
        if (label_->text() != latest_) label_->setText(latest_);  // setText relayouts even for the same text
        lastShown_.start();
    }

    QLabel* label_;
    int intervalMs_;
    QString latest_;
    QElapsedTimer lastShown_;
    QTimer timer_;
};

} // namespace cflow::ui::detail
