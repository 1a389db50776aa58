#pragma once
// Overlap-stall panel: a Gantt-style timeline (one lane per layer) of compute vs expert wait
// over the last few tokens, with arrows from a routing layer to the layer its experts are
// injected into for delayed models, and per-token totals of compute vs stall as bars.
#include <memory>
#include <vector>

#include <QPixmap>
#include <QWidget>

#include "cflow/engine/forward/session.h"
#include "cflow/ui/inspector/telemetry_history.h"

class QButtonGroup;
class QLabel;
class QStackedLayout;

namespace cflow::ui::detail {
class ThrottledText;
}

namespace cflow::ui {

class StallTotalsChart;

class StallTimeline : public QWidget {
    Q_OBJECT
public:
    struct Segment {
        uint32_t position = 0;
        uint32_t layer = 0;
        double startUs = 0;      // from the start of the first token shown
        double computeUs = 0;
        double expertWaitUs = 0;
        int injectionLayer = -1;
    };
    struct Marker {              // routing layer -> injection layer (delayed models)
        uint32_t position = 0;
        uint32_t fromLayer = 0;
        uint32_t toLayer = 0;
    };

    explicit StallTimeline(QWidget* parent = nullptr);
    void setTokens(const std::vector<const TokenTelemetry*>& tokens, uint32_t layers, bool markDelays);
    int lanes() const { return int(layers_); }
    int tokenCount() const { return tokens_; }
    const std::vector<Segment>& segments() const { return segments_; }
    const std::vector<Marker>& markers() const { return markers_; }
    QString toolTipAt(QPoint pos) const;
    QSize sizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

private:
    QRect plotRect() const;
    QRectF segmentRect(const Segment& s) const;
    std::vector<Segment> segments_;
    std::vector<Marker> markers_;
    std::vector<double> tokenStartsUs_;  // [tokens] where each token's first layer starts
    double totalUs_ = 0;
    uint32_t layers_ = 0;
    int tokens_ = 0;
    void ensureStatic();  // background and lane labels, cached until resize/shape change
    QPixmap static_;
    QSize staticSize_;
    uint32_t staticLayers_ = ~0u;
    qint64 staticPalette_ = -1;
};

class StallPanel : public QWidget {
    Q_OBJECT
public:
    static constexpr size_t kTimelineTokens = 6;   // tokens in the Gantt view
    static constexpr size_t kTotalsTokens = 32;    // tokens in the totals bars

    explicit StallPanel(QWidget* parent = nullptr);
    ~StallPanel() override;
    void setInspectorGeometry(const InspectorGeometry& geometry);
    void refresh(const TelemetryHistory& history);

    StallTimeline* timeline() const { return timeline_; }
    int totalsBarCount() const;            // bar slots (kTotalsTokens), newest on the right
    size_t totalsTokenCount() const;       // slots that hold a token (the rest are zero)
    double totalsValue(int set, int slot) const;  // set 0 compute, 1 stall; ms
    bool showingHint() const;
    QString hintText() const;
    QString summaryText() const;
    // The arms switch shows the arm the next reply uses; setExpertFetch does not emit.
    void setExpertFetch(ExpertFetch fetch);
    ExpertFetch checkedExpertFetch() const;
    QString armsText() const;  // per-arm figures of this session and the staged-vs-sync comparison

signals:
    // A click on the arms switch: the sampling settings take it, and the next reply uses it.
    void expertFetchRequested(cflow::ExpertFetch fetch);

private:
    void refreshArms(const TelemetryHistory& history);
    InspectorGeometry geometry_;
    QStackedLayout* stack_ = nullptr;
    QLabel* hint_ = nullptr;
    QWidget* content_ = nullptr;
    StallTimeline* timeline_ = nullptr;
    QLabel* summary_ = nullptr;
    std::unique_ptr<detail::ThrottledText> summaryText_;  // summary_ at most 5 times a second
    StallTotalsChart* totals_ = nullptr;
    QButtonGroup* armButtons_ = nullptr;  // ids: ExpertFetch values
    QLabel* arms_ = nullptr;
    std::unique_ptr<detail::ThrottledText> armsText_;
};

} // namespace cflow::ui
