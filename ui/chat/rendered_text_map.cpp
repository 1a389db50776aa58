#include "cflow/ui/rendered_text_map.h"

#include <algorithm>

namespace cflow::ui {
namespace {

// How far past the last match a rendered character is looked for: longer than a link
// target or a fence's info string, short enough that a character rendering added (an
// object replacement, a frame marker) cannot pull the alignment far ahead.
constexpr int kLookaheadChars = 1024;
constexpr int kConfirmChars = 3;     // following characters that must agree to prefer a candidate
constexpr int kMaxSkippedChars = 16;  // source whitespace / markup skipped between two of them

// Whitespace, block/line breaks and what QTextDocument adds for frames and objects.
bool is_blank_char(QChar c) {
    return c.isSpace() || c.unicode() == 0xFDD0 || c.unicode() == 0xFDD1 || c == QChar::ObjectReplacementCharacter;
}

// Characters Markdown syntax is made of; rendering usually drops them.
bool is_markup(QChar c) {
    switch (c.unicode()) {
    case '*': case '_': case '`': case '#': case '>': case '~': case '|': case '[': case ']':
    case '(': case ')': case '\\': case '!': case '-': case '+': case '=': case ':':
        return true;
    default:
        return false;
    }
}

// Whether the kConfirmChars non-blank rendered characters after r match the source after s,
// skipping source whitespace and markup that differ from them.
bool followers_agree(const QString& rendered, int r, const QString& source, int s) {
    int ri = r + 1;
    int si = s + 1;
    for (int matched = 0; matched < kConfirmChars;) {
        while (ri < rendered.size() && is_blank_char(rendered[ri])) ++ri;
        if (ri >= rendered.size()) return true;  // the rendered text ends here: nothing contradicts
        int skipped = 0;
        while (si < source.size() && source[si] != rendered[ri] && (source[si].isSpace() || is_markup(source[si])) &&
               skipped < kMaxSkippedChars) {
            ++si;
            ++skipped;
        }
        if (si >= source.size() || source[si] != rendered[ri]) return false;
        ++ri;
        ++si;
        ++matched;
    }
    return true;
}

} // namespace

RenderedTextMap::RenderedTextMap(const QString& rendered, const QString& source)
    : sourceOf_(static_cast<size_t>(rendered.size()), -1) {
    int next = 0;  // first source character not matched yet
    for (int r = 0; r < rendered.size(); ++r) {
        const QChar c = rendered[r];
        if (is_blank_char(c)) continue;
        const int limit = static_cast<int>(std::min<qsizetype>(source.size(), qsizetype(next) + kLookaheadChars));
        int first = -1;
        int chosen = -1;
        for (int s = next; s < limit; ++s) {
            if (source[s] != c) continue;
            if (first < 0) first = s;
            if (followers_agree(rendered, r, source, s)) {
                chosen = s;
                break;
            }
        }
        if (chosen < 0) chosen = first;
        if (chosen < 0) continue;  // rendering added it, or it is too far away to trust
        sourceOf_[static_cast<size_t>(r)] = chosen;
        next = chosen + 1;
    }
}

int RenderedTextMap::sourceOffset(int renderedOffset) const {
    if (renderedOffset < 0 || renderedOffset >= renderedLength()) return -1;
    return sourceOf_[static_cast<size_t>(renderedOffset)];
}

std::pair<int, int> RenderedTextMap::renderedRange(int sourceStart, int sourceEnd) const {
    int first = -1;
    int last = -1;
    for (int r = 0; r < renderedLength(); ++r) {
        const int s = sourceOf_[static_cast<size_t>(r)];
        if (s < 0 || s < sourceStart) continue;  // unmapped, or before the range
        if (s >= sourceEnd) break;                // mapped offsets only increase
        if (first < 0) first = r;
        last = r + 1;
    }
    if (first < 0) return {0, 0};
    return {first, last};
}

} // namespace cflow::ui
