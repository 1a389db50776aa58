#pragma once
// Windows and dialogs sized to the screen they open on and restored onto a screen (issue 37:
// the first window, 1200 x 800, and the Compare wizard, 980 x 720, opened taller than a 768-px
// screen; a geometry saved on a larger monitor came back off-screen at 800 x 600).
#include <QList>
#include <QRect>
#include <QSize>

class QWidget;

namespace cflow::ui {

// `wanted` shrunk to fit `available` less a margin for the window frame and the desktop's panels
// (5% each way), never below `minimum`.
QSize size_within(QSize wanted, const QRect& available, QSize minimum = {});

// `geometry` kept where it is when a screen shows most of it (its title bar included); else
// moved, and shrunk where needed, onto the screen that shows most of it, or onto `fallback` when
// none shows any (a monitor since disconnected).
QRect rect_on_screen(const QRect& geometry, const QList<QRect>& screens, const QRect& fallback);

// Resizes `window` to `wanted` within the available area of the screen it is on.
void resize_within_screen(QWidget* window, QSize wanted);

// Moves (and shrinks) a window whose restored geometry no screen shows back onto one.
void keep_on_screen(QWidget* window);

} // namespace cflow::ui
