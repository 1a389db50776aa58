#pragma once
// `cflow-studio --self-test MODEL [--size WxH] --screenshot OUT.png`: drives the real window
// through one chat turn at exactly W x H, fails if any text is clipped or widgets overlap
// (layout_problems), and saves a W x H screenshot, for CI and for smoke-testing a build.
#include <QObject>
#include <QSize>
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

    SelfTest(cflow::ui::MainWindow& window, QString modelPath, QString screenshotPath, QSize size = {});
    // Starts the run; the application exits with 0 on success, 1 with a message on stderr otherwise.
    void start();

private:
    void fail(const QString& message);
    void succeed();

    cflow::ui::MainWindow& window_;
    QString modelPath_;
    QString screenshotPath_;
    QSize size_;  // empty: the window's default size
    QTimer timeout_;
    bool done_ = false;
};

} // namespace cflow::studio
