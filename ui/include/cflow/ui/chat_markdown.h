#pragma once
// What a chat card feeds QTextDocument::setMarkdown, and the fixes its import needs after.
//
// Chat text is written line by line: a model's "line one\nline two" means two lines, which
// Markdown would join into one. chat_markdown() keeps such single line breaks as hard breaks
// (outside code) and puts a "Copy code" link paragraph after every closed fenced code block,
// so each block can be copied on its own. The link's target is copy_code_url(i) for the i-th
// block; the document's copy links are not part of the message (mapping_text() blanks them).
#include <optional>

#include <QString>
#include <QStringList>
#include <QUrl>

class QFont;
class QTextDocument;

namespace cflow::ui {

// copyLabel is the link's text, copyToolTip its title (shown as the link's tooltip).
QString chat_markdown(const QString& text, const QString& copyLabel, const QString& copyToolTip);

QUrl copy_code_url(int blockIndex);
// The block index a copy_code_url() names; nullopt for any other URL.
std::optional<int> copy_code_index(const QUrl& url);

// The code of each fenced block of a document rendered from chat_markdown(), in order: the
// code lines just before each copy link, joined by '\n'.
QStringList code_blocks(const QTextDocument& document);

// Sets fixedFont's family on code spans and code blocks without a size of their own: the
// import (Qt 6.4) fixes them at the text size of the moment, so a later font change (a larger
// application font, a zoom) left code at the old size while the prose followed.
void apply_code_font(QTextDocument& document, const QFont& fixedFont);

// document.toPlainText() with the copy links' characters replaced by spaces: the rendered
// text to align with the message text (RenderedTextMap), which has no such links.
QString mapping_text(const QTextDocument& document);

} // namespace cflow::ui
