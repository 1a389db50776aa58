// CompareChartsWidget for a build without Qt Charts (ui/CMakeLists.txt builds this file instead of
// compare_charts.cpp): the charts page says why it is empty; the table, CSV and Markdown of the
// comparison are unaffected.
#include "cflow/ui/compare_charts.h"

#include <QLabel>
#include <QVBoxLayout>

namespace cflow::ui {

CompareChartsWidget::CompareChartsWidget(QWidget* parent) : QWidget(parent) {
    auto* note = new QLabel(tr("This build of cflow studio has no Qt Charts, so the comparison is shown as a "
                               "table only (Results tab, CSV and Markdown export)."),
                            this);
    note->setObjectName(QStringLiteral("compareChartsUnavailable"));
    note->setWordWrap(true);
    note->setAlignment(Qt::AlignCenter);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(note);
}

void CompareChartsWidget::clear() {}

void CompareChartsWidget::setReport(const CompareReport& report) { report_ = report; }

QStringList CompareChartsWidget::chartNames() const { return {}; }

Result<QStringList> CompareChartsWidget::savePngs(const QString&) const { return QStringList{}; }

} // namespace cflow::ui
