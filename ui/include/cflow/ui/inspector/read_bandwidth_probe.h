#pragma once
// The machine's streaming read bandwidth for the bandwidth chart's "speed of light" line: the
// shared probe (engine io/bandwidth_probe_cache.h) that the conversion preflight and `cflow bench`
// print too, so every front end shows one figure. A fresh stored figure is used as it is; else it
// is measured on a QtConcurrent thread and stored for them all.
#include <string>

#include <QFutureWatcher>
#include <QObject>
#include <QString>

#include "cflow/engine/io/bandwidth_probe_cache.h"

namespace cflow::ui {

class ReadBandwidthProbe : public QObject {
    Q_OBJECT
public:
    // Where the inspector cached its own figure before the shared probe: a number without
    // method, machine or date (possibly from an older, ISA-dependent probe), so it is removed,
    // not migrated.
    static constexpr const char* kLegacySettingsKey = "inspector/readBandwidthBytesPerSecond";

    // sharedPath "" = default_bandwidth_probe_path(). Reads a fresh stored figure at once.
    explicit ReadBandwidthProbe(QObject* parent = nullptr, QString sharedPath = {});
    ~ReadBandwidthProbe() override;

    // The shared figure (0 while there is none for this machine).
    double bytesPerSecond() const { return has_ ? probe_.result.bytesPerSecond : 0.0; }
    // shared_probe_text(): "23.5 GB/s with 2 threads (shared probe, measured 2026-12-07 02:51 UTC)"; "" without one.
    QString sourceText() const;
    const StoredBandwidthProbe& stored() const { return probe_; }
    bool running() const { return watcher_.isRunning(); }
    // Why the last measurement ran ("" when the stored figure was used).
    QString lastRemeasureReason() const { return lastReason_; }

public slots:
    // Measures in the background unless a fresh figure for this machine is stored.
    void ensureMeasured();
    // Measures again in the background; ignored while a measurement runs.
    void remeasure();

signals:
    void started();
    void measured(double bytesPerSecond);

private:
    void measure(bool again);
    void finished();

    std::string path_;
    QFutureWatcher<SharedBandwidthProbe> watcher_;
    StoredBandwidthProbe probe_;
    bool has_ = false;
    QString lastReason_;
};

} // namespace cflow::ui
