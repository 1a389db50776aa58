#pragma once
// Internal to the inspector charts: what every hand-painted chart widget does the same way.
#include <QEvent>
#include <QHelpEvent>
#include <QPixmap>
#include <QToolTip>
#include <QWidget>

namespace cflow::ui::detail {

// A widget-sized pixmap at the widget's device pixel ratio, for a cached background.
inline QPixmap widget_pixmap(const QWidget* w) {
    const qreal dpr = w->devicePixelRatioF();
    QPixmap pm(w->size() * dpr);
    pm.setDevicePixelRatio(dpr);
    return pm;
}

// Handles a tooltip event with the widget's toolTipAt(QPoint) (no text: hides the tooltip);
// false for any other event.
template <class Chart>
bool handle_tool_tip(Chart* chart, QEvent* event) {
    if (event->type() != QEvent::ToolTip) return false;
    auto* help = static_cast<QHelpEvent*>(event);
    const QString text = chart->toolTipAt(help->pos());
    if (text.isEmpty()) QToolTip::hideText();
    else QToolTip::showText(help->globalPos(), text, chart);
    return true;
}

} // namespace cflow::ui::detail
