#pragma once
// Maps the characters of a document rendered from Markdown back to the Markdown source, so
// a click on rendered text can be traced to the raw reply text (and the token that wrote it).
//
// Rendering drops syntax (emphasis markers, heading hashes, list markers, code fences and
// their info strings, link targets, backslash escapes, entity names), collapses whitespace
// into block and line breaks and may add frame markers or object characters, but keeps the
// content characters in source order. The map is a forward alignment: each non-space
// rendered character is matched with the next equal source character, preferring the first
// candidate whose following characters match too (skipping source whitespace and markup),
// which keeps text inside dropped syntax ("cpp" of a fence, the URL of a link) from
// capturing the content after it. Rendered whitespace and characters with no equal source
// character within a bounded lookahead stay unmapped. It is an approximation: a content
// character repeated inside dropped syntax with the same followers can still map there.
#include <utility>
#include <vector>

#include <QString>

namespace cflow::ui {

class RenderedTextMap {
public:
    RenderedTextMap() = default;
    // rendered: QTextDocument::toPlainText() (index = document position); source: the Markdown.
    RenderedTextMap(const QString& rendered, const QString& source);

    // The source offset of the rendered character at renderedOffset; -1 when unmapped.
    int sourceOffset(int renderedOffset) const;
    // [first, last) of the rendered characters mapped into source [sourceStart, sourceEnd);
    // first == last when none are.
    std::pair<int, int> renderedRange(int sourceStart, int sourceEnd) const;
    int renderedLength() const { return static_cast<int>(sourceOf_.size()); }

private:
    std::vector<int> sourceOf_;  // [rendered chars] source offset or -1; increasing where mapped
};

} // namespace cflow::ui
