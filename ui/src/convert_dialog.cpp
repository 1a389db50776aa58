#include "cflow/ui/convert_dialog.h"
#include "labelled_button.h"

#include <algorithm>
#include <limits>

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "cflow/base/cancel.h"
#include "cflow/engine/forward/load_check.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/model_path_kind.h"
#include "cflow/formats/source_model.h"

namespace cflow::ui {
namespace {

struct QuantChoice {
    const char* name;
    DType dtype;
};
constexpr QuantChoice kQuantChoices[] = {
    {"q4_0", DType::Q4_0}, {"q8_0", DType::Q8_0}, {"f16", DType::F16}, {"f32", DType::F32}};

// The progress bar counts tensors; its range is int, tensor counts stay far below that.
int clamp_int(qint64 v) { return static_cast<int>(std::min<qint64>(v, std::numeric_limits<int>::max())); }

constexpr int kStatusLines = 3;    // reserved for the status line ("Reading <path>" wraps)
constexpr int kPathFieldChars = 48;  // a path field's minimum width, in average characters


} // namespace

QString default_convert_output_path(const QString& sourcePath, const QString& fallbackDir) {
    const QFileInfo info(sourcePath);
    // A folder source names its output after the folder, beside it.
    const QString name = (info.isDir() ? QDir(info.absoluteFilePath()).dirName() : info.completeBaseName()) +
                         QStringLiteral(".cflow");
    const QString besideDir = info.isDir() ? QFileInfo(QDir(info.absoluteFilePath()).absolutePath()).absolutePath()
                                           : info.absolutePath();
    const QFileInfo beside(besideDir);
    if (beside.isDir() && beside.isWritable()) return QDir(besideDir).filePath(name);
    const QString fallback =
        fallbackDir.isEmpty()
            ? QDir(QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation)).filePath(QStringLiteral("models"))
            : fallbackDir;
    return QDir(fallback).filePath(name);
}

QString user_facing_convert_error(const QString& error, const QString& outputPath) {
    const QRegularExpression temp(QRegularExpression::escape(outputPath) + QStringLiteral("\\.tmp-\\d+"));
    return QString(error).replace(temp, outputPath);
}

ConvertDialog::ConvertDialog(const QString& sourcePath, QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Convert to .cflow"));
    source_ = new QLineEdit(this);
    source_->setObjectName(QStringLiteral("convertSource"));
    tokenizer_ = new QLineEdit(this);
    tokenizer_->setObjectName(QStringLiteral("convertTokenizer"));
    tokenizer_->setPlaceholderText(tr("llama2.c .bin sources only"));
    output_ = new QLineEdit(this);
    output_->setObjectName(QStringLiteral("convertOutput"));
    quant_ = new QComboBox(this);
    quant_->setObjectName(QStringLiteral("convertQuant"));
    for (const QuantChoice& c : kQuantChoices) quant_->addItem(QString::fromLatin1(c.name));
    progress_ = new QProgressBar(this);
    progress_->setRange(0, 1);
    progress_->setValue(0);
    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("convertStatus"));
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    status_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    statusHeightPx_ = status_->fontMetrics().lineSpacing() * kStatusLines + 2 * status_->margin();
    status_->setMinimumHeight(statusHeightPx_);
    progress_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);

    auto* browseSourceButton =
        labelled_button(tr("File…"), QStringLiteral("browseSource"), tr("Choose the checkpoint file to convert"), this);
    auto* browseSourceFolderButton = labelled_button(tr("Folder…"), QStringLiteral("browseSourceFolder"),
                                                   tr("Choose a Hugging Face model folder to convert"), this);
    auto* browseTokenizerButton = labelled_button(tr("Browse…"), QStringLiteral("browseTokenizer"),
                                                tr("Choose the llama2.c tokenizer file"), this);
    auto* browseOutputButton =
        labelled_button(tr("Browse…"), QStringLiteral("browseOutput"), tr("Choose where the .cflow file goes"), this);
    connect(browseSourceButton, &QPushButton::clicked, this, &ConvertDialog::browseSource);
    connect(browseSourceFolderButton, &QPushButton::clicked, this, &ConvertDialog::browseSourceFolder);
    connect(browseTokenizerButton, &QPushButton::clicked, this, &ConvertDialog::browseTokenizer);
    connect(browseOutputButton, &QPushButton::clicked, this, &ConvertDialog::browseOutput);
    const int pathFieldPx = fontMetrics().averageCharWidth() * kPathFieldChars;
    for (QLineEdit* field : {source_, tokenizer_, output_}) field->setMinimumWidth(pathFieldPx);
    auto row = [this](QWidget* field, std::initializer_list<QWidget*> buttons) {
        auto* box = new QWidget(this);
        auto* layout = new QHBoxLayout(box);
        layout->setContentsMargins(0, 0, 0, 0);
        layout->addWidget(field, 1);
        for (QWidget* button : buttons) layout->addWidget(button);
        return box;
    };
    auto* form = new QFormLayout;
    // The rows are plain QWidgets (field + buttons), Preferred in width: without this they
    // would stay at their size hint however wide the dialog is.
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->addRow(tr("Source (.gguf, HF folder, llama2.c .bin)"),
                 row(source_, {browseSourceButton, browseSourceFolderButton}));
    form->addRow(tr("Tokenizer"), row(tokenizer_, {browseTokenizerButton}));
    form->addRow(tr("Quantization"), quant_);
    form->addRow(tr("Output"), row(output_, {browseOutputButton}));

    auto* buttons = new QDialogButtonBox(this);
    convertButton_ = buttons->addButton(tr("Convert"), QDialogButtonBox::AcceptRole);
    cancelButton_ = buttons->addButton(QDialogButtonBox::Cancel);
    connect(convertButton_, &QPushButton::clicked, this, &ConvertDialog::start);
    connect(cancelButton_, &QPushButton::clicked, this, &ConvertDialog::cancel);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(progress_);
    layout->addWidget(status_);
    layout->addWidget(buttons);

    connect(this, &ConvertDialog::progressed, this,
            [this](qint64 done, qint64 total, const QString& current) {
                if (!running_) return;  // a late update after cancellation
                progress_->setRange(0, clamp_int(std::max<qint64>(total, 1)));
                progress_->setValue(clamp_int(done));
                status_->setText(tr("Writing %1").arg(current));
            },
            Qt::QueuedConnection);

    if (!sourcePath.isEmpty()) setSourcePath(sourcePath);
    setQuantization(QStringLiteral("q4_0"));
}

ConvertDialog::~ConvertDialog() {
    // The worker emits on this dialog: stop it (the converter checks the token per tensor) and
    // wait, so it never outlives the object it reports to.
    if (token_) token_->cancel();
    pending_.waitForFinished();
}

void ConvertDialog::setSourcePath(const QString& path) {
    source_->setText(path);
    const QFileInfo info(path);
    output_->setText(default_convert_output_path(path));
    // A llama2.c checkpoint carries no vocabulary: its exporter writes tokenizer.bin beside it.
    if (sniff_model_path(path.toStdString()) == ModelPathKind::Llama2c && tokenizer_->text().isEmpty()) {
        const QString guess = info.absolutePath() + QStringLiteral("/tokenizer.bin");
        if (QFileInfo::exists(guess)) tokenizer_->setText(guess);
    }
}

void ConvertDialog::setTokenizerPath(const QString& path) { tokenizer_->setText(path); }
void ConvertDialog::setOutputPath(const QString& path) { output_->setText(path); }
QString ConvertDialog::sourcePath() const { return source_->text(); }
QString ConvertDialog::outputPath() const { return output_->text(); }

bool ConvertDialog::setQuantization(const QString& name) {
    const int index = quant_->findText(name);
    if (index < 0) return false;
    quant_->setCurrentIndex(index);
    return true;
}

void ConvertDialog::browseSource() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Model to convert"), QString(),
                                                      tr("Checkpoints (*.gguf *.bin *.safetensors);;All files (*)"));
    if (path.isEmpty()) return;
    // A .safetensors file (or the shard index) stands for its Hugging Face folder.
    const bool inHfFolder = sniff_model_path(path.toStdString()) == ModelPathKind::Safetensors;
    setSourcePath(inHfFolder ? QFileInfo(path).absolutePath() : path);
}

void ConvertDialog::browseSourceFolder() {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Hugging Face model folder"), source_->text());
    if (!dir.isEmpty()) setSourcePath(dir);
}

void ConvertDialog::browseTokenizer() {
    const QString path = QFileDialog::getOpenFileName(this, tr("llama2.c tokenizer"), QFileInfo(source_->text()).absolutePath(),
                                                      tr("Tokenizers (*.bin);;All files (*)"));
    if (!path.isEmpty()) tokenizer_->setText(path);
}

void ConvertDialog::holdStatusHeight(bool hold) {
    // While converting, messages of different lengths must not resize the dialog; an error
    // afterwards may need more lines than were reserved.
    status_->setMaximumHeight(hold ? statusHeightPx_ : QWIDGETSIZE_MAX);
}

void ConvertDialog::browseOutput() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Output"), output_->text(), tr("cflow models (*.cflow)"));
    if (!path.isEmpty()) output_->setText(path);
}

void ConvertDialog::start() {
    if (running_) return;
    const QString source = source_->text().trimmed();
    const QString output = output_->text().trimmed();
    if (source.isEmpty() || output.isEmpty()) {
        finish({false, tr("Choose a source model and an output path.")}, output);
        return;
    }
    DType dtype = DType::Q4_0;
    for (const QuantChoice& c : kQuantChoices)
        if (quant_->currentText() == QLatin1String(c.name)) dtype = c.dtype;

    // The default output folder (Documents/models) may not exist yet; a failure here shows as
    // the converter's error about the output path.
    QDir().mkpath(QFileInfo(output).absolutePath());
    running_ = true;
    holdStatusHeight(true);
    lastError_.clear();
    token_ = std::make_shared<CancelToken>();
    convertButton_->setEnabled(false);
    progress_->setRange(0, 0);  // busy until the first tensor: reading the source can take a while
    status_->setText(tr("Reading %1").arg(QDir::toNativeSeparators(source)));

    const std::string sourcePath = source.toStdString();
    const std::string tokenizerPath = tokenizer_->text().trimmed().toStdString();
    const std::string outputPath = output.toStdString();
    auto token = token_;
    auto* watcher = new QFutureWatcher<Outcome>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, output] {
        watcher->deleteLater();
        finish(watcher->result(), output);
    });
    pending_ = QtConcurrent::run([this, token, dtype, sourcePath, tokenizerPath, outputPath]() -> Outcome {
        if (token->is_cancelled()) return {false, QString::fromStdString(cancelled_error("conversion").message)};
        auto model = open_source_model(sourcePath, tokenizerPath);
        if (!model) return {false, QString::fromStdString(model.error())};
        if (token->is_cancelled()) return {false, QString::fromStdString(cancelled_error("conversion").message)};
        ConvertOptions options;
        options.weight_quant = dtype;
        // As `cflow convert`: the written file must load before it replaces the output.
        options.verify_output = [outputPath](const std::string& written) { return check_model_loads(written, outputPath); };
        auto report = convert_to_cflow(
            *model, outputPath, options,
            [this, token](const ConvertProgress& p) {
                if (token->is_cancelled()) return;
                emit progressed(static_cast<qint64>(p.tensors_done), static_cast<qint64>(p.tensors_total),
                                      QString::fromStdString(p.current));
            },
            token.get());
        if (!report) return {false, QString::fromStdString(report.error())};
        return {true, QString()};
    });
    watcher->setFuture(pending_);
}

void ConvertDialog::cancel() {
    if (!running_) {
        reject();
        return;
    }
    token_->cancel();
    status_->setText(tr("Cancelling…"));
    cancelButton_->setEnabled(false);
}

void ConvertDialog::finish(const Outcome& outcome, const QString& output) {
    running_ = false;
    holdStatusHeight(false);
    convertButton_->setEnabled(true);
    cancelButton_->setEnabled(true);
    progress_->setRange(0, 1);
    progress_->setValue(outcome.ok ? 1 : 0);
    lastError_ = user_facing_convert_error(outcome.error, output);
    status_->setText(outcome.ok ? tr("Converted to %1").arg(QDir::toNativeSeparators(output))
                                : tr("Conversion failed: %1").arg(lastError_));
    emit finished(outcome.ok, output);
}

} // namespace cflow::ui
