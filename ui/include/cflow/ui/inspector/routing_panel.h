#pragma once
// Expert routing panel: a layer x expert heatmap of how often each expert was chosen over the
// sliding window of recent tokens, and a strip (rows = layers, columns = recent tokens) of the
// experts each token used. Hovering a cell names token, layer, expert and routing weight.
// Dense models get an explanatory hint instead of empty grids.
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include <QColor>
#include <QImage>
#include <QPixmap>
#include <QRegion>
#include <QString>
#include <QWidget>

#include "cflow/ui/inspector/telemetry_history.h"

class QLabel;
class QStackedLayout;

namespace cflow::ui {

// Names a token id for tooltips ("'hello'"); may be empty.
using TokenNamer = std::function<QString(int32_t token)>;

class ExpertHeatmap : public QWidget {
    Q_OBJECT
public:
    explicit ExpertHeatmap(QWidget* parent = nullptr);
    void setCounts(RoutingCounts counts);
    int rows() const { return int(counts_.layers); }      // layers
    int columns() const { return int(counts_.experts); }  // experts
    uint32_t count(int layer, int expert) const;
    // (layer, expert) under a widget position, if any.
    std::optional<std::pair<int, int>> cellAt(QPoint pos) const;
    QString cellToolTip(int layer, int expert) const;
    QString toolTipAt(QPoint pos) const;  // the cell's tooltip under pos; empty outside the grid
    QRect cellRect(int layer, int expert) const;
    QSize sizeHint() const override;
    // The colour scale under the grid: a gradient from "chosen by none" to "chosen by every token
    // of the window"; empty when the widget is too small to show it beside readable cells.
    QRect scaleBarRect() const;
    static QRgb hotColor() { return qRgb(0xc0, 0x39, 0x2b); }  // a cell chosen by every token

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

private:
    QRect gridRect() const;
    int scaleHeight() const;  // pixel rows under the grid the scale takes (0: hidden)
    void ensureStatic();  // background, grid lines, labels and the scale, cached until resize/shape change
    RoutingCounts counts_;
    QPixmap static_;
    QSize staticSize_;
    int staticRows_ = -1, staticCols_ = -1;
    QRegion staticOnly_;  // what the pixmap shows that the cell fills do not cover (outlines, labels)
    qint64 staticPalette_ = -1;
    mutable QSize layoutSize_;  // the size and rows layoutScaleHeight_ was worked out for
    mutable int layoutRows_ = -1;
    mutable int layoutScaleHeight_ = 0;
};

class TokenStrip : public QWidget {
    Q_OBJECT
public:
    struct Choice {
        uint8_t nSelected = 0;
        std::array<uint8_t, kMaxTopK> experts{};
        std::array<float, kMaxTopK> weights{};
        int16_t injectionLayer = -1;  // where this layer's router's experts are added
    };
    struct Column {
        uint32_t position = 0;
        int32_t token = -1;
        std::vector<Choice> layers;  // [layers]
    };

    explicit TokenStrip(QWidget* parent = nullptr);
    void setTokenNamer(TokenNamer namer) { namer_ = std::move(namer); }
    void setColumns(std::vector<Column> columns, uint32_t layers, uint32_t experts);
    int rows() const { return int(layers_); }
    int columns() const { return int(columns_.size()); }
    // Highlights the column of this token position; false when it is not in the strip.
    bool highlightToken(uint32_t position);
    std::optional<uint32_t> highlightedPosition() const { return highlighted_; }
    int highlightedColumn() const;
    // The tooltip text at a widget position (empty outside cells) and the rectangle of a cell.
    QString toolTipAt(QPoint pos) const;
    QRect cellRect(int layer, int column) const;
    QSize sizeHint() const override;
    // The legend under the grid: one swatch per expert in its expert_color() (a continuous hue
    // bar when there are too many to number) and what paler means; empty when there is no room.
    QRect legendRect() const;
    // Expert e's numbered swatch in the legend; empty when the legend is hidden or a hue bar.
    QRect legendSwatchRect(uint32_t expert) const;

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

private:
    struct LegendLayout {
        QRect area;               // the legend's row under the grid
        int swatchesLeft = 0;     // x of expert 0's swatch
        int swatchStep = 0;       // pixels from one numbered swatch to the next; 0 = a hue bar
        QRect hueBar;             // the continuous bar when swatchStep is 0
        bool showsWeightNote = false;
    };
    QRect gridRect() const;
    int legendHeight() const;  // pixel rows under the grid the legend takes (0: hidden)
    LegendLayout legendLayout() const;
    std::vector<Column> columns_;
    uint32_t layers_ = 0;
    uint32_t experts_ = 0;
    std::optional<uint32_t> highlighted_;
    TokenNamer namer_;
    void ensureStatic();  // background and layer labels, cached until resize/shape change
    QPixmap static_;
    QSize staticSize_;
    int staticRows_ = -1;
    uint32_t staticExperts_ = ~0u;
    qint64 staticPalette_ = -1;
    std::vector<QRgb> expertRgb_;  // expert_color() per expert, for experts_
    QImage cells_;                 // [grid height][grid width] RGB32, the cells drawn as scanlines
    std::vector<QRgb> cellLine_;   // [grid width] one pixel row of a layer's band
    mutable QSize layoutSize_;     // the shape layoutLegendHeight_ was worked out for
    mutable int layoutRows_ = -1;
    mutable uint32_t layoutExperts_ = ~0u;
    mutable int layoutLegendHeight_ = 0;
};

// The colour of an expert: evenly spaced hues, the same in the heatmap legend and the strip.
QColor expert_color(uint32_t expert, uint32_t experts);

class RoutingPanel : public QWidget {
    Q_OBJECT
public:
    explicit RoutingPanel(QWidget* parent = nullptr);
    void setInspectorGeometry(const InspectorGeometry& geometry);
    void setTokenNamer(TokenNamer namer);
    void refresh(const TelemetryHistory& history);

    ExpertHeatmap* heatmap() const { return heatmap_; }
    TokenStrip* strip() const { return strip_; }
    bool showingHint() const;
    QString hintText() const;

public slots:
    void highlightToken(uint32_t position);

private:
    InspectorGeometry geometry_;
    QStackedLayout* stack_ = nullptr;
    QLabel* hint_ = nullptr;
    QWidget* content_ = nullptr;
    QLabel* caption_ = nullptr;
    ExpertHeatmap* heatmap_ = nullptr;
    TokenStrip* strip_ = nullptr;
};

} // namespace cflow::ui
