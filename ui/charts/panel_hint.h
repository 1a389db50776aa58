#pragma once
// Internal to the inspector charts: the routing and stall panels show an explanatory hint instead
// of empty charts while there is nothing expert-related to draw (a dense model, or no data yet).
#include <QLabel>
#include <QStackedLayout>
#include <QString>

#include "cflow/ui/inspector/telemetry_history.h"

namespace cflow::ui::detail {

// denseModelText: %1 = the model's name.
inline void show_content_or_hint(QStackedLayout* stack, QLabel* hint, QWidget* content, const InspectorGeometry& geometry,
                                 const QString& denseModelText, const QString& noDataText) {
    if (!geometry.dense()) {
        stack->setCurrentWidget(content);
        return;
    }
    hint->setText(geometry.fromModel ? denseModelText.arg(QString::fromStdString(geometry.modelName)) : noDataText);
    stack->setCurrentWidget(hint);
}

} // namespace cflow::ui::detail
