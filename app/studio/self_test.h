#pragma once
// `cflow-studio --self-test MODEL --screenshot OUT.png`: drives the real window through
// one chat turn and saves a screenshot, for CI and for smoke-testing a build.
#include <QObject>
#include <QString>
#include <QTimer>

namespace cflow::ui {
class MainWindow;
}

namespace cflow::studio {

class SelfTest : public QObject {
    Q_OBJECT
public:
    static constexpr int kTimeoutMs = 60000;

    SelfTest(cflow::ui::MainWindow& window, QString modelPath, QString screenshotPath);
    // Starts the run; the application exits with 0 on success, 1 with a message on stderr otherwise.
    void start();

private:
    void fail(const QString& message);
    void succeed();

    cflow::ui::MainWindow& window_;
    QString modelPath_;
    QString screenshotPath_;
    QTimer timeout_;
    bool done_ = false;
};

} // namespace cflow::studio
