// Keyboard and screen-reader basics on the real window: every control is reachable with Tab,
// every button and field has a name a screen reader can say, and the app icon is sharp at
// any device pixel ratio.
#include <set>

#include <QAbstractButton>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTest>
#include <QTextBrowser>

#include <gtest/gtest.h>

#include "cflow/ui/app_icon.h"
#include "cflow/ui/chat_controller.h"
#include "cflow/ui/chat_panel.h"
#include "cflow/ui/main_window.h"
#include "ui_test_models.h"

namespace {

using cflow::ui::MainWindow;

bool is_control(const QWidget* w) {
    return qobject_cast<const QAbstractButton*>(w) || qobject_cast<const QLineEdit*>(w) ||
           qobject_cast<const QPlainTextEdit*>(w) || qobject_cast<const QComboBox*>(w) ||
           qobject_cast<const QAbstractSpinBox*>(w) || qobject_cast<const QListWidget*>(w);
}

// What a screen reader says for it: its accessible name, its text, or the label it is the buddy of.
QString spoken_name(const QWidget* w, const QWidget* root) {
    if (!w->accessibleName().isEmpty()) return w->accessibleName();
    if (const auto* b = qobject_cast<const QAbstractButton*>(w); b && !b->text().isEmpty()) return b->text();
    for (const QLabel* label : root->findChildren<QLabel*>())
        if (label->buddy() == w && !label->text().isEmpty()) return label->text();
    return {};
}

std::vector<QWidget*> visible_controls(MainWindow& window) {
    std::vector<QWidget*> out;
    for (QWidget* w : window.findChildren<QWidget*>()) {
        // Line edits inside spin boxes and combo boxes belong to them.
        if (qobject_cast<QAbstractSpinBox*>(w->parentWidget()) || qobject_cast<QComboBox*>(w->parentWidget())) continue;
        if (w->isVisible() && w->isEnabled() && is_control(w) && w->window() == &window &&
            !w->objectName().startsWith(QLatin1String("qt_")))
            out.push_back(w);
    }
    return out;
}

QString describe(const QWidget* w) {
    return QString::fromLatin1(w->metaObject()->className()) + u' ' + w->objectName() + u' ' +
           (qobject_cast<const QAbstractButton*>(w) ? qobject_cast<const QAbstractButton*>(w)->text() : QString());
}

TEST(Accessibility, EveryVisibleControlHasANameAndTakesTabFocus) {
    cflow::ui::test::ScopedDb db("accessibility_names");
    MainWindow window;
    window.resize(1366, 768);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    window.openModel(cflow::ui::test::qpath(cflow::ui::test::chatml_model()));
    ASSERT_TRUE(QTest::qWaitFor([&] { return window.controller()->modelReady(); }, 60000));
    QStringList problems;
    std::set<QWidget*> checked;
    // Each tab of the strip in turn: its panel's controls are visible only while it is raised.
    for (const char* dock : {"inspectorDock", "promptDock", "samplingDock", "modelDock"}) {
        window.findChild<QDockWidget*>(QString::fromLatin1(dock))->raise();
        QTest::qWait(10);
        for (QWidget* w : visible_controls(window)) {
            if (!checked.insert(w).second) continue;
            if (spoken_name(w, &window).isEmpty()) problems << describe(w) + QStringLiteral(": no accessible name");
            if (!(w->focusPolicy() & Qt::TabFocus)) problems << describe(w) + QStringLiteral(": not reachable with Tab");
        }
    }
    EXPECT_GE(checked.size(), 25u) << "the sidebar, chat, inspector, prompt, sampling and model controls";
    EXPECT_TRUE(problems.isEmpty()) << problems.join(u'\n').toStdString();
}

TEST(Accessibility, TabWalksFromTheMessageBoxThroughTheChatControls) {
    cflow::ui::test::ScopedDb db("accessibility_tab");
    MainWindow window;
    window.resize(1366, 768);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    QApplication::setActiveWindow(&window);
    window.openModel(cflow::ui::test::qpath(cflow::ui::test::chatml_model()));
    ASSERT_TRUE(QTest::qWaitFor([&] { return window.controller()->modelReady(); }, 60000));
    window.chatPanel()->input()->setFocus();
    std::set<QWidget*> reached;
    for (int i = 0; i < 200 && QApplication::focusWidget(); ++i) {
        reached.insert(QApplication::focusWidget());
        QTest::keyClick(QApplication::focusWidget(), Qt::Key_Tab);
    }
    EXPECT_TRUE(reached.count(window.chatPanel()->sendButton())) << "Send";
    EXPECT_TRUE(reached.count(window.chatPanel()->systemPromptField())) << "system prompt";
    EXPECT_TRUE(reached.count(window.chatPanel()->input())) << "the walk comes back round";
    int controls = 0;
    for (QWidget* w : visible_controls(window)) controls += reached.count(w) ? 1 : 0;
    EXPECT_GE(controls, int(visible_controls(window).size()) * 9 / 10) << "Tab reaches (nearly) every visible control";
}

TEST(Accessibility, TheAppIconIsDrawnSharpAtEveryPixelRatio) {
    const QIcon icon = cflow::ui::app_icon();
    ASSERT_FALSE(icon.isNull());
    for (const int side : {16, 32, 64, 256}) {
        const QPixmap pixmap = icon.pixmap(QSize(side, side));
        EXPECT_EQ(pixmap.size(), QSize(side, side)) << side;
        // Drawn at the asked size (not a scaled small bitmap): the edge of the tile is one crisp step.
        const QImage image = pixmap.toImage();
        EXPECT_GT(qAlpha(image.pixel(side / 2, side / 2)), 200) << side;
        EXPECT_EQ(qAlpha(image.pixel(0, 0)), 0) << "rounded corner, transparent" << side;
    }
}

} // namespace
