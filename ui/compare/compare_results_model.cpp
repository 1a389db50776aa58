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
        case CompareMetric::BitsPerByte: return 4;
        case CompareMetric::Top1Agreement:
        case CompareMetric::ExpertWaitShare: return 4;
        case CompareMetric::MeanKlNats: return 5;
        case CompareMetric::BNaiveMiB:
        case CompareMetric::BCriticalMiB: return 4;
        case CompareMetric::TimeToFirstTokenMs: return 1;
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

QString metric_value_text(CompareMetric metric, double value) {
    const QString number = format_metric(metric, value);
    switch (metric) {
        case CompareMetric::DecodeTokPerS:
        case CompareMetric::PrefillTokPerS: return number + QStringLiteral(" tok/s");
        case CompareMetric::Top1Agreement:
        case CompareMetric::ExpertWaitShare: return QString::number(value * 100, 'f', 2) + QStringLiteral(" %");
        case CompareMetric::MeanKlNats: return number + QStringLiteral(" nats");
        case CompareMetric::BitsPerByte: return number + QStringLiteral(" bits/byte");
        case CompareMetric::BNaiveMiB:
        case CompareMetric::BCriticalMiB: return number + QStringLiteral(" MiB/token");
        case CompareMetric::Perplexity: return number;
        case CompareMetric::TimeToFirstTokenMs: return number + QStringLiteral(" ms");
        default: break;  // bytes per token, all streams and each
    }
    const double kib = value / 1024.0, mib = kib / 1024.0;
    const QString scaled = mib >= 1 ? QStringLiteral("%1 MiB").arg(mib, 0, 'f', 2)
                           : kib >= 1 ? QStringLiteral("%1 KiB").arg(kib, 0, 'f', 2) : QString();
    return number + QStringLiteral(" bytes") + (scaled.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(scaled));
}

QString compare_quality_note(const CompareReport& report) {
    if (compare_quality_metric(report) != CompareMetric::BitsPerByte) return {};
    QString note = QObject::tr("These entries use different tokenizers, so their perplexities do not compare: perplexity is per "
                               "token, and a vocabulary of shorter pieces has more, easier tokens to predict, so it scores lower "
                               "without being the better model. They are ranked by bits per byte instead, which does not depend "
                               "on the tokenizer");
    if (report.scoredTextBytes)
        note += QObject::tr(" (every entry scored the same %1 bytes of text)").arg(report.scoredTextBytes);
    return note + QObject::tr("; perplexity stays in the table beside it.");
}

QString compare_quality_ranking(const CompareReport& report) {
    const CompareMetric metric = compare_quality_metric(report);
    const std::vector<size_t> order = rank_compare_rows(report, metric);
    if (order.empty()) return {};
    QStringList places;
    for (size_t k = 0; k < order.size(); ++k)
        places << QStringLiteral("%1. %2 (%3)")
                      .arg(k + 1)
                      .arg(QString::fromStdString(report.rows[order[k]].displayName), format_metric(metric, *report.rows[order[k]].value(metric)));
    return QObject::tr("Ranked by %1 (%2): %3.")
        .arg(qt(compare_metric_label(metric)).toLower(),
             compare_metric_higher_is_better(metric) ? QObject::tr("higher is better") : QObject::tr("lower is better"),
             places.join(QStringLiteral(", ")));
}

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
        if (role == Qt::ToolTipRole)
            return QString::fromStdString(row.failure.empty() ? row.entry.modelPath : row.failure);
        return {};
    }
    const CompareMetric metric = metrics_[size_t(index.column() - 1)];
    const auto value = row.value(metric);
    if (role == Qt::TextAlignmentRole) return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    // An endpoint entry's empty cell says why ("not reported by the endpoint"), in the table and
    // the exports alike, so it never reads as a 0 or as a value left out by accident.
    if (!value) {
        const bool textual = role == Qt::DisplayRole || role == Qt::ToolTipRole;
        return textual && !row.note(metric).empty() ? QVariant(QString::fromStdString(row.note(metric))) : QVariant();
    }
    if (role == Qt::DisplayRole) return format_metric(metric, *value);
    // How an endpoint's value was measured ("truncated: over the endpoint's top 20 tokens only").
    if (role == Qt::ToolTipRole && !row.note(metric).empty()) return QString::fromStdString(row.note(metric));
    if (role == RawValueRole) return *value;
    return {};
}

QVariant CompareResultsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (role == Qt::ToolTipRole && orientation == Qt::Horizontal && section >= 1 && size_t(section - 1) < metrics_.size()) {
        const CompareMetric metric = metrics_[size_t(section - 1)];
        if (metric == CompareMetric::BitsPerByte)
            return tr("Bits to encode the scored text, per UTF-8 byte of it: compares models whatever their tokenizers.");
        if (metric == CompareMetric::Perplexity)
            return report_.tokenizersDiffer ? tr("Per token: these entries' tokenizers differ, so compare bits per byte instead.")
                                            : tr("Per token of the entries' shared tokenizer.");
        return {};
    }
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
    if (const QString ranking = compare_quality_ranking(report_); !ranking.isEmpty() && report_.tokenizersDiffer)
        out += u' ' + ranking + u' ' + compare_quality_note(report_);
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
