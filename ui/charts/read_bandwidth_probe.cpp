#include "cflow/ui/inspector/read_bandwidth_probe.h"

#include <chrono>

#include <QSettings>
#include <QtConcurrent/QtConcurrentRun>
#include <spdlog/spdlog.h>

#include "cflow/engine/forward/thread_pool.h"

namespace cflow::ui {

ReadBandwidthProbe::ReadBandwidthProbe(QObject* parent, QString sharedPath)
    : QObject(parent), path_(sharedPath.isEmpty() ? default_bandwidth_probe_path() : sharedPath.toStdString()) {
    // Read first: removing a key that is not there would still rewrite the settings file.
    if (QSettings settings; settings.contains(QString::fromLatin1(kLegacySettingsKey)))
        settings.remove(QString::fromLatin1(kLegacySettingsKey));
    const int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    // 0 threads: all of them, as the measurement below and the conversion wizard's preflight use.
    auto stored = load_shared_bandwidth_probe(path_, 0, now, SharedProbeOptions{}.maxAgeSeconds);
    if (stored) {
        probe_ = *stored;
        has_ = true;
    }
    connect(&watcher_, &QFutureWatcher<SharedBandwidthProbe>::finished, this, &ReadBandwidthProbe::finished);
}

ReadBandwidthProbe::~ReadBandwidthProbe() {
    // The task touches no member; waiting only keeps its threads from outliving the app.
    watcher_.waitForFinished();
}

QString ReadBandwidthProbe::sourceText() const { return has_ ? QString::fromStdString(shared_probe_text(probe_)) : QString(); }

void ReadBandwidthProbe::ensureMeasured() {
    // shared_read_bandwidth checks the file again: another process may have stored one since.
    if (!has_) measure(false);
}

void ReadBandwidthProbe::remeasure() { measure(true); }

void ReadBandwidthProbe::measure(bool again) {
    if (watcher_.isRunning()) return;
    emit started();
    SharedProbeOptions options;
    options.path = path_;
    options.measureAgain = again;
    watcher_.setFuture(QtConcurrent::run([options] {
        ThreadPool pool(0);  // all cores: the figure is what all decode threads together can read
        return shared_read_bandwidth(pool, options);
    }));
}

void ReadBandwidthProbe::finished() {
    const SharedBandwidthProbe r = watcher_.result();
    lastReason_ = QString::fromStdString(r.remeasureReason);
    if (!r.reused) spdlog::info("read bandwidth measured: {} ({})", shared_probe_text(r.probe), r.remeasureReason);
    if (!r.storeError.empty()) spdlog::warn("read bandwidth not stored for next time: {}", r.storeError);
    if (r.probe.result.bytesPerSecond > 0) {
        probe_ = r.probe;
        has_ = true;
    }
    emit measured(bytesPerSecond());  // also when nothing came of it: the panel stops saying "measuring"
}

} // namespace cflow::ui
