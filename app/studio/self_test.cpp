#include "self_test.h"

#include <cstdio>

#include <QApplication>
#include <QDir>
#include <QPixmap>

#include <spdlog/spdlog.h>

#include "cflow/ui/chat_panel.h"
#include "cflow/ui/inspector/inspector_dock.h"
#include "cflow/ui/layout_audit.h"
#include "cflow/ui/main_window.h"

namespace cflow::studio {

SelfTest::SelfTest(cflow::ui::MainWindow& window, QString modelPath, QString screenshotPath, QSize size)
    : window_(window), modelPath_(std::move(modelPath)), screenshotPath_(std::move(screenshotPath)), size_(size) {
    timeout_.setSingleShot(true);
    connect(&timeout_, &QTimer::timeout, this,
            [this] { fail(QStringLiteral("timed out after %1 s").arg(kTimeoutMs / 1000)); });
    connect(&window_, &cflow::ui::MainWindow::openFailed, this,
            [this](const QString& path, const QString& message) { fail(path + QStringLiteral(": ") + message); });
    connect(&window_, &cflow::ui::MainWindow::engineReady, this, [this] {
        window_.chatPanel()->newConversation();
        if (!window_.chatPanel()->send(QStringLiteral("Hello"))) fail(QStringLiteral("the chat did not accept a message"));
    });
    connect(window_.chatPanel(), &cflow::ui::ChatPanel::replyFailed, this,
            [this](const QString& message) { fail(QStringLiteral("the reply failed: ") + message); });
    // Let the final batch render (and any timer-driven panel repaint) before grabbing.
    connect(window_.chatPanel(), &cflow::ui::ChatPanel::replyFinished, this,
            [this] { QTimer::singleShot(300, this, &SelfTest::succeed); });
}

void SelfTest::start() {
    if (size_.isValid()) window_.resize(size_);
    timeout_.start(kTimeoutMs);
    window_.openModel(QDir::current().absoluteFilePath(modelPath_));
}

void SelfTest::fail(const QString& message) {
    if (done_) return;
    done_ = true;
    std::fprintf(stderr, "cflow-studio self-test failed: %s\n", message.toLocal8Bit().constData());
    spdlog::error("self-test failed: {}", message.toStdString());
    QApplication::exit(1);
}

void SelfTest::succeed() {
    if (done_) return;
    // The inspector drains its ring on a timer; drain once more so the charts show the whole reply.
    window_.inspector()->drainNow();
    if (window_.inspector()->history().session().empty()) {
        fail(QStringLiteral("the inspector received no telemetry"));
        return;
    }
    if (size_.isValid() && window_.size() != size_) {
        fail(QStringLiteral("the window is %1x%2, not the %3x%4 asked for")
                 .arg(window_.width())
                 .arg(window_.height())
                 .arg(size_.width())
                 .arg(size_.height()));
        return;
    }
    // The screenshots are to show the inspector with this reply's data (issue 37), not a sliver of it.
    const QWidget* inspector = window_.inspector();
    if (!inspector->isVisible() || inspector->height() < window_.height() / 5 || inspector->width() < window_.width() / 3) {
        fail(QStringLiteral("the inspector has %1x%2 of the %3x%4 window")
                 .arg(inspector->isVisible() ? inspector->width() : 0)
                 .arg(inspector->isVisible() ? inspector->height() : 0)
                 .arg(window_.width())
                 .arg(window_.height()));
        return;
    }
    const QStringList problems = cflow::ui::layout_problems(&window_);
    if (!problems.isEmpty()) {
        fail(QStringLiteral("the layout at %1x%2 has problems:\n  %3")
                 .arg(window_.width())
                 .arg(window_.height())
                 .arg(problems.join(QStringLiteral("\n  "))));
        return;
    }
    const QPixmap shot = window_.grab();
    if (shot.isNull() || !shot.save(screenshotPath_, "PNG")) {
        fail(QStringLiteral("cannot save the screenshot to %1").arg(QDir::toNativeSeparators(screenshotPath_)));
        return;
    }
    done_ = true;
    std::printf("cflow-studio self-test passed: screenshot %s (%dx%d)\n", screenshotPath_.toLocal8Bit().constData(),
                shot.width(), shot.height());
    std::fflush(stdout);
    QApplication::exit(0);
}

} // namespace cflow::studio
