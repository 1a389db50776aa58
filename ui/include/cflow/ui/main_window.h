#pragma once
// The studio's main window. For now: File > Open model…, Help > About, the header view
// of the opened model and a status bar. Opening runs on a worker thread; the result (or
// the reader's error) arrives back on the GUI thread through a QCoro task.
#include <cstdint>
#include <memory>

#include <QMainWindow>
#include <QString>

#include <QCoro/QCoroTask>

namespace cflow {
class CflowFile;
}

namespace cflow::ui {

class ModelHeaderView;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Opens path on a worker and shows its header; on failure reports the reader's message
    // (openFailed, lastError(), a non-blocking message box). Resolves to whether this call's
    // model is now shown (false also when a later openModel call superseded it).
    QCoro::Task<bool> openModel(QString path);

    std::shared_ptr<const CflowFile> model() const { return model_; }
    const QString& lastError() const { return lastError_; }
    ModelHeaderView* headerView() const { return headerView_; }

signals:
    void modelOpened(const QString& path);
    void openFailed(const QString& path, const QString& message);

private slots:
    void chooseModel();
    void showAbout();

private:
    void createMenus();
    void reportError(const QString& path, const QString& message);

    ModelHeaderView* headerView_ = nullptr;
    std::shared_ptr<const CflowFile> model_;
    QString lastError_;
    uint64_t openRequest_ = 0;  // id of the newest openModel call; older results are dropped
};

} // namespace cflow::ui
