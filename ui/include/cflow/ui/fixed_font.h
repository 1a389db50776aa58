#pragma once
// The font code and logs are set in: fixed-pitch as measured, not as fontconfig labels it.
//
// QFontDatabase::systemFont(FixedFont) is what fontconfig answers for "monospace"; some common
// families (Noto Mono among them) are monospaced in every glyph yet carry no fontconfig spacing
// flag, so QFontInfo::fixedPitch() says false for them. What matters to a reader is that the
// glyphs line up, so the choice is checked by advances.
#include <QFont>

namespace cflow::ui {

// True when the font's glyphs for a narrow, a wide and a punctuation character (and a few
// more) have one advance, as the font resolves on this machine.
bool is_fixed_pitch_by_metrics(const QFont& font);

// The system's fixed font when it measures fixed-pitch; else the first installed family of a
// short list of well-known monospaced ones that does; else the system's fixed font as it is
// (a machine without any monospaced font still shows text).
QFont fixed_pitch_font();

} // namespace cflow::ui
