#include "compare_self_test.h"

#include <cstdio>

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QPixmap>
#include <QTabWidget>
#include <QWizardPage>

#include "cflow/engine/compare/agreement.h"
#include "cflow/engine/forward/model.h"
#include "cflow/ui/compare_charts.h"
#include "cflow/ui/compare_results_model.h"
#include "cflow/ui/compare_samples.h"
#include "cflow/ui/compare_store.h"
#include "cflow/ui/compare_wizard.h"
#include "cflow/ui/conversation_store.h"

namespace cflow::studio {
namespace {

using cflow::ui::CompareWizard;

const char* const kComparePageNames[] = {"1-models", "2-workloads", "3-running", "4-results-table"};
constexpr int kComparePollMs = 100;
constexpr int kCompareIdleTicksBeforeFailing = 20;  // 2 s with nothing running and the page incomplete

// Splits one CSV line of the model's own export (fields quoted only when they hold , or ").
QStringList csv_fields(const QString& line) {
    QStringList out;
    QString field;
    bool quoted = false;
    for (qsizetype i = 0; i < line.size(); ++i) {
        const QChar c = line[i];
        if (quoted) {
            if (c == u'"' && i + 1 < line.size() && line[i + 1] == u'"') field += u'"', ++i;
            else if (c == u'"') quoted = false;
            else field += c;
        } else if (c == u'"') {
            quoted = true;
        } else if (c == u',') {
            out << field;
            field.clear();
        } else {
            field += c;
        }
    }
    out << field;
    return out;
}

// True when every entry's model loads with the first one's tokenizer (a model that does not load
// is left to the run, which says why).
bool one_tokenizer(const std::vector<cflow::CompareEntry>& entries) {
    std::shared_ptr<const cflow::Model> first;
    for (const cflow::CompareEntry& entry : entries) {
        auto model = cflow::Model::load(entry.modelPath);
        if (!model) return true;
        if (!first) first = model.value();
        else if (!cflow::tokenizer_difference(first->tokenizer(), model.value()->tokenizer()).empty()) return false;
    }
    return true;
}

} // namespace

CompareSelfTest::CompareSelfTest(QStringList modelPaths, QString screenshotDir)
    : models_(std::move(modelPaths)), screenshotDir_(std::move(screenshotDir)) {}

CompareSelfTest::~CompareSelfTest() = default;

void CompareSelfTest::start() {
    if (!QDir().mkpath(screenshotDir_)) return fail(QStringLiteral("cannot create the screenshot folder %1").arg(screenshotDir_));
    cflow::CompareRequest request;
    for (const QString& path : models_) request.entries.push_back(cflow::CompareEntry{{}, QFileInfo(path).absoluteFilePath().toStdString()});
    // Agreement needs one tokenizer: models with different ones (stories260K's 512 tokens against the
    // default model's 4096) are compared on everything else, ranked by bits per byte.
    request.workloads = cflow::CompareWorkloads{true, true, one_tokenizer(request.entries), true, true, true};
    // Small enough for a CI machine: a few hundred tokens of scoring per model.
    request.promptTokens = 32;
    request.warmupTokens = 4;
    request.decodeTokens = 32;
    request.maxScoredTokens = 256;
    request.contextTokens = 128;
    request.textName = cflow::ui::bundled_text_samples().front().name.toStdString();
    request.referenceEntry = 0;
    wizard_ = std::make_unique<CompareWizard>();
    wizard_->setRequest(request);
    wizard_->show();
    connect(&poll_, &QTimer::timeout, this, &CompareSelfTest::poll);
    poll_.start(kComparePollMs);
    timeout_.setSingleShot(true);
    connect(&timeout_, &QTimer::timeout, this, [this] { fail(QStringLiteral("timed out after %1 s").arg(kTimeoutMs / 1000)); });
    timeout_.start(kTimeoutMs);
}

bool CompareSelfTest::savePage(const QString& name) {
    const QString path = QDir(screenshotDir_).filePath(name + QStringLiteral(".png"));
    if (!wizard_->grab().save(path)) {
        fail(QStringLiteral("cannot save %1").arg(path));
        return false;
    }
    std::printf("cflow-studio compare self-test: %s saved to %s\n", name.toLocal8Bit().constData(), path.toLocal8Bit().constData());
    return true;
}

void CompareSelfTest::poll() {
    if (done_ || finishing_) return;
    QWizardPage* page = wizard_->currentPage();
    const int id = wizard_->currentId();
    if (id < 0 || id > CompareWizard::ResultsPageId) return fail(QStringLiteral("the wizard shows no page"));
    if (!page->isComplete()) {
        idleTicks_ = wizard_->isBusy() ? 0 : idleTicks_ + 1;
        if (idleTicks_ < kCompareIdleTicksBeforeFailing) return;
        QString text;
        for (auto* label : page->findChildren<QLabel*>()) text += label->text() + QStringLiteral(" ");
        savePage(QString::fromLatin1(kComparePageNames[id]));
        return fail(QStringLiteral("page %1 cannot go on: %2").arg(QString::fromLatin1(kComparePageNames[id]), text.simplified()));
    }
    idleTicks_ = 0;
    if (lastSavedId_ != id) {
        if (!savePage(QString::fromLatin1(kComparePageNames[id]))) return;
        lastSavedId_ = id;
    }
    if (id != CompareWizard::ResultsPageId) {
        wizard_->next();
        return;
    }
    finish();
}

void CompareSelfTest::finish() {
    finishing_ = true;  // no more polls; fail() still reports
    if (!wizard_->hasReport()) return fail(QStringLiteral("the results page has no report"));
    auto* tabs = wizard_->findChild<QTabWidget*>(QStringLiteral("compareResultsTabs"));
    if (!tabs) return fail(QStringLiteral("the results page has no tabs"));
    tabs->setCurrentIndex(1);
    QApplication::processEvents();
    if (!savePage(QStringLiteral("4-results-charts"))) return;

    const QDir dir(screenshotDir_);
    auto pngs = wizard_->exportPngs(dir.filePath(QStringLiteral("charts")));
    if (!pngs) return fail(QString::fromStdString(pngs.error()));
    if (!wizard_->charts()->chartNames().contains(QString::fromLatin1(cflow::ui::pareto_chart_name(wizard_->report()))))
        return fail(QStringLiteral("no quality/bytes-per-token scatter was drawn"));
    for (const QString& png : *pngs) std::printf("cflow-studio compare self-test: chart %s\n", png.toLocal8Bit().constData());
    const QString csvPath = dir.filePath(QStringLiteral("comparison.csv"));
    const QString mdPath = dir.filePath(QStringLiteral("comparison.md"));
    for (const Status& s : {wizard_->exportCsv(csvPath), wizard_->exportMarkdown(mdPath)})
        if (!s) return fail(QString::fromStdString(s.error()));

    // The CSV on disk must hold exactly the table's text, cell by cell.
    const cflow::ui::CompareResultsModel* model = wizard_->resultsModel();
    QFile csv(csvPath);
    if (!csv.open(QIODevice::ReadOnly)) return fail(QStringLiteral("cannot read back %1").arg(csvPath));
    const QStringList lines = QString::fromUtf8(csv.readAll()).split(QStringLiteral("\r\n"), Qt::SkipEmptyParts);
    if (lines.size() != model->rowCount() + 1) return fail(QStringLiteral("the CSV has %1 lines for %2 rows").arg(lines.size()).arg(model->rowCount()));
    for (int r = 0; r < model->rowCount(); ++r) {
        const QStringList fields = csv_fields(lines[r + 1]);
        for (int c = 0; c < model->columnCount(); ++c)
            if (c >= fields.size() || fields[c] != model->data(model->index(r, c)).toString())
                return fail(QStringLiteral("CSV row %1 column %2 differs from the table").arg(r + 1).arg(c));
    }
    // The run was saved and reopens with the same numbers.
    if (wizard_->savedId() == 0) return fail(QStringLiteral("the run was not saved: %1").arg(wizard_->lastError()));
    auto store = cflow::ui::CompareStore::open(cflow::ui::default_database_path());
    if (!store) return fail(QString::fromStdString(store.error()));
    auto saved = (*store)->load(wizard_->savedId());
    if (!saved) return fail(QString::fromStdString(saved.error()));
    cflow::ui::CompareResultsModel reopened;
    reopened.setReport(saved->report);
    if (reopened.toCsv() != model->toCsv()) return fail(QStringLiteral("the reopened run's table differs"));

    std::printf("%s", model->toMarkdown().toLocal8Bit().constData());
    std::printf("cflow-studio compare self-test passed: %d entries, %lld charts, saved as comparison %lld\n",
                model->rowCount(), (long long)pngs->size(), (long long)wizard_->savedId());
    done_ = true;
    wizard_->accept();
    QApplication::exit(0);
}

void CompareSelfTest::fail(const QString& message) {
    if (done_) return;
    done_ = true;
    std::fprintf(stderr, "cflow-studio compare self-test failed: %s\n", message.toLocal8Bit().constData());
    QApplication::exit(1);
}

} // namespace cflow::studio
