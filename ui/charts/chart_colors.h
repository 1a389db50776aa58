#pragma once
// Internal to the inspector charts: colours shared by panels that show the same quantity, so
// "compute" is the same blue in the timeline and in the per-token bars.
#include <array>

#include <QColor>

namespace cflow::ui::chart_colors {

inline const QColor kCompute(0x4e, 0x79, 0xa7);
inline const QColor kStall(0xe1, 0x57, 0x59);
inline const QColor kMarker(0x59, 0xa1, 0x4f);
inline const QColor kGrammar(0xb0, 0x7a, 0xa1);  // a token sampled under a grammar's mask

// Weight streams in Stream order: attention, dense, experts, router, vocab.
inline const std::array<QColor, 5> kStreams = {QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b), QColor(0xe1, 0x57, 0x59),
                                               QColor(0x76, 0xb7, 0xb2), QColor(0x59, 0xa1, 0x4f)};
inline const QColor kAchieved(0x6a, 0x3d, 0x9a);      // achieved GB/s line
inline const QColor kSpeedOfLight(0x33, 0x33, 0x33);  // measured machine read bandwidth

} // namespace cflow::ui::chart_colors
