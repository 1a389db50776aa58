// SentencePiece-BPE encoding as llama.cpp's llm_tokenizer_spm does it: the text is split into UTF-8
// characters, adjacent pairs whose concatenation is a vocabulary piece are merged highest score first
// (ties: leftmost); a final character that is not a piece falls back to <0xNN> byte tokens, then to the
// single-byte piece, then to the unknown token.
#include "tokenizer/tokenizer_spm.h"

#include <queue>
#include <utility>

namespace cflow::tok {

namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581 "▁", SentencePiece's space

struct SpmSymbol {
    int32_t prev;
    int32_t next;
    size_t offset;  // into the escaped text
    size_t bytes;   // 0 once merged into its left neighbour
};

struct SpmBigram {
    int32_t left;
    int32_t right;
    float score;
    size_t bytes;
};

struct SpmBigramOrder {
    bool operator()(const SpmBigram& a, const SpmBigram& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

class SpmSession {
public:
    explicit SpmSession(const Vocab& vocab) : vocab_(vocab) {}

    // Reusable: each call starts from a clean state but keeps the buffers' capacity.
    void tokenize(std::string_view text, std::vector<int32_t>& output) {
        text_ = text;
        symbols_.clear();
        for (size_t offset = 0; offset < text_.size();) {
            const size_t len = std::min(utf8_lead_length(static_cast<uint8_t>(text_[offset])), text_.size() - offset);
            const auto index = static_cast<int32_t>(symbols_.size());
            symbols_.push_back(SpmSymbol{index - 1, offset + len == text_.size() ? -1 : index + 1, offset, len});
            offset += len;
        }
        for (int32_t i = 1; i < static_cast<int32_t>(symbols_.size()); ++i) try_add_bigram(i - 1, i);

        while (!queue_.empty()) {
            const SpmBigram bigram = queue_.top();
            queue_.pop();
            SpmSymbol& left = symbols_[static_cast<size_t>(bigram.left)];
            SpmSymbol& right = symbols_[static_cast<size_t>(bigram.right)];
            // Stale entry: one side was merged since this pair was queued.
            if (left.bytes == 0 || right.bytes == 0 || left.bytes + right.bytes != bigram.bytes) continue;
            left.bytes += right.bytes;
            right.bytes = 0;
            left.next = right.next;
            if (right.next >= 0) symbols_[static_cast<size_t>(right.next)].prev = bigram.left;
            try_add_bigram(left.prev, bigram.left);
            try_add_bigram(bigram.left, left.next);
        }
        if (symbols_.empty()) return;
        for (int32_t i = 0; i != -1; i = symbols_[static_cast<size_t>(i)].next) resegment(i, output);
    }

private:
    std::string_view symbol_text(const SpmSymbol& symbol) const { return text_.substr(symbol.offset, symbol.bytes); }

    void try_add_bigram(int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const SpmSymbol& a = symbols_[static_cast<size_t>(left)];
        const SpmSymbol& b = symbols_[static_cast<size_t>(right)];
        const std::string_view merged = text_.substr(a.offset, a.bytes + b.bytes);
        const int32_t id = vocab_.find(merged);
        if (id < 0) return;
        queue_.push(SpmBigram{left, right, vocab_.scores[static_cast<size_t>(id)], merged.size()});
    }

    // A final symbol is a vocabulary piece (every merge produced one) or a single character that is not;
    // llama.cpp's rev_merge re-split therefore never applies, and the character falls back to byte tokens.
    void resegment(int32_t index, std::vector<int32_t>& output) const {
        const std::string_view text = symbol_text(symbols_[static_cast<size_t>(index)]);
        if (const int32_t id = vocab_.find(text); id >= 0) {
            output.push_back(id);
            return;
        }
        for (char byte : text) output.push_back(byte_token(static_cast<uint8_t>(byte)));
    }

    int32_t byte_token(uint8_t byte) const {
        static constexpr char kHex[] = "0123456789ABCDEF";
        const char name[6] = {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
        if (const int32_t id = vocab_.find(std::string_view(name, 6)); id >= 0) return id;
        const char raw = static_cast<char>(byte);
        if (const int32_t id = vocab_.find(std::string_view(&raw, 1)); id >= 0) return id;
        return vocab_.unk;
    }

    const Vocab& vocab_;
    std::string_view text_;
    std::vector<SpmSymbol> symbols_;
    std::priority_queue<SpmBigram, std::vector<SpmBigram>, SpmBigramOrder> queue_;  // empty between calls
};

class SpmTokenizer final : public Tokenizer {
public:
    explicit SpmTokenizer(Vocab vocab) : vocab_(std::move(vocab)) {
        // Words are independent when no piece continues a word into a following "▁": then no merge can
        // cross a "▁" that follows another character, and the merge loop may run word by word (small heaps
        // instead of one over the whole text) with the same result.
        words_independent_ = true;
        for (const std::string& piece : vocab_.pieces) {
            for (size_t at = piece.find(kSpaceMark, 1); at != std::string::npos; at = piece.find(kSpaceMark, at + 1)) {
                if (at < kSpaceMark.size() || piece.compare(at - kSpaceMark.size(), kSpaceMark.size(), kSpaceMark) != 0) {
                    words_independent_ = false;
                    break;
                }
            }
            if (!words_independent_) break;
        }
    }

    TokenizerKind kind() const override { return TokenizerKind::Spm; }

    std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const override {
        std::vector<int32_t> output;
        if (add_special && vocab_.add_bos && vocab_.bos >= 0) output.push_back(vocab_.bos);
        bool prev_special = true;  // the dummy prefix goes before the first text and after special tokens
        std::string escaped;
        SpmSession session(vocab_);
        for (const Fragment& fragment : split_special(text, vocab_, parse_special)) {
            if (fragment.token >= 0) {
                output.push_back(fragment.token);
                prev_special = true;
                continue;
            }
            escaped.clear();
            if (vocab_.add_space_prefix && prev_special) escaped += kSpaceMark;
            for (char c : fragment.text) {
                if (c == ' ')
                    escaped += kSpaceMark;
                else
                    escaped.push_back(c);
            }
            tokenize_escaped(escaped, session, output);
            prev_special = false;
        }
        if (add_special && vocab_.add_eos && vocab_.eos >= 0) output.push_back(vocab_.eos);
        return output;
    }

    std::string token_bytes(int32_t id) const override {
        if (!vocab_.valid(id)) return {};
        const std::string& text = vocab_.pieces[static_cast<size_t>(id)];
        switch (vocab_.types[static_cast<size_t>(id)]) {
            case TokenType::Byte: return byte_token_value(text);
            case TokenType::Normal:
            case TokenType::Undefined: return unescape(text);
            default: return text;  // control / user-defined / unknown / unused: the literal string
        }
    }

    const std::string& piece(int32_t id) const override { return vocab_.piece(id); }
    size_t vocab_size() const override { return vocab_.pieces.size(); }
    int32_t bos_id() const override { return vocab_.bos; }
    int32_t eos_id() const override { return vocab_.eos; }
    bool is_control(int32_t id) const override { return vocab_.is_control(id); }
    bool strips_first_space() const override { return vocab_.add_space_prefix; }

    std::string decode(const std::vector<int32_t>& ids) const override {
        return decode_tokens(vocab_, ids, strips_first_space(), [this](int32_t id) { return token_bytes(id); });
    }

private:
    void tokenize_escaped(std::string_view escaped, SpmSession& session, std::vector<int32_t>& output) const {
        // Ill-formed UTF-8 changes where llama.cpp's characters start, so such text takes the whole-text path.
        if (!words_independent_ || !is_valid_utf8(escaped)) {
            session.tokenize(escaped, output);
            return;
        }
        size_t start = 0;
        for (size_t at = escaped.find(kSpaceMark, 1); at != std::string_view::npos; at = escaped.find(kSpaceMark, at + kSpaceMark.size())) {
            if (at >= start + kSpaceMark.size() && escaped.compare(at - kSpaceMark.size(), kSpaceMark.size(), kSpaceMark) == 0)
                continue;  // inside a run of "▁": runs merge among themselves
            session.tokenize(escaped.substr(start, at - start), output);
            start = at;
        }
        session.tokenize(escaped.substr(start), output);
    }

    static std::string unescape(const std::string& text) {
        std::string out;
        out.reserve(text.size());
        for (size_t pos = 0; pos < text.size();) {
            if (text.compare(pos, kSpaceMark.size(), kSpaceMark) == 0) {
                out.push_back(' ');
                pos += kSpaceMark.size();
            } else {
                out.push_back(text[pos++]);
            }
        }
        return out;
    }

    Vocab vocab_;
    bool words_independent_ = false;
};

} // namespace

std::unique_ptr<Tokenizer> make_spm_tokenizer(Vocab vocab) { return std::make_unique<SpmTokenizer>(std::move(vocab)); }

} // namespace cflow::tok
