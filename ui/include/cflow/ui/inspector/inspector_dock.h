#pragma once
// The inspector: a dock with the bandwidth, expert-routing and overlap-stall panels. It reads
// the TelemetryRing the engine thread fills (GenerateRequest::on_step -> ring.push) from a
// 30 Hz timer on the GUI thread, keeps the session's telemetry for export, and redraws only
// the visible panel, only when new tokens arrived (never per record).
#include <cstdint>
#include <memory>

#include <QDockWidget>
#include <QString>

#include "cflow/base/result.h"
#include "cflow/ui/inspector/telemetry_export.h"
#include "cflow/ui/inspector/telemetry_history.h"

class QLabel;
class QTabWidget;
class QTimer;

namespace cflow {
class Model;
}

namespace cflow::ui::detail {
class ThrottledText;
}

namespace cflow::ui {

class BandwidthPanel;
class LatencyTimeline;
class ReadBandwidthProbe;
class RoutingPanel;
class StallPanel;
class TelemetryRing;

struct InspectorOptions {
    int refreshHz = 30;
    size_t windowTokens = TelemetryHistory::kDefaultWindowTokens;
    // Measure the machine's read bandwidth in the background when the shared probe has no fresh
    // figure for this machine, once the first model has loaded (measured during the load, the
    // load's own reads would lower the figure). Tests and benchmarks turn it off: the probe
    // saturates memory.
    bool measureBandwidthAtStart = true;
    // The shared probe's file; "" = default_bandwidth_probe_path() (tests point it elsewhere).
    QString bandwidthProbePath;
};

class InspectorDock : public QDockWidget {
    Q_OBJECT
public:
    // ring must outlive the dock; the dock is its only consumer.
    explicit InspectorDock(TelemetryRing* ring, QWidget* parent = nullptr, InspectorOptions options = {});
    ~InspectorDock() override;

    // Writes every token recorded this session (temp file + rename).
    Status exportTelemetry(const QString& path, TelemetryFormat format) const;

    const TelemetryHistory& history() const { return history_; }
    const InspectorGeometry& inspectorGeometry() const { return geometry_; }
    BandwidthPanel* bandwidthPanel() const { return bandwidth_; }
    RoutingPanel* routingPanel() const { return routing_; }
    StallPanel* stallPanel() const { return stalls_; }
    LatencyTimeline* latencyTimeline() const { return latency_; }
    // Why the local-only panels are empty while replies come from an endpoint ("" when local).
    QString endpointNote() const;
    QString serverMetricsText() const;  // the /metrics line shown on the Server latency tab ("" when none)
    QTabWidget* tabs() const { return tabs_; }
    QTimer* refreshTimer() const { return timer_; }
    ReadBandwidthProbe* readBandwidthProbe() const { return probe_; }
    uint64_t redraws() const { return redraws_; }  // panel refreshes so far
    QString statusText() const;                    // the header line: model name and token counts

public slots:
    void setModel(std::shared_ptr<const cflow::Model> model);
    // Replies are written by the endpoint labelled label (issue 34); "" = the local engine again.
    // The bandwidth, routing and stall panels are measured inside the engine: they say so.
    void setEndpoint(const QString& label);
    // A reply written by the endpoint: its chunks' arrivals (ms from the request) for the timeline.
    void showRemoteReply(const std::vector<float>& arrivalMs, double firstTextMs);
    // A remote reply streaming: its newest chunks' arrivals; the timer repaints the timeline.
    // startsReply: the first batch of a reply (the previous reply's chunks are cleared).
    void appendRemoteArrivals(const std::vector<float>& arrivalMs, bool startsReply);
    // What the endpoint reports on /metrics, shown under the Server latency tab ("" hides it).
    void setServerMetrics(const QString& line);
    void highlightToken(uint32_t position);  // the chat view calls it when a token is clicked
    void clearTelemetry();                   // a new conversation starts
    void drainNow();                         // the timer's work: drain the ring, redraw if new
    void exportWithDialog();

signals:
    void tokensDrained(int tokens);

private:
    void applyGeometry(const InspectorGeometry& geometry);
    void refreshPanel(QWidget* panel);
    void updateStatus();
    void updateServerMetricsVisibility();

    TelemetryRing* ring_;
    InspectorOptions options_;
    TelemetryHistory history_;
    InspectorGeometry geometry_;
    std::shared_ptr<const Model> model_;
    std::vector<TokenTelemetry> drained_;  // reused between drains
    QTimer* timer_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    BandwidthPanel* bandwidth_ = nullptr;
    RoutingPanel* routing_ = nullptr;
    StallPanel* stalls_ = nullptr;
    QLabel* status_ = nullptr;
    LatencyTimeline* latency_ = nullptr;
    QLabel* endpointNote_ = nullptr;  // above the tabs, on the local-only ones, while on an endpoint
    QLabel* serverMetrics_ = nullptr;  // under the tabs, on the Server latency tab, while on an endpoint
    QString endpointLabel_;
    std::unique_ptr<detail::ThrottledText> statusText_;  // status_ at most 5 times a second
    ReadBandwidthProbe* probe_ = nullptr;
    uint64_t drawnRevision_[3] = {~0ull, ~0ull, ~0ull};  // history revision each panel last showed
    uint64_t redraws_ = 0;
    uint64_t lastDropped_ = ~0ull;
};

} // namespace cflow::ui
