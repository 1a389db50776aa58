#pragma once
// Tools > Paper scorecard…: the paper's eight claims measured on this machine, as `cflow
// scorecard --json` measures them. The dialog runs the installed CLI as a child process (the
// synthetic models the claims need are made by the CLI's synth code, which the UI layer cannot
// link), shows its progress and one row per claim (verdict, why, figures, method), and the
// trained zoo's Table 4.1 from the resources folder beside it. Cancel kills the child.
#include <vector>

#include <QByteArray>
#include <QDialog>
#include <QString>
#include <QStringList>

#include "cflow/base/result.h"

class QLabel;
class QProcess;
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

// The rows of `cflow scorecard --json` output (a JSON array of claim objects); an error naming
// what is wrong when it is not that.
Result<std::vector<ScorecardRow>> parse_scorecard_json(const QByteArray& json);
// The "Table 4.1" section of a RESULTS.md (its heading and the table under it); "" when absent.
QString table_4_1_markdown(const QString& resultsMarkdown);
// The cflow CLI beside the studio executable (installed: same folder; build tree: one up).
QString find_cflow_cli(const QString& executableDir);

class ScorecardDialog : public QDialog {
    Q_OBJECT
public:
    explicit ScorecardDialog(QWidget* parent = nullptr);
    ~ScorecardDialog() override;

    void setCliPath(const QString& path) { cliPath_ = path; }
    void setResourcesDir(const QString& dir) { resourcesDir_ = dir; }
    void setQuick(bool quick) { quick_ = quick; }  // --quick: small sizes (tests)
    void start();
    void cancel();
    bool isRunning() const;

    const std::vector<ScorecardRow>& rows() const { return rows_; }
    QTableWidget* table() const { return table_; }
    QString statusText() const;
    QString table41Text() const;

signals:
    void scorecardFinished(bool ok);  // after a run: ok when every claim was reported

private:
    void onStderr();
    void onFinished(int exitCode, bool crashed);
    void showRows();

    QString cliPath_;
    QString resourcesDir_;
    bool quick_ = false;
    bool cancelled_ = false;
    QProcess* process_ = nullptr;
    QByteArray stdout_;
    QByteArray stderrTail_;  // the last lines, for the error message
    std::vector<ScorecardRow> rows_;
    QLabel* status_ = nullptr;
    QProgressBar* bar_ = nullptr;
    QTableWidget* table_ = nullptr;
    QTextBrowser* table41_ = nullptr;
    QPushButton* run_ = nullptr;
    QPushButton* cancel_ = nullptr;
};

} // namespace cflow::ui
