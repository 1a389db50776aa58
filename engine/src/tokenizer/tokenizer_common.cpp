// Vocabulary loading, special-token splitting, UTF-8 and byte-level helpers shared by the tokenizers.
#include "tokenizer/tokenizer_common.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <new>

namespace cflow::tok {

namespace {

constexpr const char* kTokensKey = "tokenizer.ggml.tokens";
constexpr const char* kScoresKey = "tokenizer.ggml.scores";
constexpr const char* kTypesKey = "tokenizer.ggml.token_type";

// "No such token" as GGUF writers store it: -1, or -1 as a u32 (0xFFFFFFFF).
bool is_none_id(int64_t value) { return value < 0 || value == int64_t{0xFFFFFFFF}; }

// An id key that is absent or "none" -> -1; a real id past the vocabulary is an error naming
// the key and the id (it was dropped silently, so a model's BOS disappeared from every prompt).
Result<int32_t> read_id(const Metadata& metadata, const std::string& key, size_t vocab_size) {
    auto value = metadata.get_int(key);
    if (!value || is_none_id(*value)) return -1;
    if (static_cast<uint64_t>(*value) >= vocab_size)
        return make_error("tokenizer: '" + key + "' is " + std::to_string(*value) + ", outside the vocabulary of " +
                          std::to_string(vocab_size) + " tokens");
    return static_cast<int32_t>(*value);
}

// Padding is never fed to the model; files that name a pad id one past their tokens exist, so
// an unusable pad id is left out instead of refusing the vocabulary.
int32_t read_optional_id(const Metadata& metadata, const std::string& key, size_t vocab_size) {
    auto value = metadata.get_int(key);
    if (!value || is_none_id(*value) || static_cast<uint64_t>(*value) >= vocab_size) return -1;
    return static_cast<int32_t>(*value);
}

void build_special_trie(Vocab& vocab) {
    SpecialTrie& trie = vocab.special_trie;
    trie.nodes.assign(1, SpecialTrie::Node{});
    trie.root_children.fill(-1);
    for (size_t rank = 0; rank < vocab.special_ids.size(); ++rank) {
        const std::string& text = vocab.pieces[static_cast<size_t>(vocab.special_ids[rank])];
        int32_t node = 0;
        for (char c : text) {
            const auto byte = static_cast<uint8_t>(c);
            int32_t next = trie.child(node, byte);
            if (next < 0) {
                next = static_cast<int32_t>(trie.nodes.size());
                trie.nodes.emplace_back();
                if (node == 0)
                    trie.root_children[byte] = next;
                else
                    trie.nodes[static_cast<size_t>(node)].children.emplace_back(byte, next);
            }
            node = next;
        }
        // Duplicate strings: the first (lowest rank) wins, as in llama.cpp's partition order.
        if (trie.nodes[static_cast<size_t>(node)].rank < 0) trie.nodes[static_cast<size_t>(node)].rank = static_cast<int32_t>(rank);
    }
}

} // namespace

int32_t SpecialTrie::child(int32_t node, uint8_t byte) const {
    if (node == 0) return root_children[byte];
    for (const auto& [edge, next] : nodes[static_cast<size_t>(node)].children)
        if (edge == byte) return next;
    return -1;
}

bool Vocab::is_control(int32_t id) const {
    if (!valid(id)) return true;
    const TokenType type = types[static_cast<size_t>(id)];
    return type == TokenType::Control || type == TokenType::Unknown || type == TokenType::Unused;
}

const std::string& Vocab::piece(int32_t id) const {
    static const std::string kEmpty;
    return valid(id) ? pieces[static_cast<size_t>(id)] : kEmpty;
}

Result<Vocab> load_vocab(const Metadata& metadata, const VocabDefaults& defaults) {
    try {
        Vocab vocab;
        const auto* tokens = metadata.get_strings(kTokensKey);
        if (!tokens || tokens->empty())
            return make_error(std::string("tokenizer: metadata key '") + kTokensKey + "' is missing or empty");
        if (tokens->size() > static_cast<size_t>(INT32_MAX))
            return make_error(std::string("tokenizer: '") + kTokensKey + "' has more entries than int32 ids allow");
        const size_t n = tokens->size();
        vocab.pieces = *tokens;

        if (const auto* scores = metadata.get_floats(kScoresKey)) {
            if (scores->size() != n)
                return make_error(std::string("tokenizer: '") + kScoresKey + "' has " + std::to_string(scores->size()) +
                                  " entries, '" + kTokensKey + "' has " + std::to_string(n));
            vocab.scores = *scores;
        } else {
            vocab.scores.assign(n, 0.0f);
        }

        vocab.types.assign(n, TokenType::Normal);
        if (const auto* types = metadata.get_ints(kTypesKey)) {
            if (types->size() != n)
                return make_error(std::string("tokenizer: '") + kTypesKey + "' has " + std::to_string(types->size()) +
                                  " entries, '" + kTokensKey + "' has " + std::to_string(n));
            for (size_t i = 0; i < n; ++i) {
                const int32_t type = (*types)[i];
                if (type < 0 || type > static_cast<int32_t>(TokenType::Byte))
                    return make_error(std::string("tokenizer: '") + kTypesKey + "' entry " + std::to_string(i) +
                                      " has unknown token type " + std::to_string(type));
                vocab.types[i] = static_cast<TokenType>(type);
            }
        }

        vocab.piece_to_id.reserve(n);
        for (size_t i = 0; i < n; ++i) vocab.piece_to_id[vocab.pieces[i]] = static_cast<int32_t>(i);
        // gpt-oss's harmony format frames each message with these control tokens inside the
        // assistant's reply; llama.cpp renders them (as user-defined tokens) so the reply's channels
        // can be told apart, and so do we: they print, and they are not end-of-turn candidates.
        // The tool-call markers of the other families likewise (llama.cpp's preserved tokens): the
        // parser reads calls from the printed reply, and a call grammar can write them.
        for (const char* framing : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", "<|python_tag|>", "[TOOL_CALLS]",
                                    "[ARGS]", "[CALL_ID]", "<|tool_call|>", "<|/tool_call|>", "<tool_call>", "</tool_call>"}) {
            const int32_t id = vocab.find(framing);
            if (id >= 0 && vocab.types[static_cast<size_t>(id)] == TokenType::Control)
                vocab.types[static_cast<size_t>(id)] = TokenType::UserDefined;
        }

        int32_t* const ids[] = {&vocab.bos, &vocab.eos, &vocab.unk};
        const char* const keys[] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                                    "tokenizer.ggml.unknown_token_id"};
        for (size_t k = 0; k < std::size(keys); ++k) {
            auto id = read_id(metadata, keys[k], n);
            if (!id) return id.take_error();
            *ids[k] = *id;
        }
        vocab.pad = read_optional_id(metadata, "tokenizer.ggml.padding_token_id", n);
        vocab.add_bos = metadata.get_bool("tokenizer.ggml.add_bos_token").value_or(defaults.add_bos);
        vocab.add_eos = metadata.get_bool("tokenizer.ggml.add_eos_token").value_or(defaults.add_eos);
        vocab.add_space_prefix = metadata.get_bool("tokenizer.ggml.add_space_prefix").value_or(defaults.add_space_prefix);

        for (size_t i = 0; i < n; ++i) {
            const TokenType type = vocab.types[i];
            if ((type == TokenType::Control || type == TokenType::UserDefined || type == TokenType::Unknown) &&
                !vocab.pieces[i].empty())
                vocab.special_ids.push_back(static_cast<int32_t>(i));
        }
        std::stable_sort(vocab.special_ids.begin(), vocab.special_ids.end(), [&](int32_t a, int32_t b) {
            return vocab.pieces[static_cast<size_t>(a)].size() > vocab.pieces[static_cast<size_t>(b)].size();
        });
        build_special_trie(vocab);
        return vocab;
    } catch (const std::bad_alloc&) {
        return make_error(ErrorKind::OutOfMemory, "tokenizer: out of memory while building the vocabulary");
    }
}

// Same result as llama.cpp's tokenizer_st_partition, which takes the special tokens longest first and,
// for each, splits every remaining raw fragment at its non-overlapping occurrences left to right: here all
// occurrences are found in one trie walk, then accepted in that order when they overlap nothing accepted.
std::vector<Fragment> split_special(std::string_view text, const Vocab& vocab, bool parse_special) {
    std::vector<Fragment> fragments;
    if (text.empty()) return fragments;

    struct Occurrence {
        int32_t rank;
        size_t offset;
        size_t bytes;
    };
    std::vector<Occurrence> occurrences;
    const SpecialTrie& trie = vocab.special_trie;
    if (!trie.nodes.empty()) {
        for (size_t start = 0; start < text.size(); ++start) {
            int32_t node = trie.root_children[static_cast<uint8_t>(text[start])];
            for (size_t end = start + 1; node >= 0; ++end) {
                const int32_t rank = trie.nodes[static_cast<size_t>(node)].rank;
                if (rank >= 0) {
                    const int32_t id = vocab.special_ids[static_cast<size_t>(rank)];
                    if (parse_special || vocab.types[static_cast<size_t>(id)] == TokenType::UserDefined)
                        occurrences.push_back(Occurrence{rank, start, end - start});
                }
                if (end >= text.size()) break;
                node = trie.child(node, static_cast<uint8_t>(text[end]));
            }
        }
    }
    if (occurrences.empty()) {
        fragments.push_back(Fragment{-1, text});
        return fragments;
    }
    std::sort(occurrences.begin(), occurrences.end(), [](const Occurrence& a, const Occurrence& b) {
        return a.rank < b.rank || (a.rank == b.rank && a.offset < b.offset);
    });
    std::map<size_t, std::pair<size_t, int32_t>> accepted;  // offset -> (end, token id)
    int32_t current_rank = -1;
    size_t rank_end = 0;  // end of this token's last accepted match: the search resumes there
    for (const Occurrence& occurrence : occurrences) {
        if (occurrence.rank != current_rank) {
            current_rank = occurrence.rank;
            rank_end = 0;
        }
        const size_t end = occurrence.offset + occurrence.bytes;
        if (occurrence.offset < rank_end) continue;
        auto after = accepted.lower_bound(end);
        if (after != accepted.begin() && std::prev(after)->second.first > occurrence.offset) continue;  // overlaps
        accepted.emplace(occurrence.offset, std::make_pair(end, vocab.special_ids[static_cast<size_t>(occurrence.rank)]));
        rank_end = end;
    }
    size_t done = 0;
    for (const auto& [offset, match] : accepted) {
        if (offset > done) fragments.push_back(Fragment{-1, text.substr(done, offset - done)});
        fragments.push_back(Fragment{match.second, {}});
        done = match.first;
    }
    if (done < text.size()) fragments.push_back(Fragment{-1, text.substr(done)});
    return fragments;
}

std::string byte_token_value(const std::string& text) {
    const auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    if (text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text[5] == '>') {
        const int hi = hex(text[3]), lo = hex(text[4]);
        if (hi >= 0 && lo >= 0) return std::string(1, static_cast<char>(hi * 16 + lo));
    }
    return text;
}

namespace {

// GPT-2 bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the rest map to U+0100.. in order.
std::array<uint32_t, 256> build_byte_cpts() {
    std::array<uint32_t, 256> cpts{};
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
        const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        cpts[b] = printable ? b : next++;
    }
    return cpts;
}

constexpr uint32_t kByteCptLimit = 256 + 68;  // largest stand-in is U+0143

const std::array<int16_t, kByteCptLimit>& unicode_to_byte_table() {
    static const std::array<int16_t, kByteCptLimit> table = [] {
        std::array<int16_t, kByteCptLimit> t{};
        t.fill(-1);
        const auto cpts = build_byte_cpts();
        for (uint32_t b = 0; b < 256; ++b) t[cpts[b]] = static_cast<int16_t>(b);
        return t;
    }();
    return table;
}

} // namespace

const std::array<std::string, 256>& byte_to_unicode() {
    static const std::array<std::string, 256> table = [] {
        std::array<std::string, 256> t;
        const auto cpts = build_byte_cpts();
        for (size_t b = 0; b < 256; ++b) append_utf8(t[b], cpts[b]);
        return t;
    }();
    return table;
}

std::string unicode_to_bytes(std::string_view encoded) {
    const auto& table = unicode_to_byte_table();
    std::string out;
    out.reserve(encoded.size());
    for (size_t pos = 0; pos < encoded.size();) {
        uint32_t cp = 0;
        const size_t len = decode_utf8_at(encoded, pos, cp);
        if (len == 0) {
            out.push_back(encoded[pos++]);
            continue;
        }
        if (cp < kByteCptLimit && table[cp] >= 0)
            out.push_back(static_cast<char>(table[cp]));
        else
            out.append(encoded.substr(pos, len));
        pos += len;
    }
    return out;
}

} // namespace cflow::tok
