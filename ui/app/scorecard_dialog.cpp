#include "cflow/ui/scorecard_dialog.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFuture>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QTextBrowser>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "cflow/engine/scorecard/paper_scorecard.h"
#include "cflow/ui/default_model.h"
#include "cflow/ui/screen_fit.h"

namespace cflow::ui {

struct ScorecardDialog::Run {
    CancelToken cancel;
    QFuture<void> future;
    bool cancelled = false;  // the user cancelled (the result is not shown as a failure)
    bool shown = false;      // onFinished ran (the worker may still be returning)
};

namespace {

constexpr int kClaims = 8;

QString figure_text(const Figure& f) {
    return QStringLiteral("%1 = %2 %3").arg(QString::fromStdString(f.name)).arg(f.value, 0, 'g', 5).arg(QString::fromStdString(f.unit));
}

} // namespace

ScorecardRow scorecard_row(const ClaimResult& claim) {
    ScorecardRow row;
    row.claim = claim.claim;
    row.title = QString::fromStdString(claim.title);
    row.verdict = QString::fromStdString(std::string(verdict_name(claim.verdict)));
    row.reason = QString::fromStdString(claim.reason);
    row.method = QString::fromStdString(claim.method);
    for (const Figure& f : claim.measured) row.figures << figure_text(f);
    return row;
}

ScorecardDialog::ScorecardDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("The paper's scorecard, measured here"));
    status_ = new QLabel(tr("Runs the paper's eight claims as experiments on this machine (about a minute; the "
                            "decode benchmarks want a quiet machine)."),
                         this);
    status_->setObjectName(QStringLiteral("scorecardStatus"));
    status_->setWordWrap(true);
    bar_ = new QProgressBar(this);
    bar_->setRange(0, kClaims);
    bar_->setValue(0);
    table_ = new QTableWidget(0, 4, this);
    table_->setObjectName(QStringLiteral("scorecardTable"));
    table_->setAccessibleName(tr("Claims and verdicts"));
    table_->setHorizontalHeaderLabels({tr("Claim"), tr("Title"), tr("Verdict"), tr("Why")});
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->verticalHeader()->setVisible(false);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setWordWrap(true);
    table41_ = new QTextBrowser(this);
    table41_->setObjectName(QStringLiteral("table41"));
    table41_->setAccessibleName(tr("Table 4.1 at our scale"));
    table41_->setMinimumHeight(120);
    runButton_ = new QPushButton(tr("Run"), this);
    cancel_ = new QPushButton(tr("Cancel"), this);
    cancel_->setEnabled(false);
    auto* close = new QPushButton(tr("Close"), this);
    connect(runButton_, &QPushButton::clicked, this, &ScorecardDialog::start);
    connect(cancel_, &QPushButton::clicked, this, &ScorecardDialog::cancel);
    connect(close, &QPushButton::clicked, this, &QDialog::reject);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(runButton_);
    buttons->addWidget(cancel_);
    buttons->addStretch(1);
    buttons->addWidget(close);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(status_);
    layout->addWidget(bar_);
    layout->addWidget(table_, 3);
    layout->addWidget(new QLabel(tr("Table 4.1 at our scale (the trained zoo):"), this));
    layout->addWidget(table41_, 1);
    layout->addLayout(buttons);
    resize_within_screen(this, QSize(960, 680));
    const QString model = default_model_path();
    if (!model.isEmpty()) resourcesDir_ = QFileInfo(model).absolutePath();
}

ScorecardDialog::~ScorecardDialog() {
    if (run_) run_->cancel.cancel();
    waitForRun();
}

void ScorecardDialog::waitForRun() {
    if (run_ && run_->future.isValid()) run_->future.waitForFinished();
}

bool ScorecardDialog::isRunning() const { return run_ && !run_->shown; }
QString ScorecardDialog::statusText() const { return status_->text(); }
QString ScorecardDialog::table41Text() const { return table41_->toPlainText(); }

void ScorecardDialog::start() {
    if (isRunning()) return;
    waitForRun();
    rows_.clear();
    showRows();
    bar_->setRange(0, kClaims);
    bar_->setValue(0);
    PaperScorecardSetup setup;
    setup.resources_dir = QDir::toNativeSeparators(resourcesDir_).toStdString();
    setup.temp_parent = QDir::toNativeSeparators(tempParent_).toStdString();
    setup.options.quick = quick_;
    run_ = std::make_shared<Run>();
    status_->setText(tr("Preparing the models…"));
    runButton_->setEnabled(false);
    cancel_->setEnabled(true);
    // The worker reaches the dialog only through queued calls: the destructor waits for it, and
    // events still queued for a deleted dialog are dropped with it.
    const QPointer<ScorecardDialog> self(this);
    std::shared_ptr<Run> run = run_;
    run_->future = QtConcurrent::run([self, run, setup] {
        auto results = run_paper_scorecard(setup, [&](const PaperScorecardStep& step) {
            const QString what = QString::fromStdString(step.what);
            QMetaObject::invokeMethod(self.data(), [self, step, what] {
                if (self) self->onStep(step.claim, step.done, step.total, what);
            }, Qt::QueuedConnection);
            return !run->cancel.is_cancelled();
        }, &run->cancel);
        QMetaObject::invokeMethod(self.data(), [self, run, results = std::move(results)] {
            if (self && self->run_ == run) self->onFinished(results);
        }, Qt::QueuedConnection);
    });
}

void ScorecardDialog::cancel() {
    if (!isRunning()) return;
    run_->cancelled = true;
    run_->cancel.cancel();
    cancel_->setEnabled(false);
    status_->setText(tr("Cancelling at the next step…"));
}

void ScorecardDialog::onStep(int claim, int done, int total, const QString& what) {
    if (run_ && run_->cancelled) return;
    bar_->setRange(0, total);
    bar_->setValue(done);
    status_->setText(claim == 0 ? tr("Preparing the models: %1…").arg(what)
                                : tr("Claim %1 (%2 of %3)…").arg(claim).arg(done + 1).arg(total));
}

void ScorecardDialog::onFinished(const Result<std::vector<ClaimResult>>& results) {
    run_->shown = true;
    runButton_->setEnabled(true);
    cancel_->setEnabled(false);
    if (run_->cancelled) {
        status_->setText(tr("Cancelled."));
        emit scorecardFinished(false);
        return;
    }
    if (!results) {
        status_->setText(tr("The scorecard failed: %1").arg(QString::fromStdString(results.error())));
        emit scorecardFinished(false);
        return;
    }
    for (const ClaimResult& claim : *results) rows_.push_back(scorecard_row(claim));
    bar_->setValue(bar_->maximum());
    showRows();
    int proven = 0, refuted = 0;
    for (const ScorecardRow& r : rows_) {
        proven += r.verdict == QLatin1String("proven");
        refuted += r.verdict == QLatin1String("refuted");
    }
    status_->setText(tr("%1 claims measured: %2 proven, %3 refuted, %4 inconclusive or not measurable here. Hover a "
                        "row for its figures and method.")
                         .arg(rows_.size())
                         .arg(proven)
                         .arg(refuted)
                         .arg(int(rows_.size()) - proven - refuted));
    QFile results_md(QDir(resourcesDir_).filePath(QStringLiteral("training/RESULTS.md")));
    const QString table = results_md.open(QIODevice::ReadOnly) && results_md.size() < (4 << 20)
                              ? QString::fromStdString(results_table_4_1(results_md.readAll().toStdString()))
                              : QString();
    if (table.isEmpty())
        table41_->setPlainText(tr("Not found: %1 (the trained zoo's results ship with the source tree).")
                                   .arg(QDir::toNativeSeparators(results_md.fileName())));
    else
        table41_->setMarkdown(table);
    emit scorecardFinished(true);
}

void ScorecardDialog::showRows() {
    table_->setRowCount(int(rows_.size()));
    for (int i = 0; i < int(rows_.size()); ++i) {
        const ScorecardRow& r = rows_[size_t(i)];
        const QString tip = r.figures.join(QLatin1Char('\n')) + QStringLiteral("\n\nMethod: ") + r.method;
        const QString cells[] = {QString::number(r.claim), r.title, r.verdict, r.reason};
        for (int c = 0; c < 4; ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            item->setToolTip(tip);
            table_->setItem(i, c, item);
        }
    }
    table_->resizeRowsToContents();
}

} // namespace cflow::ui
