#pragma once
// A vocabulary as the grammar matcher walks it: every token's output bytes, and the tokens that
// carry text sorted by those bytes with the common-prefix length of each neighbour pair, an
// implicit byte trie: a mask walks it once, checking a prefix that many tokens share only once.
// Built once per tokenizer (a few ms at 32k tokens) and shared by every matcher of that model.
//
// Thread safety: immutable after construction; share it freely.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cflow {

class Tokenizer;

class GrammarVocabulary {
public:
    // token_bytes: [vocab] each token's bytes as they enter the output; special: [vocab] control
    // tokens, which no text matches (a grammar allows them only as end tokens). Tokens with no
    // bytes are never allowed either (they would not move the grammar on). A shorter `special` is
    // padded with false.
    GrammarVocabulary(std::vector<std::string> token_bytes, std::vector<bool> special);
    static std::shared_ptr<const GrammarVocabulary> from_tokenizer(const Tokenizer& tokenizer);

    size_t vocab_size() const { return bytes_.size(); }
    std::string_view bytes(int32_t id) const;  // "" for an id out of range
    bool is_special(int32_t id) const;        // true for an id out of range

    // The tokens that carry text, sorted by their bytes: [text tokens] ids.
    const std::vector<int32_t>& sorted_ids() const { return sorted_; }
    // [text tokens] bytes shared with the previous sorted token (0 for the first).
    const std::vector<uint32_t>& shared_prefix() const { return shared_prefix_; }
    // The bytes of the i-th sorted token, from one contiguous copy (the walk reads them in order).
    std::string_view sorted_bytes(size_t i) const {
        return std::string_view(sorted_blob_).substr(sorted_offset_[i], sorted_offset_[i + 1] - sorted_offset_[i]);
    }

private:
    std::vector<std::string> bytes_;      // [vocab]
    std::vector<bool> special_;           // [vocab]
    std::vector<int32_t> sorted_;         // [text tokens]
    std::vector<uint32_t> shared_prefix_; // [text tokens]
    std::string sorted_blob_;             // every text token's bytes in sorted order
    std::vector<size_t> sorted_offset_;   // [text tokens + 1] where each starts in sorted_blob_
};

} // namespace cflow
