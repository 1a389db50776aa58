#include "cflow/ui/convert_wizard.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>

#include <QComboBox>
#include <QDir>
#include <QDirIterator>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QCheckBox>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QStandardPaths>
#include <QPushButton>
#include <QTimer>
#include <QVBoxLayout>
#include <QWizardPage>
#include <QtConcurrent/QtConcurrentRun>

#include "cflow/base/cancel.h"
#include "cflow/base/utf8_path.h"
#include "cflow/engine/convert/conversion_preflight.h"
#include "cflow/engine/convert/conversion_report.h"
#include "cflow/engine/convert/conversion_validation.h"
#include "cflow/engine/forward/load_check.h"
#include "cflow/engine/kernels/kernels.h"
#include "cflow/formats/conversion_plan.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/model_path_kind.h"
#include "cflow/ui/convert_paths.h"
#include "cflow/formats/default_quantisation.h"
#include "cflow/ui/screen_fit.h"
#include "cflow/ui/wizard_jobs.h"
#include "qt_text.h"
#include "labelled_button.h"

namespace cflow::ui {

namespace {


QString size_text(uint64_t bytes) {
    if (bytes >= (1ull << 30)) return QStringLiteral("%1 GiB").arg(double(bytes) / double(1ull << 30), 0, 'f', 2);
    return QStringLiteral("%1 MiB").arg(double(bytes) / double(1ull << 20), 0, 'f', 1);
}

constexpr DType kQuantChoices[] = {DType::Q4_0, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_0, DType::F16, DType::F32};

} // namespace

QString default_hugging_face_hub() {
    const QString hubCache = qEnvironmentVariable("HF_HUB_CACHE");
    if (!hubCache.isEmpty()) return hubCache;
    const QString home = qEnvironmentVariable("HF_HOME");
    if (!home.isEmpty()) return QDir(home).filePath(QStringLiteral("hub"));
    return QDir::home().filePath(QStringLiteral(".cache/huggingface/hub"));
}

QStringList find_convertible_sources(const QString& huggingFaceHub, const QStringList& folders, int limit) {
    QStringList found;
    const QDir hub(huggingFaceHub);
    for (const QString& repo : hub.entryList({QStringLiteral("models--*")}, QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
        const QDir snapshots(hub.filePath(repo + QStringLiteral("/snapshots")));
        for (const QString& rev : snapshots.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
            const QDir snapshot(snapshots.filePath(rev));
            if (snapshot.exists(QStringLiteral("config.json"))) found << snapshot.absolutePath();
            for (const QString& gguf : snapshot.entryList({QStringLiteral("*.gguf")}, QDir::Files, QDir::Name))
                found << snapshot.filePath(gguf);
        }
    }
    for (const QString& folder : folders) {
        const QDir dir(folder);
        for (const QString& gguf : dir.entryList({QStringLiteral("*.gguf")}, QDir::Files, QDir::Name)) found << dir.filePath(gguf);
    }
    found.removeDuplicates();
    std::sort(found.begin(), found.end());
    if (found.size() > limit) found = found.mid(0, limit);
    return found;
}

// What the pages share: the choices so far, the preflight, the finished conversion, and the
// token every worker watches.
struct ConvertWizard::PagesState {
    QString source, tokenizer, output;
    // Searched for GGUF files besides the Hugging Face cache: where conversions go by default.
    QStringList libraryFolders{QDir(QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation)).filePath(QStringLiteral("models"))};
    ConvertOptions options;
    std::optional<PreflightReport> preflight;
    // The default quantisation of `source` (default_quantisation.h), measured with the preflight.
    std::optional<Result<DefaultQuantisation>> defaults;
    QString converted;
    double convertSeconds = 0;
    uint64_t fileBytes = 0;
    WizardJobs jobs;  // the pages' workers; waited for by ~ConvertWizard
};

namespace {

using ConvertWizardState = ConvertWizard::PagesState;

// Runs fn on a worker; done(result) on the GUI thread if `page` still exists.
template <typename Result, typename Fn, typename Done>
void run_worker(QWizardPage* page, const std::shared_ptr<ConvertWizardState>& shared, Fn fn, Done done) {
    shared->jobs.run<Result>(page, std::move(fn), std::move(done));
}

class SourcePage : public QWizardPage {
public:
    explicit SourcePage(std::shared_ptr<ConvertWizardState> shared) : shared_(std::move(shared)) {
        setTitle(tr("Source"));
        setSubTitle(tr("A Hugging Face folder (safetensors, sharded or not), a GGUF file or a llama2.c checkpoint."));
        source_ = new QLineEdit(this);
        source_->setObjectName(QStringLiteral("wizardSource"));
        source_->setAccessibleName(tr("Source checkpoint"));
        tokenizer_ = new QLineEdit(this);
        tokenizer_->setObjectName(QStringLiteral("wizardTokenizer"));
        tokenizer_->setAccessibleName(tr("Tokenizer file"));
        tokenizer_->setPlaceholderText(tr("llama2.c .bin sources only"));
        found_ = new QListWidget(this);
        found_->setObjectName(QStringLiteral("wizardFoundSources"));
        found_->setAccessibleName(tr("Checkpoints found on this machine"));
        auto* file = labelled_button(tr("File…"), QStringLiteral("wizardBrowseFile"), tr("Choose a checkpoint file"), this);
        auto* folder = labelled_button(tr("Folder…"), QStringLiteral("wizardBrowseFolder"), tr("Choose a model folder"), this);
        auto* tok = labelled_button(tr("Browse…"), QStringLiteral("wizardBrowseTokenizer"), tr("Choose the tokenizer"), this);
        QObject::connect(file, &QPushButton::clicked, this, [this] {
            const QString path = QFileDialog::getOpenFileName(this, tr("Checkpoint"), QString(),
                                                              tr("Checkpoints (*.gguf *.safetensors *.bin);;All files (*)"));
            if (!path.isEmpty()) source_->setText(path);
        });
        QObject::connect(folder, &QPushButton::clicked, this, [this] {
            const QString path = QFileDialog::getExistingDirectory(this, tr("Model folder"));
            if (!path.isEmpty()) source_->setText(path);
        });
        QObject::connect(tok, &QPushButton::clicked, this, [this] {
            const QString path = QFileDialog::getOpenFileName(this, tr("Tokenizer"), QString(), tr("tokenizer.bin (*.bin)"));
            if (!path.isEmpty()) tokenizer_->setText(path);
        });
        QObject::connect(found_, &QListWidget::currentTextChanged, source_, &QLineEdit::setText);
        QObject::connect(source_, &QLineEdit::textChanged, this, [this] { emit completeChanged(); });
        auto* sourceRow = new QHBoxLayout;
        sourceRow->addWidget(source_, 1);
        sourceRow->addWidget(file);
        sourceRow->addWidget(folder);
        auto* tokRow = new QHBoxLayout;
        tokRow->addWidget(tokenizer_, 1);
        tokRow->addWidget(tok);
        auto* form = new QFormLayout;
        form->addRow(tr("Source"), sourceRow);
        form->addRow(tr("Tokenizer"), tokRow);
        auto* layout = new QVBoxLayout(this);
        layout->addLayout(form);
        layout->addWidget(new QLabel(tr("Found in the Hugging Face cache and the library folders:"), this));
        layout->addWidget(found_, 1);
    }
    void initializePage() override {
        found_->clear();
        found_->addItems(find_convertible_sources(default_hugging_face_hub(), shared_->libraryFolders));
        if (found_->count() == 0) found_->addItem(tr("(none found)"));
        if (!shared_->source.isEmpty()) source_->setText(shared_->source);
        if (!shared_->tokenizer.isEmpty()) tokenizer_->setText(shared_->tokenizer);
    }
    bool isComplete() const override { return !source_->text().trimmed().isEmpty() && QFileInfo::exists(source_->text().trimmed()); }
    bool validatePage() override {
        const QString source = source_->text().trimmed();
        if (source != shared_->source) shared_->preflight.reset();
        shared_->source = source;
        shared_->tokenizer = tokenizer_->text().trimmed();
        if (shared_->tokenizer.isEmpty() && source.endsWith(QStringLiteral(".bin"))) {
            const QString beside = QFileInfo(source).dir().filePath(QStringLiteral("tokenizer.bin"));
            if (QFileInfo::exists(beside)) shared_->tokenizer = beside;
        }
        if (shared_->output.isEmpty()) shared_->output = default_convert_output_path(source);
        return true;
    }
    void setSource(const QString& s) { source_->setText(s); }
    void setTokenizer(const QString& s) { tokenizer_->setText(s); }
    QString source() const { return source_->text(); }
    QString tokenizer() const { return tokenizer_->text(); }

private:
    std::shared_ptr<ConvertWizardState> shared_;
    QLineEdit* source_ = nullptr;
    QLineEdit* tokenizer_ = nullptr;
    QListWidget* found_ = nullptr;
};

// A read-only monospace report of "key: value" lines.
QPlainTextEdit* report_view(QWidget* parent, const QString& objectName, const QString& spokenName) {
    auto* view = new QPlainTextEdit(parent);
    view->setObjectName(objectName);
    view->setAccessibleName(spokenName);
    view->setReadOnly(true);
    view->setLineWrapMode(QPlainTextEdit::WidgetWidth);
    return view;
}

class PreflightPage : public QWizardPage {
public:
    explicit PreflightPage(std::shared_ptr<ConvertWizardState> shared) : shared_(std::move(shared)) {
        setTitle(tr("Preflight"));
        setSubTitle(tr("What the checkpoint holds and what its conversion will cost, before anything is written."));
        status_ = new QLabel(this);
        status_->setObjectName(QStringLiteral("preflightStatus"));
        status_->setWordWrap(true);
        report_ = report_view(this, QStringLiteral("preflightReport"), tr("Preflight report"));
        auto* layout = new QVBoxLayout(this);
        layout->addWidget(status_);
        layout->addWidget(report_, 1);
    }
    void initializePage() override {
        if (shared_->preflight && shared_->preflight->source_path == utf8(shared_->source)) return show(*shared_->preflight);
        running_ = true;
        // The read bandwidth comes from the shared probe; only a missing or stale one is measured here.
        status_->setText(tr("Reading %1 and planning the conversion…").arg(QDir::toNativeSeparators(shared_->source)));
        report_->clear();
        emit completeChanged();
        PreflightRequest request;
        request.source_path = utf8(shared_->source);
        request.tokenizer_path = utf8(shared_->tokenizer);
        request.output_path = utf8(shared_->output);
        request.options = shared_->options;
        auto cancel = shared_->jobs.cancelToken();
        run_worker<std::shared_ptr<Measured>>(
            this, shared_,
            [request, cancel]() mutable {
                // The default first, so the preflight's "chosen" line is the mix the options page
                // will start from. A source that does not open is the preflight's blocking finding.
                std::optional<Result<DefaultQuantisation>> defaults;
                if (auto source = open_source_model(request.source_path, request.tokenizer_path)) {
                    defaults = default_quantisation(*source, request.options);
                    if (*defaults) {
                        request.options.weight_quant = (*defaults)->class_type;
                        for (TensorClass c : kTensorClasses) set_quant_for(request.options, c, (*defaults)->class_type);
                        request.options.keep_source_types = (*defaults)->keeps_source_types;
                        request.options.keep_dtype_mask = kNativeSpeedTileDtypes;
                    }
                }
                return std::make_shared<Measured>(Measured{run_preflight(request, cancel.get()), std::move(defaults)});
            },
            [this](std::shared_ptr<Measured> measured) {
                running_ = false;
                shared_->defaults = std::move(measured->defaults);
                if (!measured->report) {
                    status_->setText(qt(measured->report.error()));
                    emit completeChanged();
                    return;
                }
                shared_->preflight = *measured->report;
                show(*shared_->preflight);
            });
    }
    bool isComplete() const override { return !running_ && shared_->preflight && !shared_->preflight->blocked(); }

private:
    struct Measured {
        Result<PreflightReport> report;
        std::optional<Result<DefaultQuantisation>> defaults;
    };

    void show(const PreflightReport& r) {
        report_->setPlainText(qt(preflight_text(r)));
        status_->setText(r.blocked() ? tr("This checkpoint cannot be converted: see the lines marked \"blocked\".")
                                     : tr("Ready: choose the quantisation next."));
        emit completeChanged();
    }
    std::shared_ptr<ConvertWizardState> shared_;
    QLabel* status_ = nullptr;
    QPlainTextEdit* report_ = nullptr;
    bool running_ = false;
};

class OptionsPage : public QWizardPage {
public:
    explicit OptionsPage(std::shared_ptr<ConvertWizardState> shared) : shared_(std::move(shared)) {
        setTitle(tr("Options"));
        setSubTitle(tr("Quantisation per tensor class and where the model goes."));
        auto* form = new QFormLayout;
        keepTypes_ = new QCheckBox(tr("Keep the file's own types (nothing re-quantised)"), this);
        keepTypes_->setObjectName(QStringLiteral("wizardKeepTypes"));
        keepTypes_->setToolTip(tr("A GGUF's quantised matrices (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, the K-quants, IQ4_NL, IQ4_XS and "
                                  "MXFP4) are copied bit for bit: a Q4_K_M file stays Q4_K_M, with the F16 matrices it left "
                                  "unquantised. "
                                  "The types below then apply to a file with no quantised matrices."));
        QObject::connect(keepTypes_, &QCheckBox::toggled, this, [this] { update(); });
        form->addRow(QString(), keepTypes_);
        for (TensorClass c : kTensorClasses) {
            auto* combo = new QComboBox(this);
            combo->setObjectName(QStringLiteral("quant_%1").arg(qt(std::string(tensor_class_name(c)))));
            for (DType q : kQuantChoices) combo->addItem(qt(std::string(dtype_name(q))), int(q));
            QObject::connect(combo, &QComboBox::currentIndexChanged, this, [this] { update(); });
            combos_.push_back({c, combo});
            form->addRow(class_label(c), combo);
        }
        container_ = new QComboBox(this);
        container_->setObjectName(QStringLiteral("wizardContainer"));
        container_->addItem(tr(".cflow (per-layer regions)"), int(ContainerFormat::Cflow));
        container_->addItem(tr(".vflow (stage-major, for streaming reads)"), int(ContainerFormat::Vflow));
        QObject::connect(container_, &QComboBox::currentIndexChanged, this, [this] {
            const bool vflow = container_->currentData().toInt() == int(ContainerFormat::Vflow);
            QString path = output_->text();
            const QString want = vflow ? QStringLiteral(".vflow") : QStringLiteral(".cflow");
            if (path.endsWith(QStringLiteral(".cflow")) || path.endsWith(QStringLiteral(".vflow")))
                output_->setText(path.left(path.size() - 6) + want);
            update();
        });
        form->addRow(tr("Container"), container_);
        output_ = new QLineEdit(this);
        output_->setObjectName(QStringLiteral("wizardOutput"));
        output_->setAccessibleName(tr("Output file"));
        auto* browse = labelled_button(tr("Browse…"), QStringLiteral("wizardBrowseOutput"), tr("Choose the output file"), this);
        QObject::connect(browse, &QPushButton::clicked, this, [this] {
            const QString path = QFileDialog::getSaveFileName(this, tr("Output"), output_->text(), tr("cflow models (*.cflow *.vflow)"));
            if (!path.isEmpty()) output_->setText(path);
        });
        QObject::connect(output_, &QLineEdit::textChanged, this, [this] { update(); });
        auto* outRow = new QHBoxLayout;
        outRow->addWidget(output_, 1);
        outRow->addWidget(browse);
        form->addRow(tr("Output"), outRow);
        estimate_ = new QLabel(this);
        estimate_->setObjectName(QStringLiteral("wizardEstimate"));
        estimate_->setWordWrap(true);
        defaultReason_ = new QLabel(this);
        defaultReason_->setObjectName(QStringLiteral("wizardDefaultReason"));
        defaultReason_->setWordWrap(true);
        auto* layout = new QVBoxLayout(this);
        layout->addLayout(form);
        layout->addWidget(defaultReason_);
        layout->addWidget(estimate_);
        layout->addStretch(1);
    }
    void initializePage() override {
        // Opened once per visit, not per choice, and on a worker: an HF folder with many shards
        // parses every shard header and its tokenizer.json, which made the window stutter here.
        source_.reset();
        sourceError_.clear();
        opening_ = true;
        output_->setText(shared_->output);
        // Only a GGUF has quantised matrices of its own to keep; keeping them is the default.
        const bool gguf = sniff_model_path(utf8(shared_->source)) == ModelPathKind::Gguf;
        keepTypes_->setVisible(gguf);
        keepTypes_->setChecked(gguf);
        if (shared_->defaults) applyDefault(*shared_->defaults);
        update();
        const uint64_t visit = ++visits_;
        const std::string source = utf8(shared_->source), tokenizer = utf8(shared_->tokenizer);
        using Opened = std::shared_ptr<Result<SourceModel>>;
        run_worker<Opened>(
            this, shared_, [source, tokenizer] { return std::make_shared<Result<SourceModel>>(open_source_model(source, tokenizer)); },
            [this, visit](Opened opened) {
                if (visit != visits_) return;  // the page was left and shown again: that visit's read counts
                opening_ = false;
                if (*opened) source_ = std::move(*opened).value();
                else sourceError_ = qt(opened->error());
                update();
            });
    }
    bool isComplete() const override { return ok_; }
    bool validatePage() override {
        shared_->options = chosen();
        shared_->output = output_->text().trimmed();
        return ok_;
    }
    ConvertOptions chosen() const {
        ConvertOptions o = shared_->options;
        o.weight_quant = DType(combos_[1].second->currentData().toInt());  // attention's type heads the header
        for (const auto& [c, combo] : combos_) set_quant_for(o, c, DType(combo->currentData().toInt()));
        o.format = ContainerFormat(container_->currentData().toInt());
        o.keep_source_types = keepTypes_->isVisibleTo(this) && keepTypes_->isChecked();
        o.keep_dtype_mask = kNativeSpeedTileDtypes;  // a type without fast kernels would become the nearest fast one
        return o;
    }

private:
    // Once per source: coming back to the page keeps what the user picked for it.
    void applyDefault(const Result<DefaultQuantisation>& defaults) {
        if (defaultsAppliedFor_ == shared_->source) return;
        defaultsAppliedFor_ = shared_->source;
        if (!defaults) {
            defaultReason_->setText(tr("No default could be measured: %1").arg(qt(defaults.error())));
            return;
        }
        for (const auto& [c, combo] : combos_) {
            const int index = combo->findData(int(defaults->class_type));
            if (index >= 0) combo->setCurrentIndex(index);
        }
        defaultReason_->setText(qt(defaults->reason));
    }

    static QString class_label(TensorClass c) {
        switch (c) {
            case TensorClass::Embeddings: return tr("Embeddings");
            case TensorClass::Attention: return tr("Attention");
            case TensorClass::DenseFfn: return tr("Dense FFN");
            case TensorClass::Experts: return tr("Experts");
            case TensorClass::Output: return tr("Output (LM head)");
        }
        return {};
    }
    // The chosen mix's exact size (the converter's layout, no bytes read) and the space there.
    void update() {
        ok_ = false;
        const QString out = output_->text().trimmed();
        const ModelPathKind kind = model_kind_from_name(utf8(out));
        if (out.isEmpty() || (kind != ModelPathKind::Cflow && kind != ModelPathKind::Vflow)) {
            estimate_->setText(tr("The output name must end in .cflow or .vflow."));
            emit completeChanged();
            return;
        }
        if (!source_) {
            estimate_->setText(opening_ ? tr("Reading %1…").arg(QDir::toNativeSeparators(shared_->source)) : sourceError_);
            emit completeChanged();
            return;
        }
        auto plan = plan_conversion(*source_, chosen());
        if (!plan) {
            estimate_->setText(qt(plan.error()));
            emit completeChanged();
            return;
        }
        std::error_code ec;
        const std::filesystem::path folder = path_from_utf8(utf8(QFileInfo(out).absolutePath()));
        const auto space = std::filesystem::space(folder, ec);
        QString text = tr("Output %1, %2 read per token.").arg(size_text(plan->file_bytes), size_text(plan->decode_bytes_per_token));
        // What re-quantising costs, before the user commits to it.
        if (!plan->requantised_tensors.empty())
            text += tr(" %n of the file's quantised matrices are re-quantised: their weights change by %1% RMS.", "",
                       int(plan->requantised_tensors.size()))
                        .arg(100.0 * plan->sampled_weight_change, 0, 'f', 1);
        else if (plan->retiled_exact_tensors > 0)
            text += tr(" Nothing re-quantised: %n quantised matrices copied bit for bit.", "", int(plan->retiled_exact_tensors));
        const double bandwidth = shared_->preflight ? shared_->preflight->read_bandwidth_bytes_per_second : 0;
        if (bandwidth > 0)
            text += tr(" Decode at most %1 tok/s on this machine.").arg(bandwidth / double(plan->decode_bytes_per_token), 0, 'f', 1);
        if (ec) {
            text += tr(" The folder %1 does not exist.").arg(QDir::toNativeSeparators(QFileInfo(out).absolutePath()));
        } else if (space.available < plan->file_bytes) {
            text += tr(" Only %1 is free there.").arg(size_text(space.available));
        } else {
            text += tr(" %1 free there.").arg(size_text(space.available));
            ok_ = true;
        }
        estimate_->setText(text);
        emit completeChanged();
    }

    std::shared_ptr<ConvertWizardState> shared_;
    std::optional<SourceModel> source_;  // for the size estimate; the conversion opens its own
    QString sourceError_;
    bool opening_ = false;
    uint64_t visits_ = 0;
    QCheckBox* keepTypes_ = nullptr;
    std::vector<std::pair<TensorClass, QComboBox*>> combos_;
    QComboBox* container_ = nullptr;
    QLineEdit* output_ = nullptr;
    QLabel* estimate_ = nullptr;
    QLabel* defaultReason_ = nullptr;
    QString defaultsAppliedFor_;
    bool ok_ = false;
};

// The converter's progress, written by the worker and read by the page's timer.
using ConvertProgressState = LatestProgress<ConvertProgress>;

class ProgressPage : public QWizardPage {
public:
    explicit ProgressPage(std::shared_ptr<ConvertWizardState> shared) : shared_(std::move(shared)) {
        setTitle(tr("Converting"));
        setSubTitle(tr("The output appears only when it is complete and loads; Cancel leaves nothing behind."));
        bar_ = new QProgressBar(this);
        bar_->setObjectName(QStringLiteral("wizardProgress"));
        status_ = new QLabel(this);
        status_->setObjectName(QStringLiteral("wizardProgressStatus"));
        status_->setWordWrap(true);
        status_->setMinimumHeight(status_->fontMetrics().lineSpacing() * 3);
        auto* layout = new QVBoxLayout(this);
        layout->addWidget(bar_);
        layout->addWidget(status_);
        layout->addStretch(1);
        timer_ = new QTimer(this);
        timer_->setInterval(100);
        QObject::connect(timer_, &QTimer::timeout, this, [this] { refresh(); });
    }
    void initializePage() override {
        done_ = false;
        shared_->converted.clear();
        state_ = std::make_shared<ConvertProgressState>();
        started_ = std::chrono::steady_clock::now();
        bar_->setRange(0, 0);
        status_->setText(tr("Starting…"));
        timer_->start();
        emit completeChanged();
        const std::string source = utf8(shared_->source), tokenizer = utf8(shared_->tokenizer), output = utf8(shared_->output);
        ConvertOptions options = shared_->options;
        options.verify_output = [output](const std::string& written) { return check_model_loads(written, output); };
        auto cancel = shared_->jobs.cancelToken();
        auto state = state_;
        run_worker<Result<ConvertReport>>(
            this, shared_,
            [source, tokenizer, output, options, cancel, state]() -> Result<ConvertReport> {
                auto model = open_source_model(source, tokenizer);
                if (!model) return model.take_error();
                return convert_to_cflow(*model, output, options, [state](const ConvertProgress& p) { state->set(p); },
                                        cancel.get());
            },
            [this](Result<ConvertReport> r) {
                timer_->stop();
                refresh();
                const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
                if (!r) {
                    status_->setText(user_facing_convert_error(qt(r.error()), shared_->output));
                    return;
                }
                shared_->converted = shared_->output;
                shared_->convertSeconds = seconds;
                shared_->fileBytes = r->file_bytes;
                bar_->setRange(0, 1);
                bar_->setValue(1);
                status_->setText(tr("Wrote %1: %2 in %3 s (%4 tensors re-tiled bit-exactly).")
                                     .arg(QDir::toNativeSeparators(shared_->output), size_text(r->file_bytes))
                                     .arg(seconds, 0, 'f', 2)
                                     .arg(r->retiled_exact_tensors));
                done_ = true;
                emit completeChanged();
            });
    }
    bool isComplete() const override { return done_; }

private:
    void refresh() {
        const ConvertProgress p = state_->get();
        if (p.tensors_total == 0) return;
        bar_->setRange(0, int(std::min<uint64_t>(p.tensors_total, 1u << 30)));
        bar_->setValue(int(std::min<uint64_t>(p.tensors_done, 1u << 30)));
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
        const double mbps = seconds > 0 ? double(p.bytes_written) / 1e6 / seconds : 0;
        const uint64_t total = shared_->preflight ? shared_->preflight->plan.file_bytes : 0;
        QString eta;
        if (mbps > 0 && total > p.bytes_written) eta = tr(", about %1 s left").arg((double(total - p.bytes_written) / 1e6) / mbps, 0, 'f', 0);
        status_->setText(tr("%1 (%2 of %3 tensors), %4 MB/s%5")
                             .arg(qt(p.current))
                             .arg(p.tensors_done)
                             .arg(p.tensors_total)
                             .arg(mbps, 0, 'f', 1)
                             .arg(eta));
    }

    std::shared_ptr<ConvertWizardState> shared_;
    std::shared_ptr<ConvertProgressState> state_ = std::make_shared<ConvertProgressState>();
    QProgressBar* bar_ = nullptr;
    QLabel* status_ = nullptr;
    QTimer* timer_ = nullptr;
    std::chrono::steady_clock::time_point started_;
    bool done_ = false;
};

class ValidationPage : public QWizardPage {
public:
    explicit ValidationPage(std::shared_ptr<ConvertWizardState> shared) : shared_(std::move(shared)) {
        setTitle(tr("Validation"));
        setSubTitle(tr("The converted model against its source in F32 on a sample text."));
        status_ = new QLabel(this);
        status_->setObjectName(QStringLiteral("validationStatus"));
        status_->setWordWrap(true);
        verdict_ = new QLabel(this);
        verdict_->setObjectName(QStringLiteral("validationVerdict"));
        verdict_->setWordWrap(true);
        report_ = report_view(this, QStringLiteral("validationReport"), tr("Validation report"));
        auto* layout = new QVBoxLayout(this);
        layout->addWidget(status_);
        layout->addWidget(verdict_);
        layout->addWidget(report_, 1);
        setFinalPage(true);
    }
    void initializePage() override {
        done_ = false;
        status_->setText(tr("Validating: tokenizer, chat template, a short generation, then agreement with the source…"));
        verdict_->clear();
        report_->clear();
        emit completeChanged();
        ValidationRequest request;
        request.source_path = utf8(shared_->source);
        request.tokenizer_path = utf8(shared_->tokenizer);
        request.converted_path = utf8(shared_->converted);
        auto cancel = shared_->jobs.cancelToken();
        run_worker<Result<ValidationReport>>(
            this, shared_, [request, cancel] { return validate_conversion(request, {}, cancel.get()); },
            [this](Result<ValidationReport> r) {
                done_ = true;
                if (!r) {
                    status_->setText(tr("Validation could not run: %1").arg(qt(r.error())));
                    emit completeChanged();
                    return;
                }
                ConversionRecord record;
                record.source_path = utf8(shared_->source);
                record.output_path = utf8(shared_->converted);
                record.options_text = convert_options_text(shared_->options);
                record.convert_seconds = shared_->convertSeconds;
                record.file_bytes = shared_->fileBytes;
                record.preflight = shared_->preflight ? &*shared_->preflight : nullptr;
                record.validation = &*r;
                const Status saved = write_conversion_report(record);
                const auto paths = conversion_report_paths(record.output_path);
                status_->setText(saved ? tr("Report saved: %1").arg(QDir::toNativeSeparators(qt(paths.markdown)))
                                       : tr("The report could not be saved: %1").arg(qt(saved.error())));
                verdict_->setText(tr("Verdict: <b>%1</b> — %2").arg(qt(r->verdict), qt(r->verdict_reason).toHtmlEscaped()));
                report_->setPlainText(qt(validation_text(*r)));
                emit completeChanged();
            });
    }
    bool isComplete() const override { return done_; }

private:
    std::shared_ptr<ConvertWizardState> shared_;
    QLabel* status_ = nullptr;
    QLabel* verdict_ = nullptr;
    QPlainTextEdit* report_ = nullptr;
    bool done_ = false;
};

} // namespace

ConvertWizard::ConvertWizard(const QString& sourcePath, QWidget* parent) : QWizard(parent), shared_(std::make_shared<ConvertWizardState>()) {
    setWindowTitle(tr("Convert a model"));
    setObjectName(QStringLiteral("convertWizard"));
    setWizardStyle(QWizard::ClassicStyle);
    setOption(QWizard::NoBackButtonOnLastPage);
    setOption(QWizard::NoBackButtonOnStartPage);
    setPage(SourcePageId, new SourcePage(shared_));
    setPage(PreflightPageId, new PreflightPage(shared_));
    setPage(OptionsPageId, new OptionsPage(shared_));
    setPage(ProgressPageId, new ProgressPage(shared_));
    setPage(ValidationPageId, new ValidationPage(shared_));
    setStartId(SourcePageId);
    if (!sourcePath.isEmpty()) setSourcePath(sourcePath);
    connect(this, &QWizard::accepted, this, [this] {
        if (!shared_->converted.isEmpty()) emit converted(shared_->converted);
    });
    resize_within_screen(this, QSize(760, 560));
}

ConvertWizard::~ConvertWizard() {
    shared_->jobs.cancelAndWait();
}

void ConvertWizard::reject() {
    shared_->jobs.cancelAndWait();  // a running step stops within one tensor / position
    QWizard::reject();
}

void ConvertWizard::setSourcePath(const QString& path) {
    shared_->source = path;
    static_cast<SourcePage*>(page(SourcePageId))->setSource(path);
}
void ConvertWizard::setTokenizerPath(const QString& path) {
    shared_->tokenizer = path;
    static_cast<SourcePage*>(page(SourcePageId))->setTokenizer(path);
}
void ConvertWizard::setOutputPath(const QString& path) { shared_->output = path; }
QString ConvertWizard::sourcePath() const { return shared_->source; }
QString ConvertWizard::tokenizerPath() const { return shared_->tokenizer; }
QString ConvertWizard::outputPath() const { return shared_->output; }
QString ConvertWizard::convertedPath() const { return shared_->converted; }
void ConvertWizard::setLibraryFolders(const QStringList& folders) { shared_->libraryFolders = folders; }
bool ConvertWizard::isBusy() const { return shared_->jobs.busy(); }

} // namespace cflow::ui
