// Windows sized to the screen and restored onto one (issue 37): the first window (1200 x 800)
// and the Compare wizard (980 x 720) opened taller than a 768-px screen, and a geometry saved on
// a larger monitor came back off-screen at 800 x 600. The offscreen platform's screen is 800 x 600.
#include <QGuiApplication>
#include <QScreen>
#include <QTest>

#include <gtest/gtest.h>

#include "cflow/ui/compare_wizard.h"
#include "cflow/ui/main_window.h"
#include "cflow/ui/screen_fit.h"
#include "ui_test_models.h"

namespace {

using cflow::ui::rect_on_screen;
using cflow::ui::size_within;

TEST(ScreenFit, SizesShrinkToTheScreenButNotBelowTheMinimum) {
    const QRect laptop(0, 0, 1366, 768);
    EXPECT_EQ(size_within(QSize(1200, 800), laptop, QSize(800, 600)), QSize(1200, 729));
    EXPECT_EQ(size_within(QSize(980, 720), laptop), QSize(980, 720));
    EXPECT_EQ(size_within(QSize(1200, 800), QRect(0, 0, 800, 600), QSize(800, 600)), QSize(800, 600));
    EXPECT_EQ(size_within(QSize(1200, 800), QRect(0, 0, 1920, 1080)), QSize(1200, 800));
}

TEST(ScreenFit, AGeometryNoScreenShowsComesBackOntoOne) {
    const QList<QRect> screens{QRect(0, 0, 1366, 768)};
    const QRect shown(100, 50, 1000, 700);
    EXPECT_EQ(rect_on_screen(shown, screens, screens[0]), shown) << "a window on screen stays where it is";
    EXPECT_EQ(rect_on_screen(QRect(2000, 100, 1200, 800), screens, screens[0]), QRect(166, 0, 1200, 768))
        << "saved on a second monitor now gone";
    const QRect title_above(100, -400, 800, 600);  // most of it shown, its title bar not
    const QRect placed = rect_on_screen(title_above, screens, screens[0]);
    EXPECT_EQ(placed.top(), 0);
    const QList<QRect> two{QRect(0, 0, 1366, 768), QRect(1366, 0, 1920, 1080)};
    EXPECT_EQ(rect_on_screen(QRect(1500, 100, 1200, 800), two, two[0]), QRect(1500, 100, 1200, 800))
        << "a window on the second screen stays there";
}

TEST(ScreenFit, TheFirstWindowAndTheCompareWizardFitTheScreen) {
    cflow::ui::test::ScopedDb db("screen_fit_first");
    const QRect available = QGuiApplication::primaryScreen()->availableGeometry();
    cflow::ui::MainWindow window;
    EXPECT_LE(window.height(), std::max(available.height(), cflow::ui::MainWindow::kMinimumHeight))
        << "was 800 on a " << available.height() << "-px screen";
    cflow::ui::CompareWizard wizard(nullptr, db.path);
    EXPECT_LE(wizard.height(), available.height());
    EXPECT_LE(wizard.width(), available.width());
}

// A window placed where no screen shows it (as a geometry saved on a monitor since removed) is
// brought back by keep_on_screen, which the main window runs after restoring its geometry.
TEST(ScreenFit, AWindowNoScreenShowsIsBroughtBack) {
    cflow::ui::test::ScopedDb db("screen_fit_restore");
    cflow::ui::MainWindow window;
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    window.move(4000, 3000);
    const QRect available = QGuiApplication::primaryScreen()->availableGeometry();
    ASSERT_FALSE(available.intersects(window.frameGeometry())) << "the platform kept the window where it was put";
    cflow::ui::keep_on_screen(&window);
    EXPECT_TRUE(available.intersects(window.frameGeometry()))
        << window.frameGeometry().x() << "," << window.frameGeometry().y() << " on " << available.width() << "x"
        << available.height();
    EXPECT_GE(window.frameGeometry().top(), available.top());
}

} // namespace
