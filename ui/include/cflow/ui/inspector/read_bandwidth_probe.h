#pragma once
// The machine's streaming read bandwidth for the bandwidth chart's "speed of light" line:
// probe_read_bandwidth run on a QtConcurrent thread, the result cached in QSettings so it is
// measured once (at the first start) and re-measured only on request.
#include <QFutureWatcher>
#include <QObject>

#include "cflow/engine/io/bandwidth_probe.h"

namespace cflow::ui {

class ReadBandwidthProbe : public QObject {
    Q_OBJECT
public:
    static constexpr const char* kSettingsKey = "inspector/readBandwidthBytesPerSecond";

    explicit ReadBandwidthProbe(QObject* parent = nullptr);
    ~ReadBandwidthProbe() override;

    // The cached figure (0 when never measured on this machine).
    double bytesPerSecond() const { return bytesPerSecond_; }
    bool running() const { return watcher_.isRunning(); }

public slots:
    // Measures in the background unless a figure is cached (first start).
    void ensureMeasured();
    // Measures again in the background; ignored while a measurement runs.
    void remeasure();

signals:
    void started();
    void measured(double bytesPerSecond);

private:
    void finished();

    QFutureWatcher<BandwidthProbeResult> watcher_;
    double bytesPerSecond_ = 0;
};

} // namespace cflow::ui
