#pragma once
// Tools > Convert model…: a checkpoint to .cflow in five pages, each long step on a worker so
// the window stays responsive:
//   1. Source: a file or folder, or one found in the Hugging Face cache / the library folders
//   2. Preflight (cflow/engine/convert/conversion_preflight.h): blocking problems disable Next
//   3. Options: quantisation per tensor class, container, output; the output's size and the
//      free space there, live
//   4. Progress: per tensor, MB/s, ETA; Cancel stops it and nothing is left at the output
//   5. Validation (conversion_validation.h): figures and a verdict, saved as the report beside
//      the model (MODEL.report.json / .md) that the model library shows
// The pages' workers share state with the wizard through shared_ptrs and are waited for on
// destruction, so none outlives what it reports to.
#include <memory>

#include <QString>
#include <QStringList>
#include <QWizard>

namespace cflow::ui {

// Convertible checkpoints under the Hugging Face hub cache (models--*/snapshots/*/ with a
// config.json) and GGUF files directly in `folders`; sorted, at most `limit`.
QStringList find_convertible_sources(const QString& huggingFaceHub, const QStringList& folders, int limit = 200);
// ~/.cache/huggingface/hub, or $HF_HUB_CACHE / $HF_HOME/hub when set.
QString default_hugging_face_hub();

class ConvertWizard : public QWizard {
    Q_OBJECT
public:
    enum PageId { SourcePageId, PreflightPageId, OptionsPageId, ProgressPageId, ValidationPageId };

    explicit ConvertWizard(const QString& sourcePath = QString(), QWidget* parent = nullptr);
    ~ConvertWizard() override;

    void setSourcePath(const QString& path);
    void setTokenizerPath(const QString& path);
    void setOutputPath(const QString& path);
    QString sourcePath() const;
    QString tokenizerPath() const;
    QString outputPath() const;
    QString convertedPath() const;  // set once the conversion has succeeded
    // Searched by the source page besides the Hugging Face cache (the model library's folder).
    void setLibraryFolders(const QStringList& folders);

    // True while a page's worker (preflight, conversion, validation) runs.
    bool isBusy() const;

signals:
    void converted(const QString& outputPath);  // Finish pressed after a successful conversion

public slots:
    void reject() override;  // Cancel: stops a running step first; the output is left untouched

public:
    struct PagesState;  // the pages' common state (convert_wizard.cpp)

private:
    std::shared_ptr<PagesState> shared_;
};

} // namespace cflow::ui
