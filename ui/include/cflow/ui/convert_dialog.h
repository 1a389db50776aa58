#pragma once
// Converts a checkpoint (.gguf, Hugging Face folder, llama2.c .bin + tokenizer) to .cflow.
// The conversion runs on a worker; the converter's progress callback reaches the progress bar
// through a queued signal, and Cancel sets the CancelToken (the converter then removes its
// temporary file, so no half-written output is left). Errors stay in the dialog and name the
// user's output path. The status line keeps its height while converting, so the dialog does
// not jump as the messages change.
#include <memory>

#include <QDialog>
#include <QFuture>
#include <QString>

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;

namespace cflow {
struct CancelToken;
}

namespace cflow::ui {

// Where a conversion of sourcePath goes by default: <source base name>.cflow beside the source
// (a folder source: <folder>.cflow beside the folder) when that folder is writable, else in
// fallbackDir (default: Documents/models).
QString default_convert_output_path(const QString& sourcePath, const QString& fallbackDir = QString());
// A converter error as the user should read it: the converter writes to "<output>.tmp-<n>"
// and renames on success, so mentions of that temporary file name the output instead.
QString user_facing_convert_error(const QString& error, const QString& outputPath);

class ConvertDialog : public QDialog {
    Q_OBJECT
public:
    explicit ConvertDialog(const QString& sourcePath = QString(), QWidget* parent = nullptr);
    ~ConvertDialog() override;

    void setSourcePath(const QString& path);    // also proposes an output path and a tokenizer
    void setTokenizerPath(const QString& path);  // llama2.c .bin sources only
    void setOutputPath(const QString& path);
    bool setQuantization(const QString& name);  // "q4_0", "q8_0", "f16" or "f32"; false if unknown

    QString sourcePath() const;
    QString outputPath() const;
    const QString& lastError() const { return lastError_; }
    bool isRunning() const { return running_; }
    QProgressBar* progressBar() const { return progress_; }

public slots:
    // Starts the conversion with the current fields; no-op while one runs.
    void start();
    // Cancels a running conversion (finished(false) follows); otherwise closes the dialog.
    void cancel();

signals:
    void finished(bool ok, const QString& outputPath);
    // Emitted on the worker thread; connected queued to the GUI.
    void progressed(qint64 done, qint64 total, const QString& current);

private:
    struct Outcome {
        bool ok = false;
        QString error;
    };
    void finish(const Outcome& outcome, const QString& output);
    void browseSource();
    void browseSourceFolder();
    void browseTokenizer();
    void browseOutput();
    void holdStatusHeight(bool hold);  // fixed while converting, may grow for an error after

    QLineEdit* source_ = nullptr;
    QLineEdit* tokenizer_ = nullptr;
    QLineEdit* output_ = nullptr;
    QComboBox* quant_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QLabel* status_ = nullptr;
    int statusHeightPx_ = 0;  // reserved for kStatusLines lines
    QPushButton* convertButton_ = nullptr;
    QPushButton* cancelButton_ = nullptr;
    std::shared_ptr<CancelToken> token_;  // shared with the worker
    QFuture<Outcome> pending_;
    QString lastError_;
    bool running_ = false;
};

} // namespace cflow::ui
