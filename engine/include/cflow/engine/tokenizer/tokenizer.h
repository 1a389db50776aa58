#pragma once
// Tokenizers built from GGUF-style vocabulary metadata: SentencePiece-BPE ("llama"),
// byte-level BPE ("gpt2", needs PCRE2 for the pre-tokenizer regexes) and WordPiece ("bert").
// Encoding follows llama.cpp (llama-vocab.cpp), whose conformance vectors the tests replay.
// Every tokenizer is immutable after construction and safe to share between threads.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cflow/formats/metadata.h"
#include "cflow/base/result.h"

namespace cflow {

enum class TokenizerKind : uint8_t { Spm, Bpe, WordPiece };

class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    // Builds from GGUF-style keys (tokenizer.ggml.model = llama|gpt2|bert, tokens, scores, token_type,
    // merges, bos/eos/unknown/padding ids, add_bos_token, add_eos_token, add_space_prefix, pre).
    static Result<std::unique_ptr<Tokenizer>> from_metadata(const Metadata& metadata);

    virtual TokenizerKind kind() const = 0;
    // Text -> ids. add_special: prepend BOS / append EOS as the vocabulary specifies (add_bos_token / add_eos_token).
    // parse_special: when false (default, for user content), text that looks like a control token is ordinary
    // text. User-defined tokens (added tokens that are not control tokens) always match, as in llama.cpp and HF.
    virtual std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special = false) const = 0;
    // Raw bytes of one token as it contributes to the output (byte tokens <0xNN> give that byte; SPM "▁" gives
    // space; BPE byte-level mapping undone; WordPiece: " word" for a word start, "iece" for a continuation).
    // Control tokens give their vocabulary string (callers skip them via is_control when not wanted).
    virtual std::string token_bytes(int32_t id) const = 0;
    // The token's string as stored in the vocabulary (for --pieces / inspection). "" for an out-of-range id.
    virtual const std::string& piece(int32_t id) const = 0;
    virtual size_t vocab_size() const = 0;
    virtual int32_t bos_id() const = 0;   // -1 if none
    virtual int32_t eos_id() const = 0;   // -1 if none
    virtual bool is_control(int32_t id) const = 0;  // control / unknown / unused tokens (not printed by default)
    // Whole-sequence decode: the token_bytes of every non-control token, with the family rule that the first
    // one loses its leading space when strips_first_space() (SPM dummy prefix, WordPiece word separator).
    virtual std::string decode(const std::vector<int32_t>& ids) const = 0;

    // True when the first non-control token of a sequence loses one leading space on decode
    // (SPM with add_space_prefix: the dummy prefix; WordPiece: the separator before the first word).
    virtual bool strips_first_space() const { return false; }
};

// Streaming detokenizer: push ids one at a time, get the newly completed valid UTF-8 text;
// incomplete multi-byte sequences are held back until complete (flush() emits the remainder, invalid bytes as U+FFFD).
// Concatenating push() outputs and flush() equals tokenizer.decode(all ids) whenever that decode is valid
// UTF-8 (always, for lossless vocabularies and well-formed output); invalid bytes come out as U+FFFD.
// Thread safety: a decoder holds the bytes of an unfinished character: one thread at a time. It
// only reads the Tokenizer, which is immutable and may be shared by any number of decoders.
class StreamingDecoder {
public:
    explicit StreamingDecoder(const Tokenizer& tokenizer, bool skip_control = true);

    // `previous` context: tell it the ids already in the context (prompt) so prefix rules are right
    // (a generated token after prompt text keeps its leading space). Clears any held-back bytes.
    void set_context(const std::vector<int32_t>& ids);
    std::string push(int32_t id);
    std::string flush();

private:
    // Moves the complete UTF-8 prefix of pending_ (invalid bytes as U+FFFD) into the result;
    // with final_flush, an incomplete tail is emitted as U+FFFD too.
    std::string drain(bool final_flush);

    const Tokenizer* tokenizer_;
    bool skip_control_;
    bool seen_content_ = false;   // a non-control token has been seen (context or pushed)
    std::string pending_;         // bytes of an incomplete UTF-8 sequence (at most 3)
};

} // namespace cflow
