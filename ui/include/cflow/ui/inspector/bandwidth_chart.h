#pragma once
// The bandwidth panel's chart: per layer, stacked bars of the weight bytes one token read by
// stream (left axis), the bandwidth the layer achieved as a line, and the machine's measured
// read bandwidth as a dashed "speed of light" line (right axis, GB/s). Painted directly, like
// the other inspector charts: the QtCharts version repainted its whole scene for every frame
// in which the achieved line moved (about 1.5x the GUI time of the hand-painted panels,
// cflow_bench_inspector). Title, legend, axes and grid are cached in a pixmap that is rebuilt
// only when the size, palette, font, layer count, unit or an axis maximum changes.
#include <array>
#include <vector>

#include <QMargins>
#include <QPixmap>
#include <QString>
#include <QWidget>

namespace cflow::ui {

class BandwidthChart : public QWidget {
    Q_OBJECT
public:
    static constexpr int kStreams = 5;  // Stream order: attention, dense, experts, router, vocab

    explicit BandwidthChart(QWidget* parent = nullptr);

    // bytes[stream][layer] in `unit` per token; achievedGBps[layer]. Sizes follow setLayers.
    void setLayers(int layers);
    void setData(const std::array<std::vector<double>, kStreams>& bytes, const QString& unit,
                 const std::vector<double>& achievedGBps);
    void setSpeedOfLight(double gbps);  // 0 = not measured: no line

    int layers() const { return layers_; }
    double bytes(int stream, int layer) const;  // -1 outside the chart
    double achieved(int layer) const;           // GB/s, -1 outside the chart
    double speedOfLight() const { return speedOfLightGBps_; }
    QString unit() const { return unit_; }
    double bytesAxisMax() const { return bytesAxisMax_; }
    double rateAxisMax() const { return rateAxisMax_; }
    static QString streamLabel(int stream);
    QString toolTipAt(QPoint pos) const;
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

private:
    QRect plotRect() const;
    int layerAt(QPoint pos) const;
    QRect barRect(int layer) const;  // the layer's bar column inside the plot
    void updateAxes();               // sticky nice maxima for the current data
    void ensureStatic();

    int layers_ = 0;
    std::array<std::vector<double>, kStreams> bytes_;  // [stream][layer]
    std::vector<double> achievedGBps_;                 // [layer]
    double speedOfLightGBps_ = 0;
    QString unit_ = QStringLiteral("KiB");
    double bytesAxisMax_ = 1.0;
    double rateAxisMax_ = 1.0;

    mutable QMargins margins_;  // plot area inside the widget; null until measured (font, legend rows)
    mutable int marginsWidth_ = -1;
    QPixmap static_;
    QSize staticSize_;
    qint64 staticPalette_ = -1;
    int staticLayers_ = -1;
    QString staticUnit_;
    double staticBytesMax_ = -1, staticRateMax_ = -1, staticSpeedOfLight_ = -1;
};

} // namespace cflow::ui
