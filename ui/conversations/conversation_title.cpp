#include "cflow/ui/conversation_title.h"

#include <QRegularExpression>
#include <QStringList>

namespace cflow::ui {
namespace {

const QChar kEllipsis(0x2026);

// Block syntax at a line's start: quote markers, then a heading's hashes or a list marker.
QString strip_line_markers(const QString& line) {
    static const QRegularExpression markers(
        QStringLiteral("^\\s*(?:>\\s*)*(?:#{1,6}(?=\\s|$)|[-*+](?=\\s)|\\d{1,9}[.)](?=\\s))?\\s*"));
    static const QRegularExpression closingHashes(QStringLiteral("\\s+#+\\s*$"));
    static const QRegularExpression fence(QStringLiteral("^\\s*(?:>\\s*)*(?:`{3,}|~{3,}).*$"));
    if (fence.match(line).hasMatch()) return {};  // a code fence and its info string
    QString text = line;
    text.remove(markers);
    text.remove(closingHashes);
    return text;
}

QString strip_inline_syntax(QString text) {
    // ![alt](url) and [text](url) keep their text; <https://...> autolinks their address.
    static const QRegularExpression link(QStringLiteral("!?\\[([^\\]]*)\\]\\([^)]*\\)"));
    static const QRegularExpression autolink(QStringLiteral("<((?:https?|mailto):[^>]*)>"));
    // Emphasis markers: any run of * or ~~, and _ runs not inside a word (snake_case stays).
    static const QRegularExpression stars(QStringLiteral("\\*+|~~"));
    static const QRegularExpression underscores(QStringLiteral("(?<![\\p{L}\\p{N}])_+|_+(?![\\p{L}\\p{N}])"));
    // A backslash escape drops its backslash first; the character then counts as markup.
    static const QRegularExpression escape(QStringLiteral("\\\\([!-/:-@\\[-`{-~])"));
    text.replace(escape, QStringLiteral("\\1"));
    text.replace(link, QStringLiteral("\\1"));
    text.replace(autolink, QStringLiteral("\\1"));
    text.remove(QLatin1Char('`'));
    text.remove(stars);
    text.remove(underscores);
    return text;
}

} // namespace

QString plain_title(const QString& markdownText, int maxChars) {
    QStringList lines = markdownText.split(QLatin1Char('\n'));
    for (QString& line : lines) line = strip_line_markers(line);
    QString text = strip_inline_syntax(lines.join(QLatin1Char(' '))).simplified();
    if (maxChars > 0 && text.size() > maxChars) text = text.left(maxChars - 1).trimmed() + kEllipsis;
    return text;
}

} // namespace cflow::ui
