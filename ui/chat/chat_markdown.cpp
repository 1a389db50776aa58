#include "cflow/ui/chat_markdown.h"

#include <vector>

#include <QFont>
#include <QRegularExpression>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextFragment>

namespace cflow::ui {
namespace {

const QString kCopyCodeScheme = QStringLiteral("cflow-copy-code");
constexpr int kMinFenceChars = 3;
constexpr int kIndentedCodeColumns = 4;  // CommonMark: a line this far in after a blank line is code

// The container prefix of a line: block-quote markers and indentation.
qsizetype container_prefix_length(const QString& line) {
    qsizetype i = 0;
    while (i < line.size() && (line[i] == u' ' || line[i] == u'\t' || line[i] == u'>')) ++i;
    return i;
}

// A line of only quote markers and whitespace separates paragraphs like an empty one.
bool is_blank(const QString& line) { return container_prefix_length(line) == line.size(); }

int indent_columns(const QString& line) {
    int columns = 0;
    for (QChar c : line) {
        if (c == u' ') ++columns;
        else if (c == u'\t') columns += kIndentedCodeColumns;
        else break;
    }
    return columns;
}

struct Fence {
    QChar marker;
    qsizetype length = 0;
};

// The fence a line opens: after the container prefix and an optional list marker, three or
// more backticks or tildes; a backtick fence's info string has no backtick (```x``` is a
// code span, not a fence).
std::optional<Fence> opening_fence(const QString& line) {
    static const QRegularExpression opener(QStringLiteral("^[ \\t>]*(?:(?:[-*+]|\\d{1,9}[.)])[ \\t]+)?[ \\t>]*"
                                                          "(`{3,}|~{3,})(.*)$"));
    const QRegularExpressionMatch m = opener.match(line);
    if (!m.hasMatch()) return std::nullopt;
    const QString run = m.captured(1);
    if (run.front() == u'`' && m.captured(2).contains(u'`')) return std::nullopt;
    return Fence{run.front(), run.size()};
}

bool closes(const Fence& fence, const QString& line) {
    const QString rest = line.mid(container_prefix_length(line));
    qsizetype run = 0;
    while (run < rest.size() && rest[run] == fence.marker) ++run;
    return run >= fence.length && run >= kMinFenceChars && rest.mid(run).trimmed().isEmpty();
}

bool ends_with_hard_break(const QString& line) {
    return line.endsWith(QLatin1String("  ")) || line.endsWith(u'\\');
}

bool is_code_line(const QTextBlock& block) { return block.blockFormat().hasProperty(QTextFormat::BlockCodeFence); }

// The copy link a block consists of, if it is one.
std::optional<int> copy_link_in(const QTextBlock& block) {
    for (auto it = block.begin(); !it.atEnd(); ++it)
        if (const auto index = copy_code_index(QUrl(it.fragment().charFormat().anchorHref()))) return index;
    return std::nullopt;
}

} // namespace

QString chat_markdown(const QString& text, const QString& copyLabel, const QString& copyToolTip) {
    QStringList lines = text.split(u'\n');
    QStringList out;
    out.reserve(lines.size());
    std::optional<Fence> open;
    bool indentedCode = false;
    bool previousBlank = true;
    int copyLinks = 0;
    for (qsizetype i = 0; i < lines.size(); ++i) {
        QString line = lines[i];
        // CRLF text: the break goes before the carriage return.
        const bool cr = line.endsWith(u'\r');
        if (cr) line.chop(1);
        const auto emit_line = [&](const QString& l) { out << (cr ? l + u'\r' : l); };
        if (open) {
            emit_line(line);
            if (!closes(*open, line)) continue;
            open.reset();
            // The link stays in the fence's container (list item, quote); the blank line
            // after it keeps a following line from joining the link's paragraph.
            QString prefix = line.left(container_prefix_length(line));
            emit_line(prefix + QStringLiteral("[%1](%2 \"%3\")")
                                   .arg(copyLabel, copy_code_url(copyLinks++).toString(), copyToolTip));
            emit_line(prefix.remove(u' ').remove(u'\t'));
            previousBlank = true;
            continue;
        }
        if ((open = opening_fence(line))) {
            emit_line(line);
            continue;
        }
        const bool blank = is_blank(line);
        if (blank) indentedCode = false;
        else if (previousBlank && indent_columns(line) >= kIndentedCodeColumns) indentedCode = true;
        previousBlank = blank;
        // Two trailing spaces: a hard break inside a paragraph, ignored where a block ends.
        const bool nextJoins = i + 1 < lines.size() && !is_blank(lines[i + 1]);
        if (!blank && !indentedCode && nextJoins && !ends_with_hard_break(line)) line += QLatin1String("  ");
        emit_line(line);
    }
    return out.join(u'\n');
}

QUrl copy_code_url(int blockIndex) {
    QUrl url;
    url.setScheme(kCopyCodeScheme);
    url.setPath(QString::number(blockIndex));
    return url;
}

std::optional<int> copy_code_index(const QUrl& url) {
    if (url.scheme() != kCopyCodeScheme) return std::nullopt;
    bool ok = false;
    const int index = url.path().toInt(&ok);
    if (!ok || index < 0) return std::nullopt;
    return index;
}

QStringList code_blocks(const QTextDocument& document) {
    QStringList blocks;
    for (QTextBlock block = document.begin(); block.isValid(); block = block.next()) {
        if (!copy_link_in(block)) continue;
        QStringList lines;
        for (QTextBlock code = block.previous(); code.isValid() && is_code_line(code); code = code.previous())
            lines.prepend(code.text());
        blocks << lines.join(u'\n');
    }
    return blocks;
}

void apply_code_font(QTextDocument& document, const QFont& fixedFont) {
    // Ranges first: setting formats splits and joins the fragments being walked.
    struct Span {
        int first;
        int last;
        QTextCharFormat format;
    };
    std::vector<Span> spans;
    for (QTextBlock block = document.begin(); block.isValid(); block = block.next()) {
        const bool codeBlock = block.blockFormat().hasProperty(QTextFormat::BlockCodeLanguage);
        for (auto it = block.begin(); !it.atEnd(); ++it) {
            const QTextFragment fragment = it.fragment();
            if (codeBlock || fragment.charFormat().fontFixedPitch())
                spans.push_back({fragment.position(), fragment.position() + fragment.length(), fragment.charFormat()});
        }
    }
    QTextCursor cursor(&document);
    for (auto& [first, last, format] : spans) {
        format.setFontFamilies({fixedFont.family()});
        format.setFontStyleHint(QFont::Monospace);
        format.setFontFixedPitch(true);
        // Without a size of its own, code follows the document's default font (the card's).
        format.clearProperty(QTextFormat::FontPointSize);
        format.clearProperty(QTextFormat::FontPixelSize);
        cursor.setPosition(first);
        cursor.setPosition(last, QTextCursor::KeepAnchor);
        cursor.setCharFormat(format);
    }
}

QString mapping_text(const QTextDocument& document) {
    QString text = document.toPlainText();
    for (QTextBlock block = document.begin(); block.isValid(); block = block.next())
        for (auto it = block.begin(); !it.atEnd(); ++it) {
            const QTextFragment fragment = it.fragment();
            if (!copy_code_index(QUrl(fragment.charFormat().anchorHref()))) continue;
            for (int p = fragment.position(); p < fragment.position() + fragment.length() && p < text.size(); ++p)
                text[p] = u' ';
        }
    return text;
}

} // namespace cflow::ui
