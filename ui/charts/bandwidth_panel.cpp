#include "cflow/ui/inspector/bandwidth_panel.h"

#include <algorithm>

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QPushButton>
#include <QStackedBarSeries>
#include <QVBoxLayout>
#include <QValueAxis>

#include "cflow/engine/critical_path.h"

#include "label_box.h"
#include "nice_scale.h"
#include "throttled_text.h"

namespace cflow::ui {
namespace {

const char* const kStreamLabels[5] = {"attention", "dense", "experts", "router", "vocab"};
const QColor kStreamColors[5] = {QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b), QColor(0xe1, 0x57, 0x59),
                                 QColor(0x76, 0xb7, 0xb2), QColor(0x59, 0xa1, 0x4f)};


// Only a changed range is applied: each change relayouts the axis.
void set_axis_max(QValueAxis* axis, double max) {
    if (axis->max() == max) return;
    axis->setRange(0, max);
    axis->setTickInterval(detail::nice_tick_step(max));  // round labels: 0, 0.5, 1, ...
}

QString mib(double bytes) { return QString::number(bytes / kBytesPerMiB, 'f', 3) + QStringLiteral(" MiB"); }

} // namespace

BandwidthPanel::BandwidthPanel(QWidget* parent) : QWidget(parent) {
    chart_ = new QChart;
    chart_->setTitle(tr("Weight bytes read per token, by layer and stream"));
    chart_->setAnimationOptions(QChart::NoAnimation);  // redraws come at 30 Hz; animation would lag behind
    // A rounded background is filled as a path (and in Qt 6.4 on worker threads) every frame.
    chart_->setBackgroundRoundness(0);
    chart_->legend()->setAlignment(Qt::AlignBottom);

    bars_ = new QStackedBarSeries(chart_);
    for (int s = 0; s < 5; ++s) {
        sets_[s] = new QBarSet(QString::fromLatin1(kStreamLabels[s]));
        sets_[s]->setColor(kStreamColors[s]);
        bars_->append(sets_[s]);
    }
    achieved_ = new QLineSeries(chart_);
    achieved_->setName(tr("achieved GB/s"));
    achieved_->setPointsVisible(true);
    speedOfLight_ = new QLineSeries(chart_);
    speedOfLight_->setName(tr("machine read bandwidth (speed of light)"));
    speedOfLight_->setPen(QPen(Qt::black, 2, Qt::DashLine));
    chart_->addSeries(bars_);
    chart_->addSeries(achieved_);
    chart_->addSeries(speedOfLight_);

    layerAxis_ = new QBarCategoryAxis(chart_);
    layerAxis_->setTitleText(tr("layer"));
    bytesAxis_ = new QValueAxis(chart_);
    bytesAxis_->setTitleText(tr("KiB per token"));
    rateAxis_ = new QValueAxis(chart_);
    rateAxis_->setTitleText(tr("GB/s"));
    for (QValueAxis* axis : {bytesAxis_, rateAxis_}) {
        axis->setTickType(QValueAxis::TicksDynamic);
        axis->setTickAnchor(0.0);
        axis->setLabelFormat(QStringLiteral("%.4g"));
    }
    chart_->addAxis(layerAxis_, Qt::AlignBottom);
    chart_->addAxis(bytesAxis_, Qt::AlignLeft);
    chart_->addAxis(rateAxis_, Qt::AlignRight);
    bars_->attachAxis(layerAxis_);
    bars_->attachAxis(bytesAxis_);
    for (QLineSeries* line : {achieved_, speedOfLight_}) {
        line->attachAxis(layerAxis_);  // x = layer index
        line->attachAxis(rateAxis_);
    }

    view_ = new QChartView(chart_, this);
    view_->setRenderHint(QPainter::Antialiasing, false);
    view_->setMinimumHeight(220);

    criticalPath_ = new QLabel(this);
    criticalPath_->setWordWrap(true);
    criticalPath_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    summary_ = new QLabel(this);
    summary_->setWordWrap(true);
    summaryText_ = std::make_unique<detail::ThrottledText>(summary_);
    probeLabel_ = new QLabel(this);
    remeasure_ = new QPushButton(tr("Measure read bandwidth again"), this);
    connect(remeasure_, &QPushButton::clicked, this, &BandwidthPanel::remeasureRequested);

    auto* probeRow = new QHBoxLayout;
    probeRow->addWidget(probeLabel_, 1);
    probeRow->addWidget(remeasure_);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(view_, 1);
    layout->addWidget(new detail::LabelBox(summary_, this));  // its numbers change every frame
    layout->addWidget(criticalPath_);
    layout->addLayout(probeRow);

    setCriticalPath(nullptr, tr("no model loaded"));
    setReadBandwidth(0);
}

BandwidthPanel::~BandwidthPanel() = default;

void BandwidthPanel::rebuildCategories(uint32_t layers) {
    layers_ = layers;
    QStringList names;
    for (uint32_t l = 0; l < layers; ++l) names << QString::number(l);
    layerAxis_->clear();
    layerAxis_->append(names);
    for (QBarSet* set : sets_) {
        set->remove(0, set->count());
        for (uint32_t l = 0; l < layers; ++l) set->append(0.0);
    }
    achieved_->clear();
    setReadBandwidth(readBytesPerSecond_);  // the speed-of-light line spans the layers
}

void BandwidthPanel::setInspectorGeometry(const InspectorGeometry& geometry) {
    if (geometry.layers != layers_) rebuildCategories(geometry.layers);
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

void BandwidthPanel::setReadBandwidth(double bytesPerSecond) {
    readBytesPerSecond_ = bytesPerSecond;
    speedOfLight_->clear();
    if (bytesPerSecond > 0 && layers_ > 0) {
        const double gbps = bytesPerSecond / 1e9;
        speedOfLight_->append(0, gbps);
        speedOfLight_->append(double(layers_ - 1), gbps);
        set_axis_max(rateAxis_, std::max(rateAxis_->max(), detail::nice_ceiling(gbps * 1.1)));
    }
    probeLabel_->setText(bytesPerSecond > 0
                             ? tr("Machine streaming read bandwidth: %1 GB/s (measured once, cached).")
                                   .arg(bytesPerSecond / 1e9, 0, 'f', 1)
                             : tr("Machine read bandwidth not measured yet."));
}

void BandwidthPanel::setMeasuring(bool measuring) {
    remeasure_->setEnabled(!measuring);
    if (measuring) probeLabel_->setText(tr("Measuring the machine's read bandwidth…"));
}

void BandwidthPanel::refresh(const TelemetryHistory& history) {
    const uint32_t layers = layers_;
    const BandwidthSummary s = summarize_bandwidth(history, layers);
    double maxTotal = 0, maxRate = 0;
    for (const LayerBandwidth& lb : s.layers) {
        double total = 0;
        for (double b : lb.bytesPerToken) total += b;
        maxTotal = std::max(maxTotal, total);
        maxRate = std::max(maxRate, lb.achievedBytesPerSecond / 1e9);
    }
    const bool useMiB = maxTotal >= kBytesPerMiB;
    const double scale = useMiB ? 1.0 / kBytesPerMiB : 1.0 / 1024.0;
    unit_ = useMiB ? QStringLiteral("MiB") : QStringLiteral("KiB");
    // Only what changed is touched: every QtCharts setter schedules a relayout of the chart.
    const QString axisTitle = tr("%1 per token").arg(unit_);
    if (bytesAxis_->titleText() != axisTitle) bytesAxis_->setTitleText(axisTitle);
    for (int k = 0; k < 5; ++k) {
        for (uint32_t l = 0; l < layers; ++l) {
            const double v = s.layers[l].bytesPerToken[k] * scale;
            if (sets_[k]->at(int(l)) != v) sets_[k]->replace(int(l), v);
        }
    }
    QList<QPointF> points;
    points.reserve(int(layers));
    for (uint32_t l = 0; l < layers; ++l) points.append(QPointF(double(l), s.layers[l].achievedBytesPerSecond / 1e9));
    if (achieved_->points() != points) achieved_->replace(points);
    const double bytesMax = detail::sticky_axis_max(bytesAxis_->max(), maxTotal > 0 ? maxTotal * scale * 1.1 : 1.0);
    const double rateMax =
        detail::sticky_axis_max(rateAxis_->max(), std::max({maxRate, readBytesPerSecond_ / 1e9, 0.001}) * 1.1);
    set_axis_max(bytesAxis_, bytesMax);
    set_axis_max(rateAxis_, rateMax);

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

int BandwidthPanel::layerCategoryCount() const { return int(layerAxis_->count()); }

QStringList BandwidthPanel::streamSetLabels() const {
    QStringList labels;
    for (QBarSet* set : bars_->barSets()) labels << set->label();
    return labels;
}

double BandwidthPanel::barValue(int stream, int layer) const {
    const QList<QBarSet*> sets = bars_->barSets();
    if (stream < 0 || stream >= sets.size() || layer < 0 || layer >= sets[stream]->count()) return -1;
    return sets[stream]->at(layer);
}

QString BandwidthPanel::criticalPathText() const { return criticalPath_->text(); }
QString BandwidthPanel::summaryText() const { return summaryText_->text(); }

} // namespace cflow::ui
