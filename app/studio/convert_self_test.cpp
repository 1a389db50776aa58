#include "convert_self_test.h"

#include <cstdio>

#include <QAbstractButton>
#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QPixmap>
#include <QPlainTextEdit>
#include <QWizardPage>

#include "cflow/engine/convert/conversion_report.h"
#include "cflow/ui/convert_wizard.h"
#include "cflow/ui/layout_audit.h"

namespace cflow::studio {
namespace {

const char* const kConvertPageNames[] = {"1-source", "2-preflight", "3-options", "4-progress", "5-validation"};
constexpr int kConvertPollMs = 100;
constexpr int kConvertIdleTicksBeforeFailing = 20;  // 2 s with nothing running and the page incomplete

} // namespace

ConvertSelfTest::ConvertSelfTest(QString sourcePath, QString tokenizerPath, QString outputPath, QString screenshotDir)
    : source_(std::move(sourcePath)), tokenizer_(std::move(tokenizerPath)), output_(std::move(outputPath)),
      screenshotDir_(std::move(screenshotDir)) {}

ConvertSelfTest::~ConvertSelfTest() = default;

void ConvertSelfTest::start() {
    if (!QDir().mkpath(screenshotDir_)) return fail(QStringLiteral("cannot create the screenshot folder %1").arg(screenshotDir_));
    wizard_ = std::make_unique<cflow::ui::ConvertWizard>();
    wizard_->setSourcePath(QFileInfo(source_).absoluteFilePath());
    if (!tokenizer_.isEmpty()) wizard_->setTokenizerPath(QFileInfo(tokenizer_).absoluteFilePath());
    wizard_->setOutputPath(QFileInfo(output_).absoluteFilePath());
    wizard_->show();
    connect(&poll_, &QTimer::timeout, this, &ConvertSelfTest::poll);
    poll_.start(kConvertPollMs);
    timeout_.setSingleShot(true);
    connect(&timeout_, &QTimer::timeout, this, [this] { fail(QStringLiteral("timed out after %1 s").arg(kTimeoutMs / 1000)); });
    timeout_.start(kTimeoutMs);
}

bool ConvertSelfTest::savePage() {
    const int id = wizard_->currentId();
    // What a user would see as broken on this page, before its picture is kept.
    const QStringList problems = cflow::ui::layout_problems(wizard_.get()) + cflow::ui::accessibility_problems(wizard_.get());
    if (!problems.isEmpty()) {
        fail(QStringLiteral("page %1: %2").arg(QString::fromLatin1(kConvertPageNames[id]), problems.join(QStringLiteral("; "))));
        return false;
    }
    const QString path = QDir(screenshotDir_).filePath(QString::fromLatin1(kConvertPageNames[id]) + QStringLiteral(".png"));
    if (!wizard_->grab().save(path)) {
        fail(QStringLiteral("cannot save %1").arg(path));
        return false;
    }
    std::printf("cflow-studio convert self-test: page %s saved to %s\n", kConvertPageNames[id], path.toLocal8Bit().constData());
    lastSavedId_ = id;
    return true;
}

void ConvertSelfTest::poll() {
    if (done_) return;
    QWizardPage* page = wizard_->currentPage();
    const int id = wizard_->currentId();
    if (!page->isComplete()) {
        idleTicks_ = wizard_->isBusy() ? 0 : idleTicks_ + 1;
        if (idleTicks_ < kConvertIdleTicksBeforeFailing) return;
        // Nothing runs and the page cannot go on: report what it says.
        QString text;
        for (auto* label : page->findChildren<QLabel*>()) text += label->text() + QStringLiteral(" ");
        for (auto* view : page->findChildren<QPlainTextEdit*>()) text += view->toPlainText();
        savePage();
        return fail(QStringLiteral("page %1 cannot go on: %2").arg(QString::fromLatin1(kConvertPageNames[id]), text.simplified()));
    }
    idleTicks_ = 0;
    if (lastSavedId_ != id && !savePage()) return;
    if (id != cflow::ui::ConvertWizard::ValidationPageId) {
        wizard_->next();
        return;
    }
    const auto verdict = wizard_->findChild<QLabel*>(QStringLiteral("validationVerdict"));
    const auto report = cflow::conversion_report_paths(QFileInfo(output_).absoluteFilePath().toStdString());
    if (!QFileInfo::exists(output_)) return fail(QStringLiteral("the wizard finished but %1 does not exist").arg(output_));
    if (!QFileInfo::exists(QString::fromStdString(report.json)))
        return fail(QStringLiteral("no conversion report beside %1").arg(output_));
    // The wizard's defaults are chosen to pass its own validation (issue 37).
    if (!verdict || !verdict->text().contains(QStringLiteral("<b>pass</b>")))
        return fail(QStringLiteral("the default conversion did not pass its validation: %1").arg(verdict ? verdict->text() : QString()));
    done_ = true;
    std::printf("cflow-studio convert self-test passed: %s (%s)\n", output_.toLocal8Bit().constData(),
                verdict ? verdict->text().toLocal8Bit().constData() : "");
    wizard_->accept();
    QApplication::exit(0);
}

void ConvertSelfTest::fail(const QString& message) {
    if (done_) return;
    done_ = true;
    std::fprintf(stderr, "cflow-studio convert self-test failed: %s\n", message.toLocal8Bit().constData());
    QApplication::exit(1);
}

} // namespace cflow::studio
