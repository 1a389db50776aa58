#pragma once
// A folder of .cflow / .vflow models as a table: name, architecture, layers, estimated
// parameters, quantization, file size, context, MoE geometry and pipeline delays. Headers
// are read on a worker (QtConcurrent) so a folder of large files never blocks the window;
// a file the reader rejects is still listed, with the reader's message in its row.
#include <cstdint>
#include <vector>

#include <QFuture>
#include <QString>
#include <QWidget>

class QTreeWidget;
class QTreeWidgetItem;

namespace cflow::ui {

struct LibraryEntry {
    QString path;
    QString fileName;
    QString name;            // general.name (empty when absent)
    QString architecture;    // general.architecture (empty when absent)
    uint32_t layers = 0;
    uint64_t parameters = 0;  // elements of every weight, estimated from the header geometry
    QString quantization;    // dtype of the bulk of the weight tiles ("q8_0")
    uint64_t fileBytes = 0;
    uint32_t contextTokens = 0;
    uint32_t experts = 0;    // 0 = dense
    uint64_t expertBankBytes = 0;  // every layer's routed experts (what staged reads leave on disk)
    uint32_t topK = 0;
    uint32_t denseDelay = 0;
    uint32_t expertDelay = 0;
    QString error;           // the reader's message; empty when the file opened
    QString purpose;         // the model card's first paragraph (model_card.h), "" without a card
    // From the conversion report beside the model (MODEL.report.json, conversion_report.h):
    QString validation;      // "pass: top-1 96.1%, KL 0.0011"; "" without a report
    QString validationReport;  // the report's Markdown, for the tooltip
};

// The validation cell of a conversion report's JSON text; "" when it has no validation.
QString validation_summary(const QByteArray& reportJson);
// A note for a model that needs more memory than is free now ("" when it fits or is unknown). For a
// mixture-of-experts model whose weights without the experts fit, it proposes staged expert reads
// with an expert cache sized as "fit to free memory" would size it.
QString memory_warning(const LibraryEntry& entry, uint64_t availableBytes);

// Lists the .cflow and .vflow models directly in folder (non-recursive; sniff_model_path decides,
// model_path_kind.h), sorted by file name. Blocking: call it off the GUI thread.
std::vector<LibraryEntry> scan_model_folder(const QString& folder);

class ModelLibrary : public QWidget {
    Q_OBJECT
public:
    enum Column { File, Name, Architecture, Layers, Parameters, Quantization, Size, Context, Moe, Delays, Status, Validation, About, ColumnCount };

    explicit ModelLibrary(QWidget* parent = nullptr);
    ~ModelLibrary() override;

    // Starts scanning folder; the list is replaced when the scan finishes (scanFinished).
    // A newer call supersedes a scan still running.
    void setFolder(const QString& folder);
    const QString& folder() const { return folder_; }
    const std::vector<LibraryEntry>& entries() const { return entries_; }
    QTreeWidget* tree() const { return tree_; }
    // True from setFolder until its rows are shown: the future can have finished while the
    // watcher's queued finished() has not yet reached this thread.
    bool isScanning() const { return scanning_; }

signals:
    void scanFinished(int rows);
    void openRequested(const QString& path);

private:
    void showEntries(std::vector<LibraryEntry> entries);

    QTreeWidget* tree_ = nullptr;
    QFuture<std::vector<LibraryEntry>> pending_;  // the newest scan
    bool scanning_ = false;
    QString folder_;
    std::vector<LibraryEntry> entries_;
    uint64_t scanId_ = 0;  // id of the newest scan; results of older ones are dropped
};

} // namespace cflow::ui
