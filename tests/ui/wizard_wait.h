#pragma once
// Waits until a wizard's current page may go on (isComplete), or until nothing runs and it still
// may not (its worker has been idle for a second): the wait the conversion and comparison wizard
// tests share. Works for any wizard with currentPage() and isBusy().
#include <QElapsedTimer>
#include <QTest>
#include <QWizardPage>

namespace cflow::ui::test {

template <typename Wizard>
bool wait_page_complete(Wizard& wizard, int timeoutMs = 240000) {
    constexpr int kIdleTicks = 50;  // x 20 ms
    QElapsedTimer timer;
    timer.start();
    int idle = 0;
    while (timer.elapsed() < timeoutMs) {
        QTest::qWait(20);
        if (wizard.currentPage()->isComplete()) return true;
        idle = wizard.isBusy() ? 0 : idle + 1;
        if (idle > kIdleTicks) return false;
    }
    return false;
}

} // namespace cflow::ui::test
