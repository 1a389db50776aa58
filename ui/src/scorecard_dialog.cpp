#include "cflow/ui/scorecard_dialog.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QTableWidget>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "cflow/ui/default_model.h"
#include "cflow/ui/screen_fit.h"

namespace cflow::ui {
namespace {

constexpr int kClaims = 8;

QString figure_text(const QJsonObject& f) {
    return QStringLiteral("%1 = %2 %3")
        .arg(f.value(QStringLiteral("name")).toString())
        .arg(f.value(QStringLiteral("value")).toDouble(), 0, 'g', 5)
        .arg(f.value(QStringLiteral("unit")).toString());
}

} // namespace

Result<std::vector<ScorecardRow>> parse_scorecard_json(const QByteArray& json) {
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(json.trimmed(), &error);
    if (error.error != QJsonParseError::NoError)
        return make_error("the scorecard's output is not JSON (" + error.errorString().toStdString() + " at offset " +
                          std::to_string(error.offset) + ")");
    if (!doc.isArray()) return make_error("the scorecard's output is not a JSON array of claims");
    std::vector<ScorecardRow> rows;
    for (const QJsonValue& v : doc.array()) {
        const QJsonObject o = v.toObject();
        ScorecardRow row;
        row.claim = o.value(QStringLiteral("claim")).toInt();
        row.title = o.value(QStringLiteral("title")).toString();
        row.verdict = o.value(QStringLiteral("verdict")).toString();
        row.reason = o.value(QStringLiteral("reason")).toString();
        row.method = o.value(QStringLiteral("method")).toString();
        for (const QJsonValue& f : o.value(QStringLiteral("measured")).toArray()) row.figures << figure_text(f.toObject());
        if (row.claim < 1 || row.claim > kClaims || row.verdict.isEmpty())
            return make_error("the scorecard's output has an entry without a claim number 1-8 and a verdict");
        rows.push_back(std::move(row));
    }
    return rows;
}

QString table_4_1_markdown(const QString& resultsMarkdown) {
    // As `cflow scorecard` prints it: the first table of RESULTS.md, under the file's heading.
    QString heading, table;
    bool inTable = false;
    for (const QString& line : resultsMarkdown.split(QLatin1Char('\n'))) {
        if (heading.isEmpty() && line.startsWith(QLatin1Char('#'))) heading = line;
        if (line.startsWith(QLatin1Char('|'))) {
            table += line + QLatin1Char('\n');
            inTable = true;
        } else if (inTable) {
            break;
        }
    }
    if (table.isEmpty()) return {};
    return heading.isEmpty() ? table : heading + QStringLiteral("\n\n") + table;
}

QString find_cflow_cli(const QString& executableDir) {
#ifdef Q_OS_WIN
    const QString name = QStringLiteral("cflow.exe");
#else
    const QString name = QStringLiteral("cflow");
#endif
    for (const QString& candidate : {QDir(executableDir).filePath(name), QDir(executableDir).filePath(QStringLiteral("../") + name)}) {
        const QFileInfo info(candidate);
        if (info.isFile() && info.isExecutable()) return info.canonicalFilePath();
    }
    return {};
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
    run_ = new QPushButton(tr("Run"), this);
    cancel_ = new QPushButton(tr("Cancel"), this);
    cancel_->setEnabled(false);
    auto* close = new QPushButton(tr("Close"), this);
    connect(run_, &QPushButton::clicked, this, &ScorecardDialog::start);
    connect(cancel_, &QPushButton::clicked, this, &ScorecardDialog::cancel);
    connect(close, &QPushButton::clicked, this, &QDialog::reject);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(run_);
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
    if (process_ && process_->state() != QProcess::NotRunning) {
        process_->kill();
        process_->waitForFinished(5000);
    }
}

bool ScorecardDialog::isRunning() const { return process_ && process_->state() != QProcess::NotRunning; }
QString ScorecardDialog::statusText() const { return status_->text(); }
QString ScorecardDialog::table41Text() const { return table41_->toPlainText(); }

void ScorecardDialog::start() {
    if (isRunning()) return;
    if (cliPath_.isEmpty()) cliPath_ = find_cflow_cli(QCoreApplication::applicationDirPath());
    if (cliPath_.isEmpty()) {
        status_->setText(tr("The cflow command-line tool was not found beside cflow studio (%1): the scorecard runs "
                            "through it.")
                             .arg(QDir::toNativeSeparators(QCoreApplication::applicationDirPath())));
        emit scorecardFinished(false);
        return;
    }
    rows_.clear();
    cancelled_ = false;
    showRows();
    stdout_.clear();
    stderrTail_.clear();
    bar_->setValue(0);
    QStringList args{QStringLiteral("scorecard"), QStringLiteral("--json")};
    if (!resourcesDir_.isEmpty()) args << QStringLiteral("--resources") << resourcesDir_;
    if (quick_) args << QStringLiteral("--quick");
    delete process_;
    process_ = new QProcess(this);
    connect(process_, &QProcess::readyReadStandardOutput, this, [this] { stdout_ += process_->readAllStandardOutput(); });
    connect(process_, &QProcess::readyReadStandardError, this, &ScorecardDialog::onStderr);
    connect(process_, &QProcess::finished, this,
            [this](int code, QProcess::ExitStatus status) { onFinished(code, status == QProcess::CrashExit); });
    connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
        if (e == QProcess::FailedToStart) onFinished(-1, true);
    });
    status_->setText(tr("Preparing the models…"));
    run_->setEnabled(false);
    cancel_->setEnabled(true);
    process_->start(cliPath_, args);
}

void ScorecardDialog::cancel() {
    if (!isRunning()) return;
    cancelled_ = true;
    process_->kill();  // the CLI removes its temporary folder on exit; a killed one leaves it in TMPDIR
    status_->setText(tr("Cancelled."));
}

void ScorecardDialog::onStderr() {
    const QByteArray chunk = process_->readAllStandardError();
    stderrTail_ = (stderrTail_ + chunk).right(4096);
    static const QRegularExpression progress(QStringLiteral("scorecard: claim (\\d+) \\((\\d+)/(\\d+)\\)"));
    QRegularExpressionMatchIterator it = progress.globalMatch(QString::fromUtf8(chunk));
    while (it.hasNext()) {
        const QRegularExpressionMatch m = it.next();
        bar_->setRange(0, m.captured(3).toInt());
        bar_->setValue(m.captured(2).toInt() - 1);
        status_->setText(tr("Claim %1 (%2 of %3)…").arg(m.captured(1), m.captured(2), m.captured(3)));
    }
}

void ScorecardDialog::onFinished(int exitCode, bool crashed) {
    run_->setEnabled(true);
    cancel_->setEnabled(false);
    if (cancelled_) {
        emit scorecardFinished(false);
        return;
    }
    if (crashed || exitCode != 0) {
        const QString tail = QString::fromUtf8(stderrTail_).trimmed().split(QLatin1Char('\n')).value(-1).trimmed();
        status_->setText(tr("The scorecard failed (%1): %2")
                             .arg(crashed ? tr("it did not run to the end") : tr("exit code %1").arg(exitCode),
                                  tail.isEmpty() ? tr("no message") : tail));
        emit scorecardFinished(false);
        return;
    }
    auto parsed = parse_scorecard_json(stdout_);
    if (!parsed) {
        status_->setText(QString::fromStdString(parsed.error()));
        emit scorecardFinished(false);
        return;
    }
    rows_ = std::move(parsed).value();
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
    QFile results(QDir(resourcesDir_).filePath(QStringLiteral("training/RESULTS.md")));
    const QString table = results.open(QIODevice::ReadOnly) && results.size() < (4 << 20)
                              ? table_4_1_markdown(QString::fromUtf8(results.readAll()))
                              : QString();
    if (table.isEmpty())
        table41_->setPlainText(tr("Not found: %1 (the trained zoo's results ship with the source tree).")
                                   .arg(QDir::toNativeSeparators(results.fileName())));
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
