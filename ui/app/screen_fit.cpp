#include "cflow/ui/screen_fit.h"

#include <QGuiApplication>
#include <QScreen>
#include <QWidget>

#include <algorithm>

namespace cflow::ui {
namespace {

constexpr int kTitleBarPx = 32;  // the part of a window the user drags it by

long long area(const QRect& r) { return r.isEmpty() ? 0 : (long long)r.width() * r.height(); }

QRect available_area(const QWidget* window) {
    const QScreen* screen = window->screen() ? window->screen() : QGuiApplication::primaryScreen();
    return screen ? screen->availableGeometry() : QRect();
}

} // namespace

QSize size_within(QSize wanted, const QRect& available, QSize minimum) {
    if (available.isEmpty()) return wanted.expandedTo(minimum);
    const QSize room(available.width() * 95 / 100, available.height() * 95 / 100);
    return wanted.boundedTo(room).expandedTo(minimum);
}

QRect rect_on_screen(const QRect& geometry, const QList<QRect>& screens, const QRect& fallback) {
    const QRect title_bar(geometry.topLeft(), QSize(geometry.width(), kTitleBarPx));
    QRect best = fallback;
    long long best_shown = 0;
    for (const QRect& screen : screens) {
        const long long shown = area(screen.intersected(geometry));
        if (shown > best_shown) {
            best_shown = shown;
            best = screen;
        }
    }
    const bool title_visible = std::any_of(screens.begin(), screens.end(), [&](const QRect& screen) {
        return area(screen.intersected(title_bar)) * 2 >= area(title_bar);
    });
    if (title_visible && best_shown * 2 >= area(geometry)) return geometry;
    if (best.isEmpty()) return geometry;
    const QSize size = geometry.size().boundedTo(best.size());
    const int x = std::clamp(geometry.x(), best.left(), best.left() + best.width() - size.width());
    const int y = std::clamp(geometry.y(), best.top(), best.top() + best.height() - size.height());
    return QRect(QPoint(x, y), size);
}

void resize_within_screen(QWidget* window, QSize wanted) {
    window->resize(size_within(wanted, available_area(window), window->minimumSize()));
}

void keep_on_screen(QWidget* window) {
    QList<QRect> screens;
    for (const QScreen* screen : QGuiApplication::screens()) screens.append(screen->availableGeometry());
    const QScreen* primary = QGuiApplication::primaryScreen();
    const QRect fallback = primary ? primary->availableGeometry() : QRect();
    const QRect placed = rect_on_screen(window->frameGeometry(), screens, fallback);
    if (placed == window->frameGeometry()) return;
    const QSize frame_extra = window->frameGeometry().size() - window->geometry().size();
    window->resize(placed.size() - frame_extra);
    window->move(placed.topLeft());
}

} // namespace cflow::ui
