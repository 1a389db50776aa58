#pragma once
// Tree of the opened model's header: one top-level item per summary section
// (File, Global header, Model parameters, Regions, Metadata), one child row per field.
#include <QTreeWidget>

#include "cflow/ui/model_summary.h"

namespace cflow::ui {

class ModelHeaderView : public QTreeWidget {
    Q_OBJECT
public:
    explicit ModelHeaderView(QWidget* parent = nullptr);

    void showSummary(const ModelSummary& summary);
    void clearSummary();

    // The value shown for field name under section title; a null QString when absent.
    QString shownValue(const QString& section, const QString& name) const;
};

} // namespace cflow::ui
