#include "cflow/ui/token_spans.h"

#include <algorithm>
#include <limits>

namespace cflow::ui {

bool TokenSpans::append(int textOffset, int batchLength, const TokenPieces& pieces) {
    if (textOffset < recordedEnd_ || batchLength < 0) return false;
    // Overflow-safe: batchLength <= INT_MAX - textOffset.
    if (batchLength > std::numeric_limits<int>::max() - textOffset) return false;
    int start = textOffset;
    const int batchEnd = textOffset + batchLength;
    bool consistent = true;
    for (const TokenPiece& piece : pieces) {
        if (piece.utf16Length < 0 || piece.utf16Length > batchEnd - start) {
            consistent = false;
            break;
        }
        if (piece.utf16Length == 0) continue;
        spans_.push_back({start, start + piece.utf16Length, piece.position});
        start += piece.utf16Length;
    }
    recordedEnd_ = batchEnd;
    return consistent && start == batchEnd;
}

std::optional<TokenSpan> TokenSpans::at(int offset) const {
    // The first span ending after offset is the only one that can hold it.
    const auto it = std::upper_bound(spans_.begin(), spans_.end(), offset,
                                     [](int value, const TokenSpan& span) { return value < span.end; });
    if (it == spans_.end() || offset < it->start) return std::nullopt;
    return *it;
}

std::optional<TokenSpan> TokenSpans::find(uint32_t position) const {
    const auto it = std::find_if(spans_.begin(), spans_.end(), [&](const TokenSpan& s) { return s.position == position; });
    if (it == spans_.end()) return std::nullopt;
    return *it;
}

void TokenSpans::clear() {
    spans_.clear();
    recordedEnd_ = 0;
}

} // namespace cflow::ui
