#pragma once
// Internal to the inspector charts: colours shared by panels that show the same quantity, so
// "compute" is the same blue in the timeline and in the per-token bars.
#include <QColor>

namespace cflow::ui::chart_colors {

inline const QColor kCompute(0x4e, 0x79, 0xa7);
inline const QColor kStall(0xe1, 0x57, 0x59);
inline const QColor kMarker(0x59, 0xa1, 0x4f);

} // namespace cflow::ui::chart_colors
