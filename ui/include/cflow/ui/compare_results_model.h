#pragma once
// The comparison's results as a table: one row per entry, the entry's name then one column per
// measured metric (metrics no entry has are left out). The table view, the CSV and the Markdown
// export all read the cells' text from here, so their numbers are the same characters.
#include <vector>

#include <QAbstractTableModel>
#include <QString>

#include "cflow/base/result.h"
#include "cflow/engine/compare/comparison.h"

namespace cflow::ui {

// A metric's value as the table shows it: fixed decimals per metric, no thousands separators.
QString format_metric(CompareMetric metric, double value);
// The same with its unit, for hover texts: "123.46 tok/s", "2500000 bytes (2.38 MiB)", "45.67 %".
QString metric_value_text(CompareMetric metric, double value);
// Why the entries are ranked by bits per byte and not by perplexity, when their tokenizers differ;
// "" when they share one.
QString compare_quality_note(const CompareReport& report);
// "Ranked by bits per byte (lower is better): 1. b (1.0235), 2. a (1.9870)." by
// compare_quality_metric; "" when no entry has it.
QString compare_quality_ranking(const CompareReport& report);

class CompareResultsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    static constexpr int RawValueRole = Qt::UserRole + 1;  // the unrounded double (charts, sorting)

    explicit CompareResultsModel(QObject* parent = nullptr);
    void setReport(const CompareReport& report);
    const CompareReport& report() const { return report_; }
    const std::vector<CompareMetric>& metrics() const { return metrics_; }  // column c + 1 shows metrics_[c]

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    // The cells' display text: a header row of metric keys (CSV) or labels (Markdown), then a row
    // per entry; a metric an entry lacks is empty (CSV) or "–" (Markdown).
    QString toCsv() const;
    QString toMarkdown() const;

private:
    CompareReport report_;
    std::vector<CompareMetric> metrics_;
};

// Written through QSaveFile: a failed export leaves no partial file.
Status save_text_file(const QString& path, const QString& text);

} // namespace cflow::ui
