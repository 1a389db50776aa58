#pragma once
// Bandwidth panel: per-layer stacked bars of the weight bytes each token read by stream, the
// bandwidth each layer achieved, the machine's measured read bandwidth as a "speed of light"
// line, and the loaded model's analytic critical-path figures as text.
#include <memory>

#include <QStringList>
#include <QWidget>

#include "cflow/ui/inspector/telemetry_history.h"

class QLabel;
class QPushButton;

namespace cflow {
struct CriticalPathReport;
}

namespace cflow::ui::detail {
class ThrottledText;
}

namespace cflow::ui {

class BandwidthChart;

class BandwidthPanel : public QWidget {
    Q_OBJECT
public:
    explicit BandwidthPanel(QWidget* parent = nullptr);
    ~BandwidthPanel() override;

    void setInspectorGeometry(const InspectorGeometry& geometry);
    // The analytic figures of the loaded model; nullptr clears them (no model, or analysis failed: reason).
    void setCriticalPath(const CriticalPathReport* report, const QString& reason = {});
    // 0 = not measured yet; source: shared_probe_text(), the line the preflight and bench print.
    void setReadBandwidth(double bytesPerSecond, const QString& source = {});
    void setMeasuring(bool measuring);
    // Redraws the chart from the history's window (the dock calls it from its timer).
    void refresh(const TelemetryHistory& history);

    // What the chart shows (tests, accessibility).
    int layerCategoryCount() const;   // bar categories = layers
    QStringList streamSetLabels() const;
    double barValue(int stream, int layer) const;  // in the axis unit
    BandwidthChart* chart() const { return chart_; }
    QString axisUnit() const { return unit_; }
    double speedOfLightGBps() const { return readBytesPerSecond_ / 1e9; }
    QString criticalPathText() const;
    QString summaryText() const;
    QString readBandwidthText() const;  // the probe line under the chart

signals:
    void remeasureRequested();

private:
    BandwidthChart* chart_ = nullptr;
    QLabel* criticalPath_ = nullptr;
    QLabel* summary_ = nullptr;
    std::unique_ptr<detail::ThrottledText> summaryText_;  // summary_ at most 5 times a second
    QLabel* probeLabel_ = nullptr;
    QPushButton* remeasure_ = nullptr;
    uint32_t layers_ = 0;
    double readBytesPerSecond_ = 0;
    QString unit_ = QStringLiteral("KiB");
};

} // namespace cflow::ui
