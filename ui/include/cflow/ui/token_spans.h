#pragma once
// Which characters of a streamed reply each generated token produced. The engine worker
// sends, with every ~30 ms text batch, one TokenPiece per token (its KV-cache position and
// the UTF-16 length of its text in the batch); the reply's chat card appends them to a
// TokenSpans, which answers "which token wrote character i" when the user clicks the text.
#include <cstdint>
#include <optional>
#include <vector>

#include <QMetaType>

namespace cflow::ui {

struct TokenPiece {
    uint32_t position = 0;    // where the token entered the KV cache (TokenTelemetry::position)
    int32_t utf16Length = 0;  // UTF-16 code units of the batch text it produced; 0 while a
                              // multi-byte character is incomplete (the completing token gets it)
};
using TokenPieces = std::vector<TokenPiece>;

struct TokenSpan {
    int start = 0;  // first UTF-16 code unit in the message's raw text
    int end = 0;    // one past the last
    uint32_t position = 0;
    bool operator==(const TokenSpan&) const = default;
};

class TokenSpans {
public:
    // Records the pieces of a batch of batchLength code units appended to the message at
    // textOffset (the message's length before the batch). Empty pieces are skipped. False
    // when the batch is inconsistent (negative sizes, a piece reaching past the batch, or a
    // batch starting before what is already recorded): nothing past the batch is recorded.
    bool append(int textOffset, int batchLength, const TokenPieces& pieces);
    // The span holding the code unit at offset, if a token produced it.
    std::optional<TokenSpan> at(int offset) const;
    // The first span of the token at position, if this message holds it.
    std::optional<TokenSpan> find(uint32_t position) const;
    const std::vector<TokenSpan>& spans() const { return spans_; }
    bool empty() const { return spans_.empty(); }
    void clear();

private:
    std::vector<TokenSpan> spans_;  // sorted by start, non-overlapping
    int recordedEnd_ = 0;           // end of the last appended batch
};

} // namespace cflow::ui

Q_DECLARE_METATYPE(cflow::ui::TokenPieces)
