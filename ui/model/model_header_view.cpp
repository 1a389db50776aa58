#include "cflow/ui/model_header_view.h"

#include <QHeaderView>

namespace cflow::ui {

ModelHeaderView::ModelHeaderView(QWidget* parent) : QTreeWidget(parent) {
    setColumnCount(2);
    setHeaderLabels({tr("Field"), tr("Value")});
    setRootIsDecorated(true);
    setAlternatingRowColors(true);
    setUniformRowHeights(true);  // thousands of metadata/region rows stay cheap to lay out
    header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    header()->setStretchLastSection(true);
}

void ModelHeaderView::showSummary(const ModelSummary& summary) {
    clear();
    for (const SummarySection& section : summary) {
        auto* group = new QTreeWidgetItem(this, {section.title});
        group->setFirstColumnSpanned(true);
        for (const SummaryField& field : section.fields) {
            auto* row = new QTreeWidgetItem(group, {field.name, field.value});
            row->setToolTip(1, field.value);
        }
        // Long sections (one row per layer, tokenizer metadata) start collapsed.
        group->setExpanded(section.fields.size() <= 32);
    }
}

void ModelHeaderView::clearSummary() { clear(); }

QString ModelHeaderView::shownValue(const QString& section, const QString& name) const {
    for (int i = 0; i < topLevelItemCount(); ++i) {
        const QTreeWidgetItem* group = topLevelItem(i);
        if (group->text(0) != section) continue;
        for (int j = 0; j < group->childCount(); ++j)
            if (group->child(j)->text(0) == name) return group->child(j)->text(1);
    }
    return {};
}

} // namespace cflow::ui
