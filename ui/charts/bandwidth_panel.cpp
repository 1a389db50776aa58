#include "cflow/ui/inspector/bandwidth_panel.h"

#include <algorithm>
#include <array>
#include <vector>

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include "cflow/engine/forward/critical_path.h"
#include "cflow/ui/inspector/bandwidth_chart.h"

#include "label_box.h"
#include "throttled_text.h"

namespace cflow::ui {
namespace {

QString mib(double bytes) { return QString::number(bytes / kBytesPerMiB, 'f', 3) + QStringLiteral(" MiB"); }

} // namespace

BandwidthPanel::BandwidthPanel(QWidget* parent) : QWidget(parent) {
    chart_ = new BandwidthChart(this);
    chart_->setMinimumHeight(110);  // a 600-pixel window still shows the transcript

    criticalPath_ = new QLabel(this);
    criticalPath_->setWordWrap(true);
    criticalPath_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    summary_ = new QLabel(this);
    summary_->setWordWrap(true);
    summaryText_ = std::make_unique<detail::ThrottledText>(summary_);
    probeLabel_ = new QLabel(this);
    probeLabel_->setWordWrap(true);
    remeasure_ = new QPushButton(tr("Measure read bandwidth again"), this);
    connect(remeasure_, &QPushButton::clicked, this, &BandwidthPanel::remeasureRequested);

    auto* probeRow = new QHBoxLayout;
    probeRow->addWidget(probeLabel_, 1);
    probeRow->addWidget(remeasure_);
    auto* layout = new QVBoxLayout(this);
    // The summary first: before any token it is the panel's explanation, and a short dock
    // shows the top of the panel.
    layout->addWidget(new detail::LabelBox(summary_, this));  // its numbers change every frame
    layout->addWidget(chart_, 1);
    layout->addWidget(criticalPath_);
    layout->addLayout(probeRow);

    setCriticalPath(nullptr, tr("no model loaded"));
    summaryText_->setText(tr("Generate text to see what each token reads."));
    setReadBandwidth(0);
}

BandwidthPanel::~BandwidthPanel() = default;

void BandwidthPanel::setInspectorGeometry(const InspectorGeometry& geometry) {
    layers_ = geometry.layers;
    chart_->setLayers(int(layers_));
}

void BandwidthPanel::setCriticalPath(const CriticalPathReport* report, const QString& reason) {
    if (!report) {
        criticalPath_->setText(tr("Critical path: %1.").arg(reason));
        return;
    }
    const CriticalPathTotals& ideal = report->ideal_totals;
    QString text = tr("Critical path (paper model, Q4 at 0.5 byte/weight, dense delay %1, expert delay %2): "
                      "B_naive %3, B_critical %4, reduction %5×.")
                       .arg(report->effective_dense_delay)
                       .arg(report->effective_expert_delay)
                       .arg(mib(ideal.b_naive_bytes), mib(ideal.b_critical_bytes))
                       .arg(ideal.reduction, 0, 'f', 2);
    if (report->has_actual) {
        const CriticalPathTotals& a = report->actual_totals;
        text += tr(" This file's bytes: B_naive %1, B_critical %2, reduction %3×.")
                    .arg(mib(a.b_naive_bytes), mib(a.b_critical_bytes))
                    .arg(a.reduction, 0, 'f', 2);
    }
    criticalPath_->setText(text);
}

void BandwidthPanel::setReadBandwidth(double bytesPerSecond, const QString& source) {
    readBytesPerSecond_ = bytesPerSecond;
    chart_->setSpeedOfLight(bytesPerSecond / 1e9);
    if (bytesPerSecond <= 0) probeLabel_->setText(tr("Machine read bandwidth not measured yet."));
    else if (source.isEmpty()) probeLabel_->setText(tr("Machine streaming read bandwidth: %1 GB/s.").arg(bytesPerSecond / 1e9, 0, 'f', 1));
    else probeLabel_->setText(tr("Machine streaming read bandwidth: %1.").arg(source));
    probeLabel_->setToolTip(tr("The figure the conversion preflight and cflow bench print too, stored once per machine; "
                               "\"Measure read bandwidth again\" replaces it for all of them."));
}

void BandwidthPanel::setMeasuring(bool measuring) {
    remeasure_->setEnabled(!measuring);
    if (measuring) probeLabel_->setText(tr("Measuring the machine's read bandwidth…"));
}

void BandwidthPanel::refresh(const TelemetryHistory& history) {
    const uint32_t layers = layers_;
    const BandwidthSummary s = summarize_bandwidth(history, layers);
    double maxTotal = 0;
    for (const LayerBandwidth& lb : s.layers) {
        double total = 0;
        for (double b : lb.bytesPerToken) total += b;
        maxTotal = std::max(maxTotal, total);
    }
    const bool useMiB = maxTotal >= kBytesPerMiB;
    const double scale = useMiB ? 1.0 / kBytesPerMiB : 1.0 / 1024.0;
    unit_ = useMiB ? QStringLiteral("MiB") : QStringLiteral("KiB");
    std::array<std::vector<double>, BandwidthChart::kStreams> bytes;
    std::vector<double> achieved(layers);
    for (int k = 0; k < BandwidthChart::kStreams; ++k) {
        bytes[size_t(k)].resize(layers);
        for (uint32_t l = 0; l < layers; ++l) bytes[size_t(k)][l] = s.layers[l].bytesPerToken[size_t(k)] * scale;
    }
    for (uint32_t l = 0; l < layers; ++l) achieved[l] = s.layers[l].achievedBytesPerSecond / 1e9;
    chart_->setData(bytes, unit_, achieved);

    if (s.tokens == 0) {
        summaryText_->setText(tr("Generate text to see what each token reads."));
        return;
    }
    double layerBytes = 0;
    for (const LayerBandwidth& lb : s.layers)
        for (double b : lb.bytesPerToken) layerBytes += b;
    QString text = tr("Last %1 tokens: %2 per token in the layers + %3 embedding/LM head; %4 GB/s per token overall")
                       .arg(s.tokens)
                       .arg(mib(layerBytes), mib(s.vocabBytesPerToken))
                       .arg(s.tokenBytesPerSecond / 1e9, 0, 'f', 2);
    if (readBytesPerSecond_ > 0)
        text += tr(" (%1% of the machine's read bandwidth)").arg(100.0 * s.tokenBytesPerSecond / readBytesPerSecond_, 0, 'f', 1);
    summaryText_->setText(text + QLatin1Char('.'));
}

int BandwidthPanel::layerCategoryCount() const { return chart_->layers(); }

QStringList BandwidthPanel::streamSetLabels() const {
    QStringList labels;
    for (int s = 0; s < BandwidthChart::kStreams; ++s) labels << BandwidthChart::streamLabel(s);
    return labels;
}

double BandwidthPanel::barValue(int stream, int layer) const { return chart_->bytes(stream, layer); }

QString BandwidthPanel::criticalPathText() const { return criticalPath_->text(); }
QString BandwidthPanel::summaryText() const { return summaryText_->text(); }
QString BandwidthPanel::readBandwidthText() const { return probeLabel_->text(); }

} // namespace cflow::ui
