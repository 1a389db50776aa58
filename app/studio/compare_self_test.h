#pragma once
// `cflow-studio --self-test compare --screenshot-dir DIR MODEL MODEL...`: runs the comparison
// wizard unattended on 2-8 models (speed, perplexity on the bundled sample, agreement with the
// first model, bytes per token, B_naive/B_critical, expert wait), saves a PNG per page, the
// results page with its table and its charts, one PNG per chart (DIR/charts/), and the CSV and
// Markdown exports; checks that the exports' numbers are the table's and that the run reopens
// from the database. Exits 0 on success, 1 with a message otherwise. For CI under Xvfb.
#include <memory>

#include <QObject>
#include <QString>
#include <QStringList>
#include <QTimer>

namespace cflow::ui {
class CompareWizard;
}

namespace cflow::studio {

class CompareSelfTest : public QObject {
    Q_OBJECT
public:
    static constexpr int kTimeoutMs = 600000;

    CompareSelfTest(QStringList modelPaths, QString screenshotDir);
    ~CompareSelfTest() override;
    void start();

private:
    void poll();
    bool savePage(const QString& name);
    void finish();
    void fail(const QString& message);

    QStringList models_;
    QString screenshotDir_;
    std::unique_ptr<cflow::ui::CompareWizard> wizard_;
    QTimer poll_;
    QTimer timeout_;
    int lastSavedId_ = -1;
    int idleTicks_ = 0;  // polls with the page incomplete and nothing running
    bool finishing_ = false;  // on the results page: exporting and checking
    bool done_ = false;       // exit requested
};

} // namespace cflow::studio
