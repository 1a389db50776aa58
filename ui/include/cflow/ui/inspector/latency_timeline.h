#pragma once
// The inspector's latency timeline for a reply written by an endpoint (issue 34): when each of
// its chunks arrived, from the request's start. A shaded span up to the first text (the server's
// queue, prefill and the network), a tick per chunk, and below them each gap since the chunk
// before as a bar, so a stall in the stream shows where it happened. Painted with QPainter like
// the other inspector charts. While a reply streams, its arrivals are appended as they come and
// the inspector's refresh timer repaints it (refreshIfChanged), at most once per tick.
#include <vector>

#include <QString>
#include <QWidget>

namespace cflow::ui {

class LatencyTimeline : public QWidget {
    Q_OBJECT
public:
    explicit LatencyTimeline(QWidget* parent = nullptr);

    // arrivalMs: each chunk's arrival from the request's start, in order; firstTextMs: the
    // client's time to the first text. Empty: no remote reply yet.
    void setReply(std::vector<float> arrivalMs, double firstTextMs);
    void clear() { setReply({}, 0); }
    // A reply streaming: more arrivals (ms from its request's start, in order). The first one is
    // the time to the first text until setReply() gives the client's figure. No repaint here.
    void appendArrivals(const std::vector<float>& arrivalMs);
    // The refresh timer's call: repaints when arrivals came since the last paint; true if so.
    bool refreshIfChanged();

    int chunks() const { return static_cast<int>(arrivalMs_.size()); }
    double largestGapMs() const { return largestGapMs_; }
    double largestGapAtMs() const { return largestGapAtMs_; }  // arrival of the chunk after it
    QString summaryText() const;  // the line above the chart (also its accessible description)
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    std::vector<float> arrivalMs_;
    double firstTextMs_ = 0;
    double largestGapMs_ = 0;
    double largestGapAtMs_ = 0;
    bool changed_ = false;  // arrivals appended since the last refresh
    void summarize();       // the tooltip and accessible description from the data
};

} // namespace cflow::ui
