#pragma once
// Per-token totals of compute vs expert-wait stall as a fixed row of stacked bars (newest on
// the right), painted directly: the QtCharts version cost 2-3 ms of the GUI thread per frame
// (QGraphicsView repainting its scene for every bar that moved), which at 30 Hz slowed decode
// measurably on a 2-core machine. Axes, grid, legend and labels are cached in a pixmap that is
// rebuilt only when the size, palette or the (nice-stepped) ms axis changes.
#include <vector>

#include <QMargins>
#include <QPixmap>
#include <QWidget>

#include "cflow/ui/inspector/telemetry_history.h"

namespace cflow::ui {

class StallTotalsChart : public QWidget {
    Q_OBJECT
public:
    explicit StallTotalsChart(int slotCount, QWidget* parent = nullptr);

    // The newest `slotCount()` entries of `tokens` (oldest first) fill the slots from the right.
    void setTotals(const std::vector<TokenStall>& tokens);

    int slotCount() const { return slots_; }
    int filledSlots() const;
    double computeMs(int slot) const;     // -1 outside [0, slotCount())
    double stallMs(int slot) const;
    // Tokens sampled under a grammar carry a mark above their bar: how many tokens the grammar
    // allowed (-1: no grammar, or outside the chart) of how many, and where the mark is drawn.
    int64_t grammarAllowed(int slot) const;
    int64_t grammarVocab(int slot) const;
    QRect grammarMarkRect(int slot) const;  // empty when the slot has no mark
    double axisMaxMs() const { return axisMaxMs_; }
    QString toolTipAt(QPoint pos) const;
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

private:
    struct Slot {
        bool filled = false;
        uint32_t position = 0;
        double computeMs = 0;
        double stallMs = 0;
        uint32_t grammarAllowed = 0;
        uint32_t grammarVocab = 0;  // 0: no grammar masked this token
        bool operator==(const Slot&) const = default;
    };
    QRect plotRect() const;
    QRect slotColumn(int slot) const;  // the slot's bar column, full plot height
    mutable QMargins margins_;  // plot area inside the widget; null until measured, reset when the font changes
    int slotAt(QPoint pos) const;
    void ensureStatic();

    int slots_;
    std::vector<Slot> values_;     // [slots], newest last
    double axisMaxMs_ = 1.0;
    QPixmap static_;               // background, grid, axes, legend, labels
    QSize staticSize_;
    double staticAxisMaxMs_ = -1;
    qint64 staticPalette_ = -1;
    int staticGrammarLegend_ = -1;  // whether the legend names the grammar mark (any slot has one)
};

} // namespace cflow::ui
