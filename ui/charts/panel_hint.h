#pragma once
// Internal to the inspector charts: the routing and stall panels show an explanatory hint instead
// of empty charts while there is nothing expert-related to draw (a dense model, or no data yet).
#include <QLabel>
#include <QStackedLayout>
#include <QString>

#include "cflow/ui/inspector/telemetry_history.h"

namespace cflow::ui::detail {

// The hint label: word-wrapped at the top of the panel. Centred, it sat in the middle of the
// charts' minimum height, which a short dock scrolled out of view.
inline QLabel* make_panel_hint(QWidget* parent) {
    auto* hint = new QLabel(parent);
    hint->setObjectName(QStringLiteral("panelHint"));
    hint->setWordWrap(true);
    hint->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    hint->setMargin(8);
    hint->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return hint;
}

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
