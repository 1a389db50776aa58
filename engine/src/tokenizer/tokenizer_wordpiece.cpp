// WordPiece as Hugging Face's BertTokenizer does it (do_lower_case, strip_accents, tokenize_chinese_chars):
// drop NUL / U+FFFD / control characters, lowercase + NFD + drop combining marks, split on whitespace,
// isolate punctuation and CJK ideographs, then per word take the longest vocabulary piece from the left,
// repeatedly; a word with an unmatched remainder (or over 100 characters) becomes the unknown token.
//
// Vocabulary spelling: llama.cpp's GGUF conversion writes word-initial pieces as "▁word" and continuations
// bare ("ing"); Hugging Face's vocab.txt writes "word" and "##ing". Both are recognised.
#include "tokenizer/tokenizer_wordpiece.h"

#include <string>
#include <utility>
#include <vector>

namespace cflow::tok {

namespace {

constexpr std::string_view kWordMark = "\xE2\x96\x81";  // U+2581 "▁"
constexpr std::string_view kContinuationMark = "##";
constexpr size_t kMaxWordChars = 100;  // HF WordPiece max_input_chars_per_word

bool is_bert_whitespace(uint32_t cp) { return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || is_space_separator(cp); }

// BERT _is_control: Cc/Cf except the whitespace controls.
bool is_bert_control(uint32_t cp) { return cp != '\t' && cp != '\n' && cp != '\r' && is_control_char(cp); }

// BERT _is_punctuation: every non-alphanumeric printable ASCII character, plus Unicode P*.
bool is_bert_punctuation(uint32_t cp) {
    if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126)) return true;
    return is_punctuation(cp);
}

// BERT _is_chinese_char: the CJK Unified Ideograph blocks.
bool is_cjk(uint32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// Normalized words of the text, each as its codepoints.
std::vector<std::vector<uint32_t>> basic_tokenize(std::string_view text) {
    std::vector<std::vector<uint32_t>> words(1);
    std::vector<uint32_t> folded;
    const auto end_word = [&] {
        if (!words.back().empty()) words.emplace_back();
    };
    for (uint32_t cp : utf8_to_cpts(text)) {
        if (cp == 0 || cp == 0xFFFD || is_bert_control(cp)) continue;
        if (is_bert_whitespace(cp)) {
            end_word();
            continue;
        }
        if (is_cjk(cp)) {
            end_word();
            words.back().push_back(cp);
            words.emplace_back();
            continue;
        }
        folded.clear();
        bert_fold(cp, folded);
        for (uint32_t f : folded) {
            if (is_bert_punctuation(f)) {
                end_word();
                words.back().push_back(f);
                words.emplace_back();
            } else {
                words.back().push_back(f);
            }
        }
    }
    if (words.back().empty()) words.pop_back();
    return words;
}

class WordPieceTokenizer final : public Tokenizer {
public:
    explicit WordPieceTokenizer(Vocab vocab) : vocab_(std::move(vocab)) {
        for (const std::string& piece : vocab_.pieces) {
            if (piece.size() > kWordMark.size() && piece.compare(0, kWordMark.size(), kWordMark) == 0) {
                word_mark_ = true;
                break;
            }
        }
        for (const std::string& piece : vocab_.pieces) max_piece_bytes_ = std::max(max_piece_bytes_, piece.size());
    }

    TokenizerKind kind() const override { return TokenizerKind::WordPiece; }

    std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const override {
        std::vector<int32_t> output;
        if (add_special && vocab_.add_bos && vocab_.bos >= 0) output.push_back(vocab_.bos);
        for (const Fragment& fragment : split_special(text, vocab_, parse_special)) {
            if (fragment.token >= 0) {
                output.push_back(fragment.token);
                continue;
            }
            for (const auto& word : basic_tokenize(fragment.text)) encode_word(word, output);
        }
        if (add_special && vocab_.add_eos && vocab_.eos >= 0) output.push_back(vocab_.eos);
        return output;
    }

    std::string token_bytes(int32_t id) const override {
        if (!vocab_.valid(id)) return {};
        const std::string& text = vocab_.pieces[static_cast<size_t>(id)];
        if (vocab_.types[static_cast<size_t>(id)] != TokenType::Normal) return text;
        const auto spaced = [&](size_t skip) {
            std::string out(1, ' ');  // built by append: GCC 12 misreports " " + std::string as overlapping
            out.append(text, skip, std::string::npos);
            return out;
        };
        if (word_mark_) {
            if (text.compare(0, kWordMark.size(), kWordMark) == 0) return spaced(kWordMark.size());
            return text;
        }
        if (text.compare(0, kContinuationMark.size(), kContinuationMark) == 0) return text.substr(kContinuationMark.size());
        return spaced(0);
    }

    const std::string& piece(int32_t id) const override { return vocab_.piece(id); }
    size_t vocab_size() const override { return vocab_.pieces.size(); }
    int32_t bos_id() const override { return vocab_.bos; }
    int32_t eos_id() const override { return vocab_.eos; }
    bool is_control(int32_t id) const override { return vocab_.is_control(id); }
    bool strips_first_space() const override { return true; }

    std::string decode(const std::vector<int32_t>& ids) const override {
        return decode_tokens(vocab_, ids, true, [this](int32_t id) { return token_bytes(id); });
    }

private:
    void encode_word(const std::vector<uint32_t>& word, std::vector<int32_t>& output) const {
        if (word.size() > kMaxWordChars) {
            if (vocab_.unk >= 0) output.push_back(vocab_.unk);
            return;
        }
        // Character start offsets in the UTF-8 form, so candidate pieces end on character boundaries.
        std::string utf8;
        std::vector<size_t> starts;  // [chars + 1]
        for (uint32_t cp : word) {
            starts.push_back(utf8.size());
            append_utf8(utf8, cp);
        }
        starts.push_back(utf8.size());

        const size_t first_output = output.size();
        std::string candidate;
        size_t begin = 0;  // character index
        while (begin < word.size()) {
            bool matched = false;
            for (size_t end = word.size(); end > begin; --end) {
                const size_t bytes = starts[end] - starts[begin];
                if (bytes > max_piece_bytes_) continue;
                candidate.clear();
                if (begin == 0 && word_mark_) candidate += kWordMark;
                if (begin > 0 && !word_mark_) candidate += kContinuationMark;
                candidate.append(utf8, starts[begin], bytes);
                if (const int32_t id = vocab_.find(candidate); id >= 0) {
                    output.push_back(id);
                    begin = end;
                    matched = true;
                    break;
                }
            }
            if (!matched) {
                output.resize(first_output);
                if (vocab_.unk >= 0) output.push_back(vocab_.unk);
                return;
            }
        }
    }

    Vocab vocab_;
    bool word_mark_ = false;      // GGUF spelling ("▁word" / "ing") rather than HF's ("word" / "##ing")
    size_t max_piece_bytes_ = 0;  // no candidate longer than this can match
};

} // namespace

std::unique_ptr<Tokenizer> make_wordpiece_tokenizer(Vocab vocab) {
    return std::make_unique<WordPieceTokenizer>(std::move(vocab));
}

} // namespace cflow::tok
