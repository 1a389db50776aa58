#include "cflow/ui/compare_results_model.h"
#include "qt_text.h"

#include <QDir>
#include <QSaveFile>

namespace cflow::ui {
namespace {

int decimals(CompareMetric metric) {
    switch (metric) {
        case CompareMetric::DecodeTokPerS:
        case CompareMetric::PrefillTokPerS: return 2;
        case CompareMetric::Perplexity: return 3;
        case CompareMetric::Top1Agreement:
        case CompareMetric::ExpertWaitShare: return 4;
        case CompareMetric::MeanKlNats: return 5;
        case CompareMetric::BNaiveMiB:
        case CompareMetric::BCriticalMiB: return 4;
        default: return 0;  // bytes per token: whole bytes
    }
}

// RFC 4180: quote a field holding a comma, a quote or a line break.
QString csv_field(const QString& s) {
    if (!s.contains(u',') && !s.contains(u'"') && !s.contains(u'\n') && !s.contains(u'\r')) return s;
    QString quoted = s;
    quoted.replace(u'"', QStringLiteral("\"\""));
    return u'"' + quoted + u'"';
}

QString markdown_cell(const QString& s) {
    QString t = s;
    t.replace(u'|', QStringLiteral("\\|"));
    t.replace(u'\n', u' ');
    return t;
}


} // namespace

QString format_metric(CompareMetric metric, double value) { return QString::number(value, 'f', decimals(metric)); }

CompareResultsModel::CompareResultsModel(QObject* parent) : QAbstractTableModel(parent) {}

void CompareResultsModel::setReport(const CompareReport& report) {
    beginResetModel();
    report_ = report;
    metrics_.clear();
    for (size_t m = 0; m < kCompareMetricCount; ++m)
        for (const CompareRow& row : report_.rows)
            if (row.values[m]) {
                metrics_.push_back(CompareMetric(m));
                break;
            }
    endResetModel();
}

int CompareResultsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(report_.rows.size()); }
int CompareResultsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(metrics_.size()) + 1; }

QVariant CompareResultsModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
    const CompareRow& row = report_.rows[size_t(index.row())];
    if (index.column() == 0) {
        if (role == Qt::DisplayRole) return QString::fromStdString(row.displayName);
        if (role == Qt::ToolTipRole) return QString::fromStdString(row.entry.modelPath);
        return {};
    }
    const CompareMetric metric = metrics_[size_t(index.column() - 1)];
    const auto value = row.value(metric);
    if (role == Qt::TextAlignmentRole) return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (!value) return {};
    if (role == Qt::DisplayRole) return format_metric(metric, *value);
    if (role == RawValueRole) return *value;
    return {};
}

QVariant CompareResultsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (role != Qt::DisplayRole) return {};
    if (orientation == Qt::Vertical) return section + 1;
    if (section == 0) return tr("Entry");
    if (section < 1 || size_t(section - 1) >= metrics_.size()) return {};
    return qt(compare_metric_label(metrics_[size_t(section - 1)]));
}

QString CompareResultsModel::toCsv() const {
    QStringList header{QStringLiteral("entry")};
    for (CompareMetric m : metrics_) header << qt(compare_metric_key(m));
    QString out = header.join(u',') + QStringLiteral("\r\n");
    for (int r = 0; r < rowCount(); ++r) {
        QStringList cells;
        for (int c = 0; c < columnCount(); ++c) cells << csv_field(data(index(r, c)).toString());
        out += cells.join(u',') + QStringLiteral("\r\n");
    }
    return out;
}

QString CompareResultsModel::toMarkdown() const {
    QStringList header{markdown_cell(headerData(0, Qt::Horizontal).toString())};
    QStringList rule{QStringLiteral("---")};
    for (int c = 1; c < columnCount(); ++c) {
        header << markdown_cell(headerData(c, Qt::Horizontal).toString());
        rule << QStringLiteral("---:");
    }
    QString out = QStringLiteral("| ") + header.join(QStringLiteral(" | ")) + QStringLiteral(" |\n| ") +
                  rule.join(QStringLiteral(" | ")) + QStringLiteral(" |\n");
    for (int r = 0; r < rowCount(); ++r) {
        QStringList cells;
        for (int c = 0; c < columnCount(); ++c) {
            const QString text = data(index(r, c)).toString();
            cells << (text.isEmpty() ? QStringLiteral("–") : markdown_cell(text));
        }
        out += QStringLiteral("| ") + cells.join(QStringLiteral(" | ")) + QStringLiteral(" |\n");
    }
    if (!report_.textName.empty())
        out += QStringLiteral("\nPerplexity text: %1 (%2 tokens).").arg(QString::fromStdString(report_.textName)).arg(report_.textTokens);
    if (!report_.referenceName.empty())
        out += QStringLiteral(" Agreement and KL against %1.").arg(QString::fromStdString(report_.referenceName));
    if (!report_.isa.empty()) out += QStringLiteral(" Kernel path %1.").arg(QString::fromStdString(report_.isa));
    return out + u'\n';
}

Status save_text_file(const QString& path, const QString& text) {
    QSaveFile file(path);
    const QByteArray bytes = text.toUtf8();
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit())
        return make_error(QStringLiteral("%1: cannot write: %2").arg(QDir::toNativeSeparators(path), file.errorString()).toStdString());
    return {};
}

} // namespace cflow::ui
