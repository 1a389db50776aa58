#include "cflow/ui/model_library.h"

#include <algorithm>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QFutureWatcher>
#include <QHeaderView>
#include <QLocale>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "cflow/engine/convert/conversion_report.h"
#include "cflow/engine/io/system_memory.h"
#include "cflow/formats/cflow_reader.h"
#include "cflow/formats/dtype.h"
#include "cflow/formats/model_path_kind.h"
#include "cflow/ui/model_card.h"
#include "metadata_text.h"

namespace cflow::ui {
namespace {

// A report file beside a model, at most 1 MiB (a larger one is not ours): "" when absent.
QByteArray read_small_file(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly) || file.size() > (1 << 20)) return {};
    return file.readAll();
}

// One row: the model's header geometry and metadata, or the reader's message when it does not open.
LibraryEntry library_entry(const QFileInfo& info) {
    const QString path = info.absoluteFilePath();
    auto opened = CflowFile::open(path.toStdString());
    if (!opened)
        return {.path = path,
                .fileName = info.fileName(),
                .fileBytes = static_cast<uint64_t>(info.size()),
                .error = QString::fromStdString(opened.error())};
    const CflowFile& file = **opened;
    const ConversionReportPaths report = conversion_report_paths(path.toStdString());
    const GlobalHeader& h = file.header();
    uint64_t bankBytes = 0;
    for (const RegionView& layer : file.layers())
        for (const SegmentView& segment : layer.segments)
            if (segment.role == SegmentRole::ExpertBank) bankBytes += segment.bytes;
    return {.path = path,
            .fileName = info.fileName(),
            .name = metadata_text(file, "general.name"),
            .architecture = metadata_text(file, "general.architecture"),
            .layers = h.n_layers,
            .parameters = estimate_parameters(h, file.params()),
            .quantization = QString::fromLatin1(dtype_name(static_cast<DType>(h.weight_quant))),
            .fileBytes = file.file_bytes(),
            .contextTokens = h.max_seq_len,
            .experts = h.n_experts,
            .expertBankBytes = bankBytes,
            .topK = h.top_k,
            .denseDelay = h.dense_delay,
            .expertDelay = h.expert_delay,
            .purpose = read_model_card(file, path).purpose,
            .validation = validation_summary(read_small_file(QString::fromStdString(report.json))),
            .validationReport = QString::fromUtf8(read_small_file(QString::fromStdString(report.markdown)))};
}

} // namespace

QString validation_summary(const QByteArray& reportJson) {
    const QJsonObject v = QJsonDocument::fromJson(reportJson).object().value(QStringLiteral("validation")).toObject();
    if (v.isEmpty()) return {};
    return QStringLiteral("%1: top-1 %2%, KL %3")
        .arg(v.value(QStringLiteral("verdict")).toString())
        .arg(100 * v.value(QStringLiteral("top1_agreement")).toDouble(), 0, 'f', 1)
        .arg(v.value(QStringLiteral("mean_kl_nats")).toDouble(), 0, 'g', 2);
}

QString memory_warning(const LibraryEntry& e, uint64_t availableBytes) {
    if (availableBytes == 0 || e.fileBytes <= availableBytes) return {};
    const QLocale locale;
    QString text = QObject::tr("needs %1, %2 free now").arg(locale.formattedDataSize(qint64(e.fileBytes)),
                                                            locale.formattedDataSize(qint64(availableBytes)));
    if (e.experts == 0) return text;
    const uint64_t resident = e.fileBytes > e.expertBankBytes ? e.fileBytes - e.expertBankBytes : 0;
    if (e.expertBankBytes == 0 || resident >= availableBytes)
        return text + QObject::tr(": staged expert reads read only the routed experts, but even without them it needs %1")
                          .arg(locale.formattedDataSize(qint64(resident)));
    // As expert_cache_fit_bytes: half of the free memory, less what stays resident, at most the bank.
    const uint64_t half = availableBytes / 2;
    const uint64_t cache = half > resident ? std::min(half - resident, e.expertBankBytes) : 0;
    text += QObject::tr(": choose staged expert reads (%1 stays in RAM, the %2 of experts are read from disk as routed)")
                .arg(locale.formattedDataSize(qint64(resident)), locale.formattedDataSize(qint64(e.expertBankBytes)));
    if (cache > 0)
        text += QObject::tr(" with an expert cache of %1 (Expert cache: fit to free memory)").arg(locale.formattedDataSize(qint64(cache)));
    return text;
}

std::vector<LibraryEntry> scan_model_folder(const QString& folder) {
    std::vector<LibraryEntry> entries;
    const QFileInfoList files = QDir(folder).entryInfoList(QDir::Files | QDir::Readable | QDir::Hidden, QDir::Name);
    for (const QFileInfo& info : files) {
        // What counts as a model is formats' rule (a .cflow/.vflow name or magic), as everywhere else.
        if (is_cflow_container(sniff_model_path(info.absoluteFilePath().toStdString())))
            entries.push_back(library_entry(info));
    }
    return entries;
}

ModelLibrary::ModelLibrary(QWidget* parent) : QWidget(parent) {
    tree_ = new QTreeWidget(this);
    tree_->setObjectName(QStringLiteral("modelLibraryTree"));
    tree_->setRootIsDecorated(false);
    tree_->setAlternatingRowColors(true);
    tree_->setSortingEnabled(true);
    tree_->setHeaderLabels({tr("File"), tr("Name"), tr("Architecture"), tr("Layers"), tr("Parameters"),
                            tr("Quantization"), tr("Size"), tr("Context"), tr("MoE (E/top-k)"),
                            tr("Delays (dense/expert)"), tr("Status"), tr("Validation"), tr("About")});
    tree_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    tree_->header()->setSectionResizeMode(About, QHeaderView::Stretch);  // long card text elides
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(tree_);

    connect(tree_, &QTreeWidget::itemDoubleClicked, this, [this](QTreeWidgetItem* item, int) {
        const QString path = item->data(File, Qt::UserRole).toString();
        if (!path.isEmpty()) emit openRequested(path);
    });
}

// The scan captures only its folder string, so a running one may outlive the widget safely.
ModelLibrary::~ModelLibrary() = default;

void ModelLibrary::setFolder(const QString& folder) {
    folder_ = folder;
    const uint64_t id = ++scanId_;
    scanning_ = true;
    auto* watcher = new QFutureWatcher<std::vector<LibraryEntry>>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, id] {
        watcher->deleteLater();
        if (id != scanId_) return;  // superseded by a newer folder
        scanning_ = false;
        showEntries(watcher->result());
    });
    watcher->setFuture(QtConcurrent::run([folder] { return scan_model_folder(folder); }));
    pending_ = watcher->future();
}

void ModelLibrary::showEntries(std::vector<LibraryEntry> entries) {
    entries_ = std::move(entries);
    tree_->setSortingEnabled(false);
    tree_->clear();
    const QLocale locale;
    const uint64_t availableMemoryBytes = query_system_memory().available_bytes;
    for (const LibraryEntry& e : entries_) {
        auto* item = new QTreeWidgetItem(tree_);
        item->setText(File, e.fileName);
        item->setData(File, Qt::UserRole, e.path);
        item->setToolTip(File, QDir::toNativeSeparators(e.path));
        item->setText(Size, locale.formattedDataSize(static_cast<qint64>(e.fileBytes)));
        if (!e.error.isEmpty()) {
            item->setText(Status, e.error);
            item->setToolTip(Status, e.error);
            item->setForeground(Status, QBrush(Qt::red));
            continue;
        }
        item->setText(Name, e.name);
        item->setText(Architecture, e.architecture);
        item->setText(Layers, QString::number(e.layers));
        item->setText(Parameters, human_count(e.parameters));
        item->setToolTip(Parameters, locale.toString(static_cast<qulonglong>(e.parameters)));
        item->setText(Quantization, e.quantization);
        item->setText(Context, QString::number(e.contextTokens));
        item->setText(Moe, e.experts == 0 ? tr("dense") : QStringLiteral("%1/%2").arg(e.experts).arg(e.topK));
        item->setText(Delays, QStringLiteral("%1/%2").arg(e.denseDelay).arg(e.expertDelay));
        const QString memory = memory_warning(e, availableMemoryBytes);
        item->setText(Status, memory.isEmpty() ? tr("ok") : memory);
        if (!memory.isEmpty()) item->setForeground(Status, QBrush(QColor(0xb0, 0x60, 0x00)));
        item->setText(Validation, e.validation.isEmpty() ? tr("—") : e.validation);
        if (!e.validationReport.isEmpty()) item->setToolTip(Validation, e.validationReport);
        item->setText(About, e.purpose);
        item->setToolTip(About, e.purpose);
    }
    tree_->setSortingEnabled(true);
    emit scanFinished(static_cast<int>(entries_.size()));
}

} // namespace cflow::ui
