#include "cflow/ui/fixed_font.h"

#include <QFontDatabase>
#include <QFontMetricsF>
#include <QString>
#include <QStringList>

namespace cflow::ui {

bool is_fixed_pitch_by_metrics(const QFont& font) {
    const QFontMetricsF metrics(font);
    // Narrow, wide, punctuation, digit and space: a proportional font differs on the first two.
    const qreal reference = metrics.horizontalAdvance(QLatin1Char('M'));
    if (reference <= 0) return false;
    for (const QChar glyph : QStringLiteral("il.W0 m_")) {
        if (qAbs(metrics.horizontalAdvance(glyph) - reference) > 0.01 * reference) return false;
    }
    return true;
}

QFont fixed_pitch_font() {
    const QFont system = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    if (is_fixed_pitch_by_metrics(system)) return system;
    static const char* const kKnownMonospaced[] = {
        "DejaVu Sans Mono", "Noto Sans Mono", "Noto Mono",     "Liberation Mono", "Cascadia Mono",
        "Consolas",         "Courier New",    "Ubuntu Mono",   "Hack",            "Source Code Pro"};
    const QStringList installed = QFontDatabase::families();
    for (const char* family : kKnownMonospaced) {
        const QString name = QString::fromLatin1(family);
        if (!installed.contains(name, Qt::CaseInsensitive)) continue;
        QFont candidate = system;
        candidate.setFamilies({name});
        candidate.setStyleHint(QFont::Monospace);
        if (is_fixed_pitch_by_metrics(candidate)) return candidate;
    }
    return system;
}

} // namespace cflow::ui
