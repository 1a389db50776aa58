// Byte-level BPE. Text is split by the family's pre-tokenizer regexes (each regex splits every piece
// the previous one produced into matches and the gaps between them, as llama.cpp's unicode_regex_split
// does), every piece's bytes are mapped to GPT-2's printable stand-ins, and adjacent symbols are merged
// lowest merge rank first through a priority queue: O(n log n) per piece.
#include "tokenizer/tokenizer_bpe.h"

#ifdef CFLOW_HAVE_PCRE2
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#endif

#include <algorithm>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cflow::tok {

#ifndef CFLOW_HAVE_PCRE2

Result<std::unique_ptr<Tokenizer>> make_bpe_tokenizer(Vocab, const Metadata&) {
    return make_error(ErrorKind::Unsupported, "tokenizer: byte-level BPE needs PCRE2, which this build lacks");
}

#else

namespace {

// Pre-tokenizer regexes per tokenizer.ggml.pre, copied from llama.cpp (llama-vocab.cpp, llm_tokenizer_bpe).
// Non-ASCII characters are written as \x{...}: several in the DeepSeek class (U+1F7D, U+1FBE, U+2126,
// U+212A, ...) have singleton canonical decompositions, so a literal copy is silently changed by any
// editor or tool that normalizes to NFC.
constexpr const char* kGpt2Regex = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
constexpr const char* kLlama3Regex =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* kQwen2Regex =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// o200k (GPT-4o, gpt-oss): tokenizer.json's own regex. llama.cpp rewrites its \p{Lu}/\p{Ll}
// classes as ASCII-case lookaheads for its own regex engine; PCRE2 takes the original.
constexpr const char* kGpt4oRegex =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

struct PreTokenizer {
    std::vector<const char*> regexes;
    bool ignore_merges = false;  // a piece that is itself a token is taken whole (Llama 3)
};

bool pre_tokenizer_for(const std::string& pre, PreTokenizer& out) {
    const auto is_any = [&](std::initializer_list<const char*> names) {
        for (const char* name : names)
            if (pre == name) return true;
        return false;
    };
    if (pre.empty() || pre == "default") {
        out.regexes = {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2Regex, "\\p{N}+", "[0-9][0-9][0-9]"};
    } else if (is_any({"gpt-2", "gpt2" /* formats' HF reader names plain ByteLevel so */, "phi-2", "mpt", "olmo", "jais",
                       "trillion", "roberta-bpe", "jina-es", "jina-de", "gigachat", "jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code"})) {
        out.regexes = {kGpt2Regex};
    } else if (is_any({"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"})) {
        out.regexes = {"\\p{N}", kGpt2Regex};
    } else if (pre == "falcon") {
        out.regexes = {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2Regex, "[0-9][0-9][0-9]"};
    } else if (pre == "deepseek-llm") {
        out.regexes = {
            "[\r\n]",
            "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}"
            "\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}"
            "\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}"
            "\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}"
            "\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}"
            "\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}"
            "\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}"
            "\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}"
            "\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}"
            "\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}"
            "\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}"
            "\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}"
            "\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}"
            "\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}"
            "\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}"
            "\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+",
            "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+",
            "\\s+$",
            "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+",
            "\\p{N}+",
        };
    } else if (pre == "deepseek-coder") {
        out.regexes = {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+", "\\p{N}"};
    } else if (is_any({"llama3", "llama-v3", "llama-bpe", "falcon3"})) {
        out.regexes = {kLlama3Regex};
        out.ignore_merges = true;
    } else if (is_any({"dbrx", "smaug-bpe"})) {
        out.regexes = {kLlama3Regex};
    } else if (is_any({"qwen2", "deepseek-r1-qwen", "stablelm2", "hunyuan", "megrez"})) {
        out.regexes = {kQwen2Regex};
    } else if (is_any({"gpt-4o", "llama4", "kanana2"})) {
        out.regexes = {kGpt4oRegex};
    } else {
        return false;
    }
    return true;
}

struct CodeDeleter {
    void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
struct MatchDataDeleter {
    void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};
using CodePtr = std::unique_ptr<pcre2_code, CodeDeleter>;
using MatchDataPtr = std::unique_ptr<pcre2_match_data, MatchDataDeleter>;

struct BpeSymbol {
    int32_t prev;
    int32_t next;
    size_t offset;  // into the byte-encoded piece
    size_t bytes;   // 0 once merged into its left neighbour
};

struct BpeBigram {
    int32_t rank;
    int32_t left;
    int32_t right;
    size_t left_bytes;   // sizes at push time: the pair is stale once either side changed
    size_t right_bytes;
};

struct BpeBigramOrder {
    bool operator()(const BpeBigram& a, const BpeBigram& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

class BpeTokenizer final : public Tokenizer {
public:
    BpeTokenizer(Vocab vocab, PieceMap merge_ranks, std::vector<CodePtr> regexes, bool ignore_merges)
        : vocab_(std::move(vocab)), merge_ranks_(std::move(merge_ranks)), regexes_(std::move(regexes)),
          ignore_merges_(ignore_merges) {}

    TokenizerKind kind() const override { return TokenizerKind::Bpe; }

    std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const override {
        std::vector<int32_t> output;
        if (add_special && vocab_.add_bos && vocab_.bos >= 0) output.push_back(vocab_.bos);
        Scratch scratch(regexes_);
        for (const Fragment& fragment : split_special(text, vocab_, parse_special)) {
            if (fragment.token >= 0) {
                output.push_back(fragment.token);
                continue;
            }
            // PCRE2 in UTF mode rejects ill-formed input; llama.cpp likewise reads such bytes as U+FFFD.
            const std::string clean = sanitize_utf8(fragment.text);
            for (const auto& [offset, bytes] : pre_tokenize(clean, scratch)) {
                const std::string_view piece = std::string_view(clean).substr(offset, bytes);
                if (const auto hit = scratch.cache.find(piece); hit != scratch.cache.end()) {
                    output.insert(output.end(), hit->second.begin(), hit->second.end());
                    continue;
                }
                const size_t first = output.size();
                tokenize_piece(piece, scratch, output);
                if (scratch.cache.size() >= kCacheEntries) scratch.cache.clear();
                scratch.cache.emplace(std::string(piece), std::vector<int32_t>(output.begin() + static_cast<std::ptrdiff_t>(first), output.end()));
            }
        }
        if (add_special && vocab_.add_eos && vocab_.eos >= 0) output.push_back(vocab_.eos);
        return output;
    }

    std::string token_bytes(int32_t id) const override {
        if (!vocab_.valid(id)) return {};
        const std::string& text = vocab_.pieces[static_cast<size_t>(id)];
        switch (vocab_.types[static_cast<size_t>(id)]) {
            case TokenType::Normal:
            case TokenType::Undefined: return unicode_to_bytes(text);
            case TokenType::Byte: return byte_token_value(text);
            default: return text;  // control / user-defined / unknown / unused: the literal string
        }
    }

    const std::string& piece(int32_t id) const override { return vocab_.piece(id); }
    size_t vocab_size() const override { return vocab_.pieces.size(); }
    int32_t bos_id() const override { return vocab_.bos; }
    int32_t eos_id() const override { return vocab_.eos; }
    bool is_control(int32_t id) const override { return vocab_.is_control(id); }

    std::string decode(const std::vector<int32_t>& ids) const override {
        return decode_tokens(vocab_, ids, false, [this](int32_t id) { return token_bytes(id); });
    }

private:
    // Per-call working memory, so encode() stays const and thread-safe.
    struct Scratch {
        explicit Scratch(const std::vector<CodePtr>& regexes) {
            for (const CodePtr& code : regexes) match_data.emplace_back(pcre2_match_data_create_from_pattern(code.get(), nullptr));
        }
        std::vector<MatchDataPtr> match_data;
        std::string encoded;
        std::string key;
        std::vector<BpeSymbol> symbols;
        std::vector<BpeBigram> heap;
        // Pieces already tokenized in this call: long texts repeat words constantly. Per call, so
        // encode() needs no lock; bounded so a pathological input cannot grow it without limit.
        std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache;
    };
    static constexpr size_t kCacheEntries = 1 << 16;

    using Spans = std::vector<std::pair<size_t, size_t>>;  // (offset, bytes) pieces of the text

    Spans pre_tokenize(std::string_view text, Scratch& scratch) const {
        Spans spans{{0, text.size()}};
        Spans next;
        for (size_t r = 0; r < regexes_.size(); ++r) {
            pcre2_match_data* match = scratch.match_data[r].get();
            if (!match) continue;  // allocation failed: leave the pieces unsplit by this regex
            next.clear();
            for (const auto& [start, length] : spans) {
                const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + start);
                size_t done = 0;    // end of the last emitted part, relative to start
                size_t search = 0;  // where the next match attempt begins
                while (search <= length) {
                    const int rc = pcre2_match(regexes_[r].get(), subject, length, search, PCRE2_NO_UTF_CHECK, match, nullptr);
                    if (rc < 0) break;
                    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
                    const size_t match_begin = ovector[0], match_end = ovector[1];
                    if (match_end == match_begin) {  // empty match: step over one character
                        if (match_end >= length) break;
                        search = match_end + std::min(utf8_lead_length(static_cast<uint8_t>(text[start + match_end])), length - match_end);
                        continue;
                    }
                    if (match_begin > done) next.emplace_back(start + done, match_begin - done);
                    next.emplace_back(start + match_begin, match_end - match_begin);
                    done = search = match_end;
                }
                if (done < length) next.emplace_back(start + done, length - done);
            }
            spans.swap(next);
        }
        return spans;
    }

    int32_t merge_rank(std::string_view left, std::string_view right, std::string& key) const {
        key.assign(left);
        key.push_back(' ');
        key.append(right);
        const auto it = merge_ranks_.find(std::string_view(key));
        return it == merge_ranks_.end() ? -1 : it->second;
    }

    void push_bigram(int32_t left, int32_t right, Scratch& scratch) const {
        if (left < 0 || right < 0) return;
        const BpeSymbol& a = scratch.symbols[static_cast<size_t>(left)];
        const BpeSymbol& b = scratch.symbols[static_cast<size_t>(right)];
        const std::string_view encoded = scratch.encoded;
        const int32_t rank = merge_rank(encoded.substr(a.offset, a.bytes), encoded.substr(b.offset, b.bytes), scratch.key);
        if (rank < 0) return;
        scratch.heap.push_back(BpeBigram{rank, left, right, a.bytes, b.bytes});
        std::push_heap(scratch.heap.begin(), scratch.heap.end(), BpeBigramOrder{});
    }

    void tokenize_piece(std::string_view piece, Scratch& scratch, std::vector<int32_t>& output) const {
        if (piece.empty()) return;
        std::string& encoded = scratch.encoded;
        encoded.clear();
        const auto& byte_map = byte_to_unicode();
        for (char c : piece) encoded += byte_map[static_cast<uint8_t>(c)];

        if (ignore_merges_) {
            if (const int32_t id = vocab_.find(encoded); id >= 0) {
                output.push_back(id);
                return;
            }
        }

        auto& symbols = scratch.symbols;
        symbols.clear();
        for (size_t offset = 0; offset < encoded.size();) {
            const size_t len = std::min(utf8_lead_length(static_cast<uint8_t>(encoded[offset])), encoded.size() - offset);
            const auto index = static_cast<int32_t>(symbols.size());
            symbols.push_back(BpeSymbol{index - 1, offset + len == encoded.size() ? -1 : index + 1, offset, len});
            offset += len;
        }
        scratch.heap.clear();
        for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) push_bigram(i - 1, i, scratch);

        while (!scratch.heap.empty()) {
            std::pop_heap(scratch.heap.begin(), scratch.heap.end(), BpeBigramOrder{});
            const BpeBigram bigram = scratch.heap.back();
            scratch.heap.pop_back();
            BpeSymbol& left = symbols[static_cast<size_t>(bigram.left)];
            BpeSymbol& right = symbols[static_cast<size_t>(bigram.right)];
            if (left.bytes != bigram.left_bytes || right.bytes != bigram.right_bytes || left.next != bigram.right ||
                right.bytes == 0)
                continue;  // stale: a neighbour merged since this pair was queued
            left.bytes += right.bytes;
            right.bytes = 0;
            left.next = right.next;
            if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = bigram.left;
            push_bigram(left.prev, bigram.left, scratch);
            push_bigram(bigram.left, left.next, scratch);
        }

        const std::string_view text = encoded;
        for (int32_t i = 0; i != -1; i = symbols[static_cast<size_t>(i)].next) {
            const BpeSymbol& symbol = symbols[static_cast<size_t>(i)];
            const std::string_view word = text.substr(symbol.offset, symbol.bytes);
            if (const int32_t id = vocab_.find(word); id >= 0) {
                output.push_back(id);
                continue;
            }
            // Not a token: fall back to the tokens of its single byte stand-ins.
            for (size_t pos = 0; pos < word.size();) {
                const size_t len = std::min(utf8_lead_length(static_cast<uint8_t>(word[pos])), word.size() - pos);
                const int32_t id = vocab_.find(word.substr(pos, len));
                if (id >= 0)
                    output.push_back(id);
                else if (vocab_.unk >= 0)
                    output.push_back(vocab_.unk);
                pos += len;
            }
        }
    }

    Vocab vocab_;
    PieceMap merge_ranks_;  // "left right" -> rank (its index in tokenizer.ggml.merges)
    std::vector<CodePtr> regexes_;
    bool ignore_merges_;
};

} // namespace

Result<std::unique_ptr<Tokenizer>> make_bpe_tokenizer(Vocab vocab, const Metadata& metadata) {
    try {
        const std::string pre = metadata.get_string("tokenizer.ggml.pre").value_or("");
        PreTokenizer pre_tokenizer;
        if (!pre_tokenizer_for(pre, pre_tokenizer))
            return make_error(ErrorKind::Unsupported, "tokenizer: 'tokenizer.ggml.pre' = '" + pre +
                                                          "' is not a pre-tokenizer this build knows");

        const auto* merges = metadata.get_strings("tokenizer.ggml.merges");
        if (!merges || merges->empty())
            return make_error("tokenizer: byte-level BPE needs 'tokenizer.ggml.merges', which is missing or empty");
        PieceMap ranks;
        ranks.reserve(merges->size());
        for (size_t i = 0; i < merges->size(); ++i) {
            const std::string& merge = (*merges)[i];
            const size_t space = merge.find(' ', 1);
            if (space == std::string::npos || space + 1 >= merge.size())
                return make_error("tokenizer: 'tokenizer.ggml.merges' entry " + std::to_string(i) + " ('" + merge +
                                  "') is not two pieces separated by a space");
            ranks.emplace(merge, static_cast<int32_t>(std::min<size_t>(i, INT32_MAX)));
        }

        std::vector<CodePtr> regexes;
        for (const char* pattern : pre_tokenizer.regexes) {
            int error_code = 0;
            PCRE2_SIZE error_offset = 0;
            CodePtr code(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                                       PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &error_code, &error_offset, nullptr));
            if (!code) {
                PCRE2_UCHAR message[256];
                pcre2_get_error_message(error_code, message, sizeof(message));
                // The patterns are built in, not read from the file: one that fails to compile is a bug.
                return make_error(ErrorKind::Internal,
                                  "tokenizer: pre-tokenizer regex for '" + pre + "' does not compile at offset " +
                                      std::to_string(error_offset) + ": " + reinterpret_cast<const char*>(message));
            }
            pcre2_jit_compile(code.get(), PCRE2_JIT_COMPLETE);  // optional speed-up; the interpreter is the fallback
            regexes.push_back(std::move(code));
        }
        return std::unique_ptr<Tokenizer>(std::make_unique<BpeTokenizer>(std::move(vocab), std::move(ranks),
                                                                         std::move(regexes), pre_tokenizer.ignore_merges));
    } catch (const std::bad_alloc&) {
        return make_error(ErrorKind::OutOfMemory, "tokenizer: out of memory while building the BPE merge table");
    }
}

#endif // CFLOW_HAVE_PCRE2

} // namespace cflow::tok
