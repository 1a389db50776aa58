#pragma once
// Tools > Paper scorecard…: the paper's eight claims measured on this machine, as `cflow
// scorecard` measures them: the same engine run (run_paper_scorecard, synthetic models included)
// in-process on a worker thread, with its progress, one row per claim (verdict, why, figures,
// method) and the trained zoo's Table 4.1 from the resources folder beside it. Cancel stops the
// run at its next check (between claims, or inside a synthetic model's generation); closing the
// dialog cancels and waits for the worker, which never outlives it.
#include <memory>
#include <vector>

#include <QDialog>
#include <QString>
#include <QStringList>

#include "cflow/base/result.h"
#include "cflow/engine/scorecard/scorecard.h"

class QLabel;
class QProgressBar;
class QPushButton;
class QTableWidget;
class QTextBrowser;

namespace cflow::ui {

struct ScorecardRow {
    int claim = 0;
    QString title;
    QString verdict;  // "proven", "refuted", "inconclusive", "not measurable here"
    QString reason;
    QString method;
    QStringList figures;  // "name = value unit"
};

// A claim as the table shows it (figures as "name = value unit").
ScorecardRow scorecard_row(const ClaimResult& claim);

class ScorecardDialog : public QDialog {
    Q_OBJECT
public:
    explicit ScorecardDialog(QWidget* parent = nullptr);
    ~ScorecardDialog() override;

    void setResourcesDir(const QString& dir) { resourcesDir_ = dir; }
    void setQuick(bool quick) { quick_ = quick; }  // small sizes (tests)
    // Where the run's temporary folder of synthetic models goes ("" = the system's temp folder).
    void setTempParent(const QString& dir) { tempParent_ = dir; }
    void start();
    void cancel();
    bool isRunning() const;

    const std::vector<ScorecardRow>& rows() const { return rows_; }
    QTableWidget* table() const { return table_; }
    QString statusText() const;
    QString table41Text() const;

signals:
    void scorecardFinished(bool ok);  // after a run: ok when every claim was reported

public:
    struct Run;  // a run's state shared with its worker (scorecard_dialog.cpp)

private:
    void onStep(int claim, int done, int total, const QString& what);
    void onFinished(const Result<std::vector<ClaimResult>>& results);
    void showRows();
    void waitForRun();

    QString resourcesDir_;
    QString tempParent_;
    bool quick_ = false;
    std::shared_ptr<Run> run_;  // the run in progress or finished last
    std::vector<ScorecardRow> rows_;
    QLabel* status_ = nullptr;
    QProgressBar* bar_ = nullptr;
    QTableWidget* table_ = nullptr;
    QTextBrowser* table41_ = nullptr;
    QPushButton* runButton_ = nullptr;
    QPushButton* cancel_ = nullptr;
};

} // namespace cflow::ui
