#pragma once
// The application icon, painted as vectors at whatever size and device pixel ratio is asked
// for: sharp on high-DPI screens without shipping bitmaps (or the SVG plugin) for each size.
#include <QIcon>

namespace cflow::ui {

QIcon app_icon();

} // namespace cflow::ui
