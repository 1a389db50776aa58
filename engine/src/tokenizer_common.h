#pragma once
// Shared pieces of the tokenizers: the vocabulary tables, special-token splitting, the GPT-2
// byte<->unicode map and UTF-8 helpers. Internal to cflow_engine.
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cflow/formats/metadata.h"
#include "cflow/formats/result.h"

namespace cflow::tok {

// GGUF tokenizer.ggml.token_type values (llama.cpp LLAMA_TOKEN_TYPE_*).
enum class TokenType : int32_t { Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};
using PieceMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// A byte trie over the special-token strings, so splitting walks the text once however many
// special tokens there are (DeepSeek declares thousands of "[PAD...]" user-defined tokens).
struct SpecialTrie {
    struct Node {
        std::vector<std::pair<uint8_t, int32_t>> children;  // (byte, node index)
        int32_t rank = -1;  // index into Vocab::special_ids of the token ending here, or -1
    };
    std::vector<Node> nodes;  // nodes[0] is the root
    std::array<int32_t, 256> root_children{};  // the root's children, direct-indexed (-1: none)

    int32_t child(int32_t node, uint8_t byte) const;
};

// The vocabulary as the GGUF keys describe it.
struct Vocab {
    std::vector<std::string> pieces;  // [n] token strings
    std::vector<float> scores;        // [n] SPM merge scores (0 when absent)
    std::vector<TokenType> types;     // [n]
    PieceMap piece_to_id;
    int32_t bos = -1;
    int32_t eos = -1;
    int32_t unk = -1;
    int32_t pad = -1;
    bool add_bos = false;
    bool add_eos = false;
    bool add_space_prefix = false;
    std::vector<int32_t> special_ids;  // control / user-defined / unknown ids, longest string first
    SpecialTrie special_trie;          // over the strings of special_ids

    int32_t find(std::string_view text) const {
        auto it = piece_to_id.find(text);
        return it == piece_to_id.end() ? -1 : it->second;
    }
    bool valid(int32_t id) const { return id >= 0 && static_cast<size_t>(id) < pieces.size(); }
    bool is_control(int32_t id) const;
    const std::string& piece(int32_t id) const;
};

struct VocabDefaults {
    bool add_bos = false;
    bool add_eos = false;
    bool add_space_prefix = false;
};

// Reads tokens / scores / token_type / special ids / add_* flags. Errors name the key.
Result<Vocab> load_vocab(const Metadata& metadata, const VocabDefaults& defaults);

// A piece of the input after special-token splitting: raw text, or one special token id.
struct Fragment {
    int32_t token = -1;     // >= 0: a special token
    std::string_view text;  // raw text when token < 0 (a view into the caller's text)
};
// llama.cpp tokenizer_st_partition: special strings matched longest first; control and unknown
// tokens only when parse_special, user-defined tokens always.
std::vector<Fragment> split_special(std::string_view text, const Vocab& vocab, bool parse_special);

// SPM/WordPiece decode rule: concatenated token_bytes of non-control ids, first one losing a leading space.
template <class TokenBytes>
std::string decode_tokens(const Vocab& vocab, const std::vector<int32_t>& ids, bool strip_first_space,
                          const TokenBytes& token_bytes) {
    std::string text;
    bool first = true;
    for (int32_t id : ids) {
        if (!vocab.valid(id) || vocab.is_control(id)) continue;
        std::string bytes = token_bytes(id);
        if (first && strip_first_space && !bytes.empty() && bytes.front() == ' ') bytes.erase(0, 1);
        first = false;
        text += bytes;
    }
    return text;
}

// "<0xNN>" -> that byte; anything else (a malformed byte token) comes back as the text itself.
std::string byte_token_value(const std::string& text);

// --- UTF-8 ---
// Sequence length announced by a lead byte (llama.cpp unicode_len_utf8: continuation/invalid bytes -> 1).
inline size_t utf8_len(uint8_t lead) {
    static constexpr uint8_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLengths[lead >> 4];
}
void append_utf8(std::string& out, uint32_t cp);
// Decodes one well-formed sequence at text[pos]; returns its length, or 0 when the bytes there are
// not a complete well-formed sequence (invalid, overlong, surrogate or truncated).
size_t decode_utf8_at(std::string_view text, size_t pos, uint32_t& cp);
// Codepoints of text; each ill-formed byte becomes U+FFFD.
std::vector<uint32_t> utf8_to_cpts(std::string_view text);
// text with every ill-formed byte replaced by U+FFFD (returns text unchanged when valid).
std::string sanitize_utf8(std::string_view text);

// --- GPT-2 byte-level map ---
// byte -> its printable stand-in character (UTF-8), and back.
const std::array<std::string, 256>& byte_to_unicode();
// Decodes a byte-level token string; characters outside the map are kept as they are.
std::string unicode_to_bytes(std::string_view encoded);

// --- Unicode character classes (tables generated from Unicode 14.0, tokenizer_unicode_data.cpp) ---
bool is_punctuation(uint32_t cp);      // general category P*
bool is_control_char(uint32_t cp);     // Cc or Cf
bool is_combining_mark(uint32_t cp);   // Mn
bool is_space_separator(uint32_t cp);  // Zs
// BERT normalization of one codepoint: lowercase, NFD, drop Mn. Appends 0..3 codepoints.
void bert_fold(uint32_t cp, std::vector<uint32_t>& out);

} // namespace cflow::tok
