#include "cflow/ui/inspector/inspector_dock.h"

#include <algorithm>

#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QScrollArea>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>

#include "cflow/engine/forward/critical_path.h"
#include "cflow/engine/forward/model.h"
#include "cflow/ui/inspector/bandwidth_panel.h"
#include "cflow/ui/inspector/latency_timeline.h"
#include "cflow/ui/inspector/read_bandwidth_probe.h"
#include "cflow/ui/inspector/routing_panel.h"
#include "cflow/ui/inspector/stall_panel.h"
#include "cflow/ui/telemetry_ring.h"
#include "label_box.h"
#include "throttled_text.h"

namespace cflow::ui {

InspectorDock::InspectorDock(TelemetryRing* ring, QWidget* parent, InspectorOptions options)
    : QDockWidget(tr("Inspector"), parent), ring_(ring), options_(options), history_(options.windowTokens) {
    setObjectName(QStringLiteral("InspectorDock"));  // for QMainWindow::saveState
    auto* body = new QWidget(this);
    tabs_ = new QTabWidget(body);
    bandwidth_ = new BandwidthPanel(tabs_);
    routing_ = new RoutingPanel(tabs_);
    stalls_ = new StallPanel(tabs_);
    tabs_->addTab(bandwidth_, tr("Bandwidth"));
    tabs_->addTab(routing_, tr("Expert routing"));
    tabs_->addTab(stalls_, tr("Overlap stalls"));
    latency_ = new LatencyTimeline(tabs_);
    tabs_->addTab(latency_, tr("Server latency"));
    endpointNote_ = new QLabel(body);
    endpointNote_->setObjectName(QStringLiteral("endpointNote"));
    endpointNote_->setWordWrap(true);
    endpointNote_->hide();
    serverMetrics_ = new QLabel(body);
    serverMetrics_->setObjectName(QStringLiteral("serverMetrics"));
    serverMetrics_->setWordWrap(true);
    serverMetrics_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    serverMetrics_->hide();
    status_ = new QLabel(body);
    // Wrapped: the model's name and the count on one line set the dock's minimum width and, in
    // a column beside the chat, pushed the Export button out of view behind a scroll bar.
    status_->setWordWrap(true);
    statusText_ = std::make_unique<detail::ThrottledText>(status_);
    auto* exportButton = new QPushButton(tr("Export telemetry…"), body);
    connect(exportButton, &QPushButton::clicked, this, &InspectorDock::exportWithDialog);
    auto* bottom = new QHBoxLayout;
    bottom->addWidget(new detail::LabelBox(status_, body), 1);  // its count changes every frame
    bottom->addWidget(exportButton);
    auto* layout = new QVBoxLayout(body);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(endpointNote_);
    layout->addWidget(tabs_, 1);
    layout->addWidget(serverMetrics_);
    layout->addLayout(bottom);
    // Below the charts' own minimum (a 600-pixel window's strip) the dock scrolls rather than
    // taking the transcript's height.
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(body);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    setWidget(scroll);

    probe_ = new ReadBandwidthProbe(this, options_.bandwidthProbePath);
    bandwidth_->setReadBandwidth(probe_->bytesPerSecond(), probe_->sourceText());
    connect(probe_, &ReadBandwidthProbe::started, this, [this] { bandwidth_->setMeasuring(true); });
    connect(probe_, &ReadBandwidthProbe::measured, this, [this](double bytesPerSecond) {
        bandwidth_->setMeasuring(false);
        bandwidth_->setReadBandwidth(bytesPerSecond, probe_->sourceText());
    });
    connect(bandwidth_, &BandwidthPanel::remeasureRequested, probe_, &ReadBandwidthProbe::remeasure);
    // A missing figure is measured in setModel, after the first load: the app opens its model
    // right after building the window, and a probe running beside that load read a fraction of
    // the machine's bandwidth (then kept it).

    // A hidden tab is redrawn when it becomes visible, not on every timer tick.
    connect(tabs_, &QTabWidget::currentChanged, this, [this](int index) {
        refreshPanel(tabs_->widget(index));
        if (tabs_->widget(index) == latency_) latency_->refreshIfChanged();
        endpointNote_->setVisible(!endpointLabel_.isEmpty() && tabs_->widget(index) != latency_);
        updateServerMetricsVisibility();
    });

    timer_ = new QTimer(this);
    timer_->setInterval(1000 / std::max(1, options_.refreshHz));
    connect(timer_, &QTimer::timeout, this, &InspectorDock::drainNow);
    timer_->start();
    updateStatus();
}

InspectorDock::~InspectorDock() = default;

QString InspectorDock::statusText() const { return statusText_->text(); }

QString InspectorDock::endpointNote() const { return endpointLabel_.isEmpty() ? QString() : endpointNote_->text(); }

void InspectorDock::setEndpoint(const QString& label) {
    endpointLabel_ = label;
    endpointNote_->setText(
        label.isEmpty() ? QString()
                        : tr("Replies are written by the server %1. Bandwidth, expert routing and overlap stalls are "
                             "measured inside the local engine, so they stay empty for its replies; the Server latency "
                             "tab shows when each piece of a reply arrived.")
                              .arg(label));
    endpointNote_->setVisible(!label.isEmpty() && tabs_->currentWidget() != latency_);
    serverMetrics_->clear();  // another server's figures, or none for the local engine
    updateServerMetricsVisibility();
    updateStatus();
}

void InspectorDock::setServerMetrics(const QString& line) {
    serverMetrics_->setText(line);
    updateServerMetricsVisibility();
}

QString InspectorDock::serverMetricsText() const { return endpointLabel_.isEmpty() ? QString() : serverMetrics_->text(); }

void InspectorDock::updateServerMetricsVisibility() {
    serverMetrics_->setVisible(!endpointLabel_.isEmpty() && !serverMetrics_->text().isEmpty() &&
                               tabs_->currentWidget() == latency_);
}

void InspectorDock::showRemoteReply(const std::vector<float>& arrivalMs, double firstTextMs) {
    latency_->setReply(arrivalMs, firstTextMs);
}

void InspectorDock::appendRemoteArrivals(const std::vector<float>& arrivalMs, bool startsReply) {
    if (startsReply) latency_->clear();
    latency_->appendArrivals(arrivalMs);
}

void InspectorDock::setModel(std::shared_ptr<const cflow::Model> model) {
    model_ = std::move(model);
    // What the ring still holds was recorded with the old model.
    if (ring_) ring_->drain(drained_);
    drained_.clear();
    history_.clear();
    if (!model_) {
        applyGeometry({});
        bandwidth_->setCriticalPath(nullptr, tr("no model loaded"));
        routing_->setTokenNamer({});
        updateStatus();
        return;
    }
    if (options_.measureBandwidthAtStart) probe_->ensureMeasured();  // nothing to do once a figure is stored
    applyGeometry(geometry_of(*model_));
    auto report = analyze_file(model_->file());
    if (report) bandwidth_->setCriticalPath(&report.value());
    else bandwidth_->setCriticalPath(nullptr, QString::fromStdString(report.error()));
    // The model is kept alive by model_; the namer is replaced before model_ changes.
    const Model* m = model_.get();
    routing_->setTokenNamer([m](int32_t token) {
        const std::string& piece = m->tokenizer().piece(token);
        return piece.empty() ? QString() : QStringLiteral("'%1'").arg(QString::fromStdString(piece));
    });
    updateStatus();  // the header names the new model now, not at its first token
}

void InspectorDock::applyGeometry(const InspectorGeometry& geometry) {
    geometry_ = geometry;
    bandwidth_->setInspectorGeometry(geometry);
    routing_->setInspectorGeometry(geometry);
    stalls_->setInspectorGeometry(geometry);
    for (uint64_t& r : drawnRevision_) r = ~0ull;
    refreshPanel(tabs_->currentWidget());
}

void InspectorDock::highlightToken(uint32_t position) {
    routing_->highlightToken(position);
    tabs_->setCurrentWidget(routing_);
}

void InspectorDock::clearTelemetry() {
    if (ring_) ring_->drain(drained_);  // what the ring still holds belongs to the old conversation
    drained_.clear();
    history_.clear();
    refreshPanel(tabs_->currentWidget());
    updateStatus();
}

void InspectorDock::drainNow() {
    if (!ring_) return;
    drained_.clear();
    const size_t n = ring_->drain(drained_);
    if (n > 0) {
        for (TokenTelemetry& t : drained_) history_.append(std::move(t));
        drained_.clear();
        // Without a model the geometry comes from what the records show.
        if (!geometry_.fromModel &&
            (history_.observedLayers() != geometry_.layers || history_.observedExperts() != geometry_.experts)) {
            InspectorGeometry g;
            g.layers = history_.observedLayers();
            g.experts = history_.observedExperts();
            for (const LayerRecord& r : history_.window().back().layers) g.topK = std::max<uint32_t>(g.topK, r.nSelected);
            applyGeometry(g);
        }
        emit tokensDrained(int(n));
    }
    if (n > 0 || ring_->droppedTokens() != lastDropped_) updateStatus();
    if (isVisible()) refreshPanel(tabs_->currentWidget());
    if (isVisible() && tabs_->currentWidget() == latency_) latency_->refreshIfChanged();
}

void InspectorDock::refreshPanel(QWidget* panel) {
    const int index = tabs_->indexOf(panel);
    if (index < 0 || index >= 3 || drawnRevision_[index] == history_.revision()) return;
    drawnRevision_[index] = history_.revision();
    ++redraws_;
    if (panel == bandwidth_) bandwidth_->refresh(history_);
    else if (panel == routing_) routing_->refresh(history_);
    else if (panel == stalls_) stalls_->refresh(history_);
}

void InspectorDock::updateStatus() {
    lastDropped_ = ring_ ? ring_->droppedTokens() : 0;
    QString text = tr("%1 tokens recorded").arg(history_.session().size());
    if (lastDropped_ > 0) text += tr(", %1 dropped (the display fell behind)").arg(lastDropped_);
    if (history_.sessionTokensNotKept() > 0) text += tr(", %1 not kept for export").arg(history_.sessionTokensNotKept());
    if (!geometry_.modelName.empty()) text = QString::fromStdString(geometry_.modelName) + QStringLiteral(" · ") + text;
    if (!endpointLabel_.isEmpty()) text = tr("%1 (server) · the local engine's %2").arg(endpointLabel_, text);
    statusText_->setText(text);
}

Status InspectorDock::exportTelemetry(const QString& path, TelemetryFormat format) const {
    return export_telemetry(history_.session(), path, format);
}

void InspectorDock::exportWithDialog() {
    QString selected;
    const QString csvFilter = tr("CSV, one row per token and layer (*.csv)");
    const QString jsonlFilter = tr("JSON lines, one object per token (*.jsonl)");
    const QString path = QFileDialog::getSaveFileName(this, tr("Export telemetry"), QStringLiteral("telemetry.csv"),
                                                      csvFilter + QStringLiteral(";;") + jsonlFilter, &selected);
    if (path.isEmpty()) return;
    const bool jsonl = selected == jsonlFilter || path.endsWith(QStringLiteral(".jsonl"), Qt::CaseInsensitive);
    const Status st = exportTelemetry(path, jsonl ? TelemetryFormat::Jsonl : TelemetryFormat::Csv);
    if (!st) QMessageBox::warning(this, tr("Export telemetry"), QString::fromStdString(st.error()));
}

} // namespace cflow::ui
