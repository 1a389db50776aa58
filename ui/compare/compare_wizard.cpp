#include "cflow/ui/compare_wizard.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <QWizardPage>
#include <QtConcurrent/QtConcurrentRun>

#include "cflow/base/cancel.h"
#include "cflow/ui/compare_charts.h"
#include "cflow/ui/compare_results_model.h"
#include "cflow/ui/compare_samples.h"
#include "cflow/ui/compare_store.h"
#include "cflow/ui/conversation_store.h"
#include "cflow/ui/screen_fit.h"
#include "cflow/ui/wizard_jobs.h"
#include "qt_text.h"
#include "labelled_button.h"
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
#include <QPointer>

#include "cflow/ui/remote/compare_endpoint.h"
#include "cflow/ui/remote/endpoint_profile.h"
#include "cflow/ui/remote/qt_network_transport.h"
#include "cflow/ui/remote/remote_worker.h"
#endif

namespace cflow::ui {

namespace {


constexpr qint64 kMaxTextBytes = 16 << 20;  // a text to score: far more than a comparison needs
constexpr ExpertFetch kFetchChoices[] = {ExpertFetch::Mapped, ExpertFetch::Staged, ExpertFetch::Sync};
constexpr KvCacheType kKvChoices[] = {KvCacheType::F32, KvCacheType::F16};

} // namespace

// What the pages share: the request being assembled, the finished (or reopened) report, the
// database and the token the worker watches.
struct CompareWizard::PagesState {
    CompareRequest request;
    QStringList initialModels;
    QString databasePath;
    std::unique_ptr<CompareStore> store;
    std::optional<CompareReport> report;
    qint64 savedId = 0;
    QString lastError;
    bool openResultsDirectly = false;  // the models page's Next goes to the results (a saved run)
    CompareResultsModel* model = nullptr;   // owned by the wizard
    CompareChartsWidget* charts = nullptr;  // owned by the results page
    WizardJobs jobs;  // the run's worker; waited for by ~CompareWizard
    // Endpoint entries: where profiles and keys come from (the caller's), and the chosen ones.
    EndpointProfileStore* profiles = nullptr;
    SecretStore* secrets = nullptr;
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
    struct ChosenEndpoint {
        EndpointProfile profile;
        QString key;           // "" = none (or not readable: keyNote says why)
        bool keyRead = false;  // the keychain answered (entries wait for it before the run)
        QString keyNote;
    };
    std::vector<ChosenEndpoint> endpoints;
#endif
    size_t endpointCount() const {
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
        return endpoints.size();
#else
        return 0;
#endif
    }
    bool endpointKeysRead() const {
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
        for (const ChosenEndpoint& e : endpoints)
            if (!e.keyRead) return false;
#endif
        return true;
    }

    // Opened on first use on the GUI thread; "" error when it works.
    CompareStore* openStore() {
        if (store) return store.get();
        auto opened = CompareStore::open(databasePath.isEmpty() ? default_database_path() : databasePath);
        if (!opened) {
            lastError = qt(opened.error());
            return nullptr;
        }
        store = std::move(opened).value();
        return store.get();
    }
};

namespace {

using CompareWizardState = CompareWizard::PagesState;

class ModelsPage : public QWizardPage {
public:
    explicit ModelsPage(std::shared_ptr<CompareWizardState> shared) : shared_(std::move(shared)) {
        setTitle(tr("Models"));
        setSubTitle(tr("Two to eight models, or one model under several configurations (threads, expert fetch, KV cache)."));
        table_ = new QTableWidget(0, 4, this);
        table_->setObjectName(QStringLiteral("compareEntries"));
        table_->setAccessibleName(tr("Models and configurations to compare"));
        table_->setHorizontalHeaderLabels({tr("Model file"), tr("Threads"), tr("Expert fetch"), tr("KV cache")});
        table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
        table_->setSelectionBehavior(QAbstractItemView::SelectRows);
        QObject::connect(table_, &QTableWidget::itemChanged, this, [this] { emit completeChanged(); });
        auto* add = labelled_button(tr("Add model…"), QStringLiteral("compareAddModel"), tr("Add model files"), this);
        auto* duplicate = labelled_button(tr("Add configuration"), QStringLiteral("compareAddConfiguration"),
                                          tr("Add the selected model again under another configuration"), this);
        auto* remove = labelled_button(tr("Remove"), QStringLiteral("compareRemoveEntry"), tr("Remove the selected entry"), this);
        QObject::connect(add, &QPushButton::clicked, this, [this] {
            const QStringList paths = QFileDialog::getOpenFileNames(this, tr("Models"), QString(), tr("cflow models (*.cflow *.vflow)"));
            for (const QString& path : paths) addRow(CompareEntry{{}, utf8(path)});
        });
        QObject::connect(duplicate, &QPushButton::clicked, this, [this] {
            const int row = table_->currentRow() >= 0 ? table_->currentRow() : table_->rowCount() - 1;
            if (row < 0) return;
            CompareEntry e = entryAt(row);
            e.expertFetch = e.expertFetch == ExpertFetch::Mapped ? ExpertFetch::Staged : ExpertFetch::Mapped;
            addRow(e);
        });
        QObject::connect(remove, &QPushButton::clicked, this, [this] {
            if (table_->currentRow() >= 0) table_->removeRow(table_->currentRow());
            emit completeChanged();
        });
        auto* buttons = new QHBoxLayout;
        buttons->addWidget(add);
        buttons->addWidget(duplicate);
        buttons->addWidget(remove);
        buttons->addStretch(1);

        saved_ = new QListWidget(this);
        saved_->setObjectName(QStringLiteral("compareSavedRuns"));
        saved_->setAccessibleName(tr("Earlier comparisons"));
        auto* open = labelled_button(tr("Open results"), QStringLiteral("compareOpenSaved"), tr("Show the saved results"), this);
        auto* rerun = labelled_button(tr("Load to re-run"), QStringLiteral("compareLoadSaved"),
                                      tr("Load the saved comparison's models and workloads"), this);
        auto* forget = labelled_button(tr("Delete"), QStringLiteral("compareDeleteSaved"), tr("Delete the saved comparison"), this);
        QObject::connect(open, &QPushButton::clicked, this, [this] {
            auto* item = saved_->currentItem();
            if (!item) return;
            if (Status s = static_cast<CompareWizard*>(wizard())->openSaved(item->data(Qt::UserRole).toLongLong()); !s)
                status_->setText(qt(s.error()));
        });
        QObject::connect(rerun, &QPushButton::clicked, this, [this] {
            auto* item = saved_->currentItem();
            CompareStore* store = shared_->openStore();
            if (!item || !store) return;
            auto record = store->load(item->data(Qt::UserRole).toLongLong());
            if (!record) return status_->setText(qt(record.error()));
            shared_->request = record->request;
            fill();
        });
        QObject::connect(forget, &QPushButton::clicked, this, [this] {
            auto* item = saved_->currentItem();
            CompareStore* store = shared_->openStore();
            if (!item || !store) return;
            if (Status s = store->remove(item->data(Qt::UserRole).toLongLong()); !s) status_->setText(qt(s.error()));
            refreshSaved();
        });
        auto* savedButtons = new QHBoxLayout;
        savedButtons->addWidget(open);
        savedButtons->addWidget(rerun);
        savedButtons->addWidget(forget);
        savedButtons->addStretch(1);
        status_ = new QLabel(this);
        status_->setObjectName(QStringLiteral("compareModelsStatus"));
        status_->setWordWrap(true);

        // Endpoints from the saved profiles (shown only when the wizard was given them).
        endpointsBox_ = new QGroupBox(tr("Endpoints (speed as received; agreement where they return log probabilities)"), this);
        endpointsBox_->setObjectName(QStringLiteral("compareEndpoints"));
        endpointProfiles_ = new QComboBox(endpointsBox_);
        endpointProfiles_->setObjectName(QStringLiteral("compareEndpointProfile"));
        endpointProfiles_->setAccessibleName(tr("Saved endpoint"));
        auto* addEndpoint = labelled_button(tr("Add endpoint"), QStringLiteral("compareAddEndpoint"),
                                            tr("Add the chosen endpoint as an entry"), endpointsBox_);
        auto* removeEndpoint = labelled_button(tr("Remove endpoint"), QStringLiteral("compareRemoveEndpoint"),
                                               tr("Remove the selected endpoint entry"), endpointsBox_);
        endpointEntries_ = new QListWidget(endpointsBox_);
        endpointEntries_->setObjectName(QStringLiteral("compareEndpointEntries"));
        endpointEntries_->setAccessibleName(tr("Endpoint entries"));
        QObject::connect(addEndpoint, &QPushButton::clicked, this, [this] {
            const QString id = endpointProfiles_->currentData().toString();
            if (!id.isEmpty()) static_cast<CompareWizard*>(wizard())->addEndpointEntry(id);
        });
        QObject::connect(removeEndpoint, &QPushButton::clicked, this, [this] {
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
            const int row = endpointEntries_->currentRow();
            if (row >= 0 && size_t(row) < shared_->endpoints.size()) shared_->endpoints.erase(shared_->endpoints.begin() + row);
#endif
            refreshEndpoints();
        });
        auto* endpointRow = new QHBoxLayout;
        endpointRow->addWidget(endpointProfiles_, 1);
        endpointRow->addWidget(addEndpoint);
        endpointRow->addWidget(removeEndpoint);
        auto* endpointLayout = new QVBoxLayout(endpointsBox_);
        endpointLayout->addLayout(endpointRow);
        endpointLayout->addWidget(endpointEntries_);
        endpointsBox_->setVisible(false);

        auto* layout = new QVBoxLayout(this);
        layout->addWidget(table_, 2);
        layout->addLayout(buttons);
        layout->addWidget(endpointsBox_, 1);
        layout->addWidget(status_);
        layout->addWidget(new QLabel(tr("Earlier comparisons:"), this));
        layout->addWidget(saved_, 1);
        layout->addLayout(savedButtons);
    }

    void initializePage() override {
        if (shared_->request.entries.empty())
            for (const QString& path : shared_->initialModels) shared_->request.entries.push_back(CompareEntry{{}, utf8(path)});
        fill();
        refreshSaved();
        refreshEndpoints();
    }
    // Endpoint entries count toward the 2-8 entries; at least one local entry stays (the
    // reference for agreement, and run_comparison's).
    bool isComplete() const override {
        const int n = table_->rowCount();
        const int all = n + int(shared_->endpointCount());
        if (n < 1 || all < int(CompareRequest::kMinEntriesInAll) || all > int(CompareRequest::kMaxEntries)) return false;
        if (!shared_->endpointKeysRead()) return false;
        for (int r = 0; r < n; ++r)
            if (!QFileInfo(table_->item(r, 0) ? table_->item(r, 0)->text() : QString()).isFile()) return false;
        return true;
    }
    bool validatePage() override {
        std::vector<CompareEntry> entries;
        for (int r = 0; r < table_->rowCount(); ++r) entries.push_back(entryAt(r));
        // Labels were set for the entries they described; a changed entry is named afresh.
        for (size_t i = 0; i < entries.size() && i < shared_->request.entries.size(); ++i) {
            const CompareEntry& old = shared_->request.entries[i];
            if (old.modelPath == entries[i].modelPath && old.threads == entries[i].threads &&
                old.expertFetch == entries[i].expertFetch && old.kvCache == entries[i].kvCache)
                entries[i].label = old.label;
        }
        shared_->request.entries = entries;
        if (shared_->request.referenceEntry >= entries.size()) shared_->request.referenceEntry = 0;
        return true;
    }
    int nextId() const override {
        return shared_->openResultsDirectly ? CompareWizard::ResultsPageId : CompareWizard::WorkloadsPageId;
    }

    void fill() {
        table_->setRowCount(0);
        for (const CompareEntry& e : shared_->request.entries) addRow(e);
        emit completeChanged();
    }

    // The profiles on offer and the chosen endpoint entries, as the shared state holds them.
    void refreshEndpoints() {
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
        endpointsBox_->setVisible(shared_->profiles != nullptr);
        const QString current = endpointProfiles_->currentData().toString();
        endpointProfiles_->clear();
        if (shared_->profiles)
            for (const EndpointProfile& p : shared_->profiles->profiles())
                endpointProfiles_->addItem(endpoint_identity_label(endpoint_identity(p)), p.id);
        endpointProfiles_->setCurrentIndex(std::max(0, endpointProfiles_->findData(current)));
        endpointEntries_->clear();
        for (const CompareWizardState::ChosenEndpoint& e : shared_->endpoints) {
            QString text = endpoint_identity_label(endpoint_identity(e.profile));
            if (!e.keyRead) text += tr(" (reading its key…)");
            else if (!e.keyNote.isEmpty()) text += QStringLiteral(" (%1)").arg(e.keyNote);
            endpointEntries_->addItem(text);
        }
#endif
        emit completeChanged();
    }

private:
    void addRow(const CompareEntry& e) {
        if (table_->rowCount() >= int(CompareRequest::kMaxEntries)) {
            status_->setText(tr("At most %1 entries.").arg(CompareRequest::kMaxEntries));
            return;
        }
        const int row = table_->rowCount();
        table_->insertRow(row);
        table_->setItem(row, 0, new QTableWidgetItem(qt(e.modelPath)));
        auto* threads = new QSpinBox(table_);
        threads->setRange(0, 1024);
        threads->setSpecialValueText(tr("auto"));
        threads->setValue(int(e.threads));
        threads->setAccessibleName(tr("Threads"));
        table_->setCellWidget(row, 1, threads);
        auto* fetch = new QComboBox(table_);
        fetch->setAccessibleName(tr("Expert fetch"));
        for (ExpertFetch f : kFetchChoices) fetch->addItem(qt(std::string(expert_fetch_name(f))), int(f));
        fetch->setCurrentIndex(std::max(0, fetch->findData(int(e.expertFetch))));
        table_->setCellWidget(row, 2, fetch);
        auto* kv = new QComboBox(table_);
        kv->setAccessibleName(tr("KV cache"));
        for (KvCacheType k : kKvChoices) kv->addItem(qt(std::string(kv_cache_type_name(k))), int(k));
        kv->setCurrentIndex(std::max(0, kv->findData(int(e.kvCache))));
        table_->setCellWidget(row, 3, kv);
        status_->clear();
        emit completeChanged();
    }
    CompareEntry entryAt(int row) const {
        CompareEntry e;
        e.modelPath = utf8(table_->item(row, 0) ? table_->item(row, 0)->text().trimmed() : QString());
        e.threads = unsigned(static_cast<QSpinBox*>(table_->cellWidget(row, 1))->value());
        e.expertFetch = ExpertFetch(static_cast<QComboBox*>(table_->cellWidget(row, 2))->currentData().toInt());
        e.kvCache = KvCacheType(static_cast<QComboBox*>(table_->cellWidget(row, 3))->currentData().toInt());
        return e;
    }
    void refreshSaved() {
        saved_->clear();
        CompareStore* store = shared_->openStore();
        if (!store) return status_->setText(tr("Earlier comparisons are unavailable: %1").arg(shared_->lastError));
        auto runs = store->list();
        if (!runs) return status_->setText(qt(runs.error()));
        for (const StoredComparisonInfo& run : *runs) {
            auto* item = new QListWidgetItem(QStringLiteral("%1  %2")
                                                 .arg(QDateTime::fromMSecsSinceEpoch(run.createdMs).toString(QStringLiteral("yyyy-MM-dd HH:mm")),
                                                      run.title),
                                             saved_);
            item->setData(Qt::UserRole, run.id);
        }
    }

    std::shared_ptr<CompareWizardState> shared_;
    QTableWidget* table_ = nullptr;
    QListWidget* saved_ = nullptr;
    QLabel* status_ = nullptr;
    QGroupBox* endpointsBox_ = nullptr;
    QComboBox* endpointProfiles_ = nullptr;
    QListWidget* endpointEntries_ = nullptr;
};

class WorkloadsPage : public QWizardPage {
public:
    explicit WorkloadsPage(std::shared_ptr<CompareWizardState> shared) : shared_(std::move(shared)) {
        setTitle(tr("Workloads"));
        setSubTitle(tr("What to measure on every entry. Run starts the comparison."));
        setCommitPage(true);  // the run cannot be stepped back into while it works
        setButtonText(QWizard::CommitButton, tr("Run"));
        auto check = [this](const QString& text, const char* name) {
            auto* box = new QCheckBox(text, this);
            box->setObjectName(QString::fromLatin1(name));
            QObject::connect(box, &QCheckBox::toggled, this, [this] { update(); });
            return box;
        };
        speed_ = check(tr("Decode and prefill speed (tok/s)"), "compareSpeed");
        perplexity_ = check(tr("Perplexity on a text"), "comparePerplexity");
        agreement_ = check(tr("Top-1 agreement and mean KL against a reference"), "compareAgreement");
        streams_ = check(tr("Bytes per token, per stream"), "compareStreamBytes");
        critical_ = check(tr("B_naive / B_critical (critical-path bandwidth of the file)"), "compareCriticalPath");
        wait_ = check(tr("Expert-wait share of decode time"), "compareExpertWait");
        text_ = new QComboBox(this);
        text_->setObjectName(QStringLiteral("compareText"));
        text_->setAccessibleName(tr("Text to score"));
        for (const TextSample& s : bundled_text_samples()) text_->addItem(s.name);
        text_->addItem(tr("A file…"));
        file_ = new QLineEdit(this);
        file_->setObjectName(QStringLiteral("compareTextFile"));
        file_->setPlaceholderText(tr("a UTF-8 text file"));
        auto* browse = labelled_button(tr("Browse…"), QStringLiteral("compareBrowseText"), tr("Choose the text file"), this);
        QObject::connect(browse, &QPushButton::clicked, this, [this] {
            const QString path = QFileDialog::getOpenFileName(this, tr("Text"), QString(), tr("Text (*.txt *.md);;All files (*)"));
            if (path.isEmpty()) return;
            file_->setText(path);
            text_->setCurrentIndex(text_->count() - 1);
        });
        QObject::connect(text_, &QComboBox::currentIndexChanged, this, [this] { update(); });
        QObject::connect(file_, &QLineEdit::textChanged, this, [this] { update(); });
        reference_ = new QComboBox(this);
        reference_->setObjectName(QStringLiteral("compareReference"));
        reference_->setAccessibleName(tr("Reference entry"));
        auto spin = [this](int lo, int hi, const char* name) {
            auto* s = new QSpinBox(this);
            s->setRange(lo, hi);
            s->setObjectName(QString::fromLatin1(name));
            return s;
        };
        prompt_ = spin(1, 4096, "comparePromptTokens");
        decode_ = spin(1, 4096, "compareDecodeTokens");
        scored_ = spin(16, 1 << 20, "compareScoredTokens");
        context_ = spin(8, 8192, "compareContextTokens");
        auto* fileRow = new QHBoxLayout;
        fileRow->addWidget(file_, 1);
        fileRow->addWidget(browse);
        auto* form = new QFormLayout;
        form->addRow(tr("Text"), text_);
        form->addRow(tr("Text file"), fileRow);
        form->addRow(tr("Reference"), reference_);
        form->addRow(tr("Prompt tokens (prefill)"), prompt_);
        form->addRow(tr("Decoded tokens"), decode_);
        form->addRow(tr("Scored tokens (perplexity, agreement)"), scored_);
        form->addRow(tr("Perplexity window (tokens)"), context_);
        status_ = new QLabel(this);
        status_->setObjectName(QStringLiteral("compareWorkloadsStatus"));
        status_->setWordWrap(true);
        auto* layout = new QVBoxLayout(this);
        for (QCheckBox* box : {speed_, perplexity_, agreement_, streams_, critical_, wait_}) layout->addWidget(box);
        layout->addLayout(form);
        layout->addWidget(status_);
        layout->addStretch(1);
    }
    void initializePage() override {
        const CompareRequest& r = shared_->request;
        const CompareWorkloads& w = r.workloads;
        speed_->setChecked(w.speed);
        perplexity_->setChecked(w.perplexity);
        agreement_->setChecked(w.agreement);
        streams_->setChecked(w.streamBytes);
        critical_->setChecked(w.criticalPath);
        wait_->setChecked(w.expertWait);
        reference_->clear();
        for (const CompareEntry& e : r.entries) reference_->addItem(qt(compare_entry_display_name(e)));
        reference_->setCurrentIndex(int(std::min(r.referenceEntry, r.entries.size() - 1)));
        prompt_->setValue(r.promptTokens);
        decode_->setValue(r.decodeTokens);
        scored_->setValue(int(std::min<uint64_t>(r.maxScoredTokens, uint64_t(scored_->maximum()))));
        context_->setValue(int(r.contextTokens));
        // A saved or preset text: the sample of that name, else the file it came from.
        const QString name = qt(r.textName);
        const int sample = text_->findText(name);
        if (sample >= 0 && sample < text_->count() - 1) {
            text_->setCurrentIndex(sample);
        } else if (!name.isEmpty() && QFileInfo(name).isFile()) {
            file_->setText(name);
            text_->setCurrentIndex(text_->count() - 1);
        }
        update();
    }
    bool isComplete() const override { return ok_; }
    bool validatePage() override {
        CompareRequest& r = shared_->request;
        r.workloads = CompareWorkloads{speed_->isChecked(), perplexity_->isChecked(), agreement_->isChecked(),
                                       streams_->isChecked(), critical_->isChecked(), wait_->isChecked()};
        r.referenceEntry = size_t(std::max(0, reference_->currentIndex()));
        r.promptTokens = prompt_->value();
        r.decodeTokens = decode_->value();
        r.maxScoredTokens = uint64_t(scored_->value());
        r.contextTokens = uint32_t(context_->value());
        const int choice = text_->currentIndex();
        if (choice < int(bundled_text_samples().size())) {
            r.text = utf8(bundled_text_samples()[size_t(choice)].text);
            r.textName = utf8(bundled_text_samples()[size_t(choice)].name);
            return true;
        }
        QFile file(file_->text().trimmed());
        if (!file.open(QIODevice::ReadOnly)) {
            status_->setText(tr("%1: cannot open: %2").arg(QDir::toNativeSeparators(file.fileName()), file.errorString()));
            return false;
        }
        if (file.size() > kMaxTextBytes) {
            status_->setText(tr("%1 is larger than %2 MiB; choose a shorter text.").arg(file.fileName()).arg(kMaxTextBytes >> 20));
            return false;
        }
        r.text = file.readAll().toStdString();
        r.textName = utf8(file_->text().trimmed());
        return true;
    }

private:
    void update() {
        const bool scoring = perplexity_->isChecked() || agreement_->isChecked();
        const bool fromFile = text_->currentIndex() == text_->count() - 1;
        text_->setEnabled(scoring);
        file_->setEnabled(scoring && fromFile);
        reference_->setEnabled(agreement_->isChecked());
        ok_ = false;
        if (!speed_->isChecked() && !scoring && !streams_->isChecked() && !critical_->isChecked() && !wait_->isChecked())
            status_->setText(tr("Choose at least one workload."));
        else if (scoring && fromFile && !QFileInfo(file_->text().trimmed()).isFile())
            status_->setText(tr("Choose the text file to score, or a bundled sample."));
        else {
            status_->setText(agreement_->isChecked() ? tr("Agreement needs every entry to share the reference's tokenizer.") : QString());
            ok_ = true;
        }
        emit completeChanged();
    }

    std::shared_ptr<CompareWizardState> shared_;
    QCheckBox *speed_ = nullptr, *perplexity_ = nullptr, *agreement_ = nullptr, *streams_ = nullptr, *critical_ = nullptr,
              *wait_ = nullptr;
    QComboBox* text_ = nullptr;
    QLineEdit* file_ = nullptr;
    QComboBox* reference_ = nullptr;
    QSpinBox *prompt_ = nullptr, *decode_ = nullptr, *scored_ = nullptr, *context_ = nullptr;
    QLabel* status_ = nullptr;
    bool ok_ = false;
};

// The runner's latest progress, written by the worker and read by the page's timer.
using CompareProgressState = LatestProgress<CompareProgressInfo>;

class RunPage : public QWizardPage {
public:
    explicit RunPage(std::shared_ptr<CompareWizardState> shared) : shared_(std::move(shared)) {
        setTitle(tr("Running"));
        setSubTitle(tr("Each entry in turn on a worker; Cancel stops within a token."));
        bar_ = new QProgressBar(this);
        bar_->setObjectName(QStringLiteral("compareProgress"));
        bar_->setRange(0, 1000);
        status_ = new QLabel(this);
        status_->setObjectName(QStringLiteral("compareRunStatus"));
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
        shared_->report.reset();
        shared_->savedId = 0;
        shared_->lastError.clear();
        shared_->jobs.cancelToken()->reset();
        state_ = std::make_shared<CompareProgressState>();
        bar_->setValue(0);
        status_->setText(tr("Loading the models…"));
        timer_->start();
        emit completeChanged();
        const CompareRequest request = shared_->request;
        names_.clear();
        for (const CompareEntry& e : request.entries) names_ << qt(compare_entry_display_name(e));
        auto cancel = shared_->jobs.cancelToken();
        auto state = state_;
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
        std::vector<EndpointCompareEntry> endpoints;
        for (const CompareWizardState::ChosenEndpoint& chosen : shared_->endpoints) {
            EndpointCompareEntry e;
            e.label = utf8(endpoint_identity_label(endpoint_identity(chosen.profile)));
            e.config = remote_endpoint_config(chosen.profile, chosen.key);
            e.model = utf8(chosen.profile.model);
            names_ << qt(e.label);
            endpoints.push_back(std::move(e));
        }
#endif
        const CompareProgress progress = [state](const CompareProgressInfo& p) { state->set(p); };
        const auto onFinished = [this](Result<CompareReport> report) { finished(std::move(report)); };
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
        // Endpoint entries go through the Qt Network transport, which blocks this worker thread
        // (never the GUI's) on a network manager of its own.
        shared_->jobs.run<Result<CompareReport>>(this, [request, endpoints, cancel, progress] {
            return run_comparison_with_endpoints(request, endpoints, [] {
                return std::shared_ptr<remote::HttpTransport>(make_qt_network_transport());
            }, progress, cancel.get());
        }, onFinished);
#else
        shared_->jobs.run<Result<CompareReport>>(this, [request, cancel, progress] {
            return run_comparison(request, progress, cancel.get());
        }, onFinished);
#endif
    }
    bool isComplete() const override { return done_; }

private:
    void refresh() {
        const CompareProgressInfo p = state_->get();
        if (p.entries == 0) return;
        bar_->setValue(int(p.fraction * 1000));
        const QString name = p.entry < size_t(names_.size()) ? names_[qsizetype(p.entry)] : QString();
        status_->setText(tr("%1 of %2: %3 — %4").arg(p.entry + 1).arg(p.entries).arg(name, qt(p.stage)));
    }
    void finished(Result<CompareReport> r) {
        timer_->stop();
        if (!r) {
            shared_->lastError = qt(r.error());
            status_->setText(r.kind() == ErrorKind::Cancelled ? tr("Cancelled.") : qt(r.error()));
            return;
        }
        bar_->setValue(1000);
        shared_->report = *r;
        QString saved;
        if (CompareStore* store = shared_->openStore()) {
            auto id = store->save(comparison_title(*r), shared_->request, *r);
            if (id) {
                shared_->savedId = *id;
                saved = tr(" Saved as comparison %1.").arg(*id);
            } else {
                shared_->lastError = qt(id.error());
                saved = tr(" It could not be saved: %1").arg(shared_->lastError);
            }
        } else {
            saved = tr(" It could not be saved: %1").arg(shared_->lastError);
        }
        status_->setText(tr("Done in %1 s.").arg(r->elapsedSeconds, 0, 'f', 1) + saved);
        done_ = true;
        emit completeChanged();
    }

    std::shared_ptr<CompareWizardState> shared_;
    std::shared_ptr<CompareProgressState> state_ = std::make_shared<CompareProgressState>();
    QStringList names_;  // every entry's name, local then endpoints, as progress counts them
    QProgressBar* bar_ = nullptr;
    QLabel* status_ = nullptr;
    QTimer* timer_ = nullptr;
    bool done_ = false;
};

class ResultsPage : public QWizardPage {
public:
    explicit ResultsPage(std::shared_ptr<CompareWizardState> shared) : shared_(std::move(shared)) {
        setTitle(tr("Results"));
        setFinalPage(true);
        summary_ = new QLabel(this);
        summary_->setObjectName(QStringLiteral("compareSummary"));
        summary_->setWordWrap(true);
        qualityNote_ = new QLabel(this);
        qualityNote_->setObjectName(QStringLiteral("compareQualityNote"));
        qualityNote_->setWordWrap(true);
        qualityNote_->hide();
        table_ = new QTableView(this);
        table_->setObjectName(QStringLiteral("compareResultsTable"));
        table_->setAccessibleName(tr("Comparison results"));
        table_->setModel(shared_->model);
        table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
        shared_->charts = new CompareChartsWidget(this);
        shared_->charts->setObjectName(QStringLiteral("compareCharts"));
        tabs_ = new QTabWidget(this);
        tabs_->setObjectName(QStringLiteral("compareResultsTabs"));
        tabs_->addTab(table_, tr("Table"));
        tabs_->addTab(shared_->charts, tr("Charts"));
        auto* csv = labelled_button(tr("Export CSV…"), QStringLiteral("compareExportCsv"), tr("Export the table as CSV"), this);
        auto* md = labelled_button(tr("Export Markdown…"), QStringLiteral("compareExportMarkdown"), tr("Export the table as Markdown"), this);
        auto* png = labelled_button(tr("Export charts (PNG)…"), QStringLiteral("compareExportPng"), tr("Save every chart as a PNG"), this);
        auto* rerun = labelled_button(tr("Re-run…"), QStringLiteral("compareRerun"), tr("Run this comparison again"), this);
        QObject::connect(csv, &QPushButton::clicked, this, [this] {
            const QString path = QFileDialog::getSaveFileName(this, tr("Export CSV"), QStringLiteral("comparison.csv"), tr("CSV (*.csv)"));
            if (!path.isEmpty()) report(static_cast<CompareWizard*>(wizard())->exportCsv(path), path);
        });
        QObject::connect(md, &QPushButton::clicked, this, [this] {
            const QString path = QFileDialog::getSaveFileName(this, tr("Export Markdown"), QStringLiteral("comparison.md"), tr("Markdown (*.md)"));
            if (!path.isEmpty()) report(static_cast<CompareWizard*>(wizard())->exportMarkdown(path), path);
        });
        QObject::connect(png, &QPushButton::clicked, this, [this] {
            const QString folder = QFileDialog::getExistingDirectory(this, tr("Folder for the chart PNGs"));
            if (folder.isEmpty()) return;
            auto written = static_cast<CompareWizard*>(wizard())->exportPngs(folder);
            report(written ? Status{} : Status(written.take_error()), folder);
        });
        QObject::connect(rerun, &QPushButton::clicked, this, [this] { wizard()->restart(); });
        auto* buttons = new QHBoxLayout;
        buttons->addWidget(csv);
        buttons->addWidget(md);
        buttons->addWidget(png);
        buttons->addStretch(1);
        buttons->addWidget(rerun);
        exportStatus_ = new QLabel(this);
        exportStatus_->setObjectName(QStringLiteral("compareExportStatus"));
        exportStatus_->setWordWrap(true);
        auto* layout = new QVBoxLayout(this);
        layout->addWidget(summary_);
        layout->addWidget(qualityNote_);
        layout->addWidget(tabs_, 1);
        layout->addLayout(buttons);
        layout->addWidget(exportStatus_);
    }
    void initializePage() override {
        shared_->openResultsDirectly = false;
        if (!shared_->report) return;
        const CompareReport& r = *shared_->report;
        shared_->model->setReport(r);
        shared_->charts->setReport(r);
        QString text = tr("%1 entries, kernel path %2, %3 s.").arg(r.rows.size()).arg(qt(r.isa)).arg(r.elapsedSeconds, 0, 'f', 1);
        if (!r.textName.empty()) {
            text += tr(" Perplexity on %1 (%2 tokens").arg(qt(r.textName)).arg(r.textTokens);
            text += r.scoredTextBytes ? tr("; every entry scored the same %1 bytes of it).").arg(r.scoredTextBytes) : tr(").");
        }
        if (!r.referenceName.empty()) text += tr(" Agreement against %1.").arg(qt(r.referenceName));
        if (shared_->savedId) text += tr(" Saved as comparison %1.").arg(shared_->savedId);
        if (const QString ranking = compare_quality_ranking(r); !ranking.isEmpty()) text += u' ' + ranking;
        summary_->setText(text);
        qualityNote_->setText(compare_quality_note(r));
        qualityNote_->setVisible(!qualityNote_->text().isEmpty());
        exportStatus_->clear();
    }
    QTabWidget* tabs() const { return tabs_; }

private:
    void report(const Status& s, const QString& where) {
        exportStatus_->setText(s ? tr("Saved %1").arg(QDir::toNativeSeparators(where)) : qt(s.error()));
    }
    std::shared_ptr<CompareWizardState> shared_;
    QLabel* summary_ = nullptr;
    QLabel* qualityNote_ = nullptr;  // compare_quality_note: why bits per byte ranks, when it does
    QTableView* table_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    QLabel* exportStatus_ = nullptr;
};

} // namespace

CompareWizard::CompareWizard(QWidget* parent, const QString& databasePath)
    : QWizard(parent), shared_(std::make_shared<CompareWizardState>()) {
    shared_->databasePath = databasePath;
    shared_->model = new CompareResultsModel(this);
    setWindowTitle(tr("Compare models"));
    setObjectName(QStringLiteral("compareWizard"));
    setWizardStyle(QWizard::ClassicStyle);
    setOption(QWizard::NoBackButtonOnLastPage);
    setPage(ModelsPageId, new ModelsPage(shared_));
    setPage(WorkloadsPageId, new WorkloadsPage(shared_));
    setPage(RunPageId, new RunPage(shared_));
    setPage(ResultsPageId, new ResultsPage(shared_));
    setStartId(ModelsPageId);
    resize_within_screen(this, QSize(980, 720));
}

CompareWizard::~CompareWizard() {
    shared_->jobs.cancelAndWait();
}

void CompareWizard::reject() {
    shared_->jobs.cancelAndWait();  // a running comparison stops within one token
    QWizard::reject();
}

void CompareWizard::setRequest(const CompareRequest& request) {
    shared_->request = request;
    if (currentId() == ModelsPageId) static_cast<ModelsPage*>(page(ModelsPageId))->fill();
}
CompareRequest CompareWizard::request() const { return shared_->request; }
void CompareWizard::setInitialModels(const QStringList& paths) { shared_->initialModels = paths; }

void CompareWizard::setEndpointSources(EndpointProfileStore* profiles, SecretStore* secrets) {
    shared_->profiles = profiles;
    shared_->secrets = secrets;
    if (currentId() == ModelsPageId) static_cast<ModelsPage*>(page(ModelsPageId))->refreshEndpoints();
}

bool CompareWizard::addEndpointEntry(const QString& profileId) {
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
    if (!shared_->profiles) return false;
    const std::vector<EndpointProfile> profiles = shared_->profiles->profiles();
    const auto it = std::find_if(profiles.begin(), profiles.end(), [&](const EndpointProfile& p) { return p.id == profileId; });
    if (it == profiles.end()) return false;
    shared_->endpoints.push_back({*it, QString(), shared_->secrets == nullptr, QString()});
    auto* models = static_cast<ModelsPage*>(page(ModelsPageId));
    models->refreshEndpoints();
    if (!shared_->secrets) return true;
    // The keychain may answer later (or at once): the entry is found again by its place and id.
    const size_t index = shared_->endpoints.size() - 1;
    std::weak_ptr<PagesState> weak = shared_;
    QPointer<ModelsPage> page_guard(models);
    shared_->secrets->readKey(profileId, [weak, page_guard, index, profileId](Result<QString> key) {
        auto shared = weak.lock();
        if (!shared || index >= shared->endpoints.size() || shared->endpoints[index].profile.id != profileId) return;
        auto& chosen = shared->endpoints[index];
        chosen.keyRead = true;
        if (key) chosen.key = *key;
        else chosen.keyNote = tr("no key: %1").arg(qt(key.error()));
        if (page_guard) page_guard->refreshEndpoints();
    });
    return true;
#else
    (void)profileId;
    return false;
#endif
}

QStringList CompareWizard::endpointEntries() const {
    QStringList ids;
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
    for (const PagesState::ChosenEndpoint& e : shared_->endpoints) ids << e.profile.id;
#endif
    return ids;
}
bool CompareWizard::isBusy() const { return shared_->jobs.busy(); }
bool CompareWizard::hasReport() const { return shared_->report.has_value(); }
const CompareReport& CompareWizard::report() const { return *shared_->report; }
qint64 CompareWizard::savedId() const { return shared_->savedId; }
QString CompareWizard::lastError() const { return shared_->lastError; }
CompareResultsModel* CompareWizard::resultsModel() const { return shared_->model; }
CompareChartsWidget* CompareWizard::charts() const { return shared_->charts; }

Status CompareWizard::exportCsv(const QString& path) const { return save_text_file(path, shared_->model->toCsv()); }
Status CompareWizard::exportMarkdown(const QString& path) const { return save_text_file(path, shared_->model->toMarkdown()); }
Result<QStringList> CompareWizard::exportPngs(const QString& folder) const { return shared_->charts->savePngs(folder); }

Status CompareWizard::openSaved(qint64 id) {
    if (isBusy()) return make_error("a comparison is running");
    CompareStore* store = shared_->openStore();
    if (!store) return make_error(utf8(shared_->lastError));
    auto record = store->load(id);
    if (!record) return record.take_error();
    shared_->request = record->request;
    shared_->report = record->report;
    shared_->savedId = id;
    shared_->openResultsDirectly = true;
    restart();  // the models page shows the saved entries; its Next leads to the results
    next();
    return {};
}

} // namespace cflow::ui
