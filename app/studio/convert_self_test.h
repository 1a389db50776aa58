#pragma once
// `cflow-studio --self-test convert --source SRC --output OUT --screenshot-dir DIR`: runs the
// conversion wizard end to end unattended (each page's step on its worker, Next as soon as the
// page is complete) and saves one PNG per page; exits 0 when the model is written with the
// wizard's default options, passes its validation and its report is saved, and no page has a
// cut label, an overlap or a control without a spoken name (layout_audit.h); 1 with the
// page's message otherwise. For CI under Xvfb.
#include <memory>

#include <QObject>
#include <QString>
#include <QTimer>

namespace cflow::ui {
class ConvertWizard;
}

namespace cflow::studio {

class ConvertSelfTest : public QObject {
    Q_OBJECT
public:
    static constexpr int kTimeoutMs = 600000;

    ConvertSelfTest(QString sourcePath, QString tokenizerPath, QString outputPath, QString screenshotDir);
    ~ConvertSelfTest() override;
    void start();

private:
    void poll();
    bool savePage();
    void fail(const QString& message);

    QString source_, tokenizer_, output_, screenshotDir_;
    std::unique_ptr<cflow::ui::ConvertWizard> wizard_;
    QTimer poll_;
    QTimer timeout_;
    int lastSavedId_ = -1;
    int idleTicks_ = 0;  // polls with the page incomplete and nothing running
    bool done_ = false;
};

} // namespace cflow::studio
