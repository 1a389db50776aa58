#include "cflow/ui/inspector/read_bandwidth_probe.h"

#include <QSettings>
#include <QtConcurrent/QtConcurrentRun>

#include "cflow/engine/forward/thread_pool.h"

namespace cflow::ui {

ReadBandwidthProbe::ReadBandwidthProbe(QObject* parent) : QObject(parent) {
    bytesPerSecond_ = QSettings().value(QString::fromLatin1(kSettingsKey), 0.0).toDouble();
    connect(&watcher_, &QFutureWatcher<BandwidthProbeResult>::finished, this, &ReadBandwidthProbe::finished);
}

ReadBandwidthProbe::~ReadBandwidthProbe() {
    // The task touches no member; waiting only keeps its threads from outliving the app.
    watcher_.waitForFinished();
}

void ReadBandwidthProbe::ensureMeasured() {
    if (bytesPerSecond_ <= 0) remeasure();
}

void ReadBandwidthProbe::remeasure() {
    if (watcher_.isRunning()) return;
    emit started();
    watcher_.setFuture(QtConcurrent::run([] {
        ThreadPool pool(0);  // all cores: the figure is what all decode threads together can read
        return probe_read_bandwidth(pool);
    }));
}

void ReadBandwidthProbe::finished() {
    const BandwidthProbeResult r = watcher_.result();
    if (r.bytesPerSecond <= 0) return;
    bytesPerSecond_ = r.bytesPerSecond;
    QSettings().setValue(QString::fromLatin1(kSettingsKey), bytesPerSecond_);
    emit measured(bytesPerSecond_);
}

} // namespace cflow::ui
