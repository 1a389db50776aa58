#pragma once
// Sliding-window perplexity of a token stream under a session's model: the number the model zoo's
// results, `cflow perplexity` and the comparison wizard report. Runs on the caller's thread; never throws.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cflow/base/cancel.h"
#include "cflow/base/result.h"

namespace cflow {

class Session;
class Tokenizer;

struct PerplexityOptions {
    uint32_t context_tokens = 0;  // window length; 0 = the session's context length
    uint32_t stride_tokens = 0;   // window advance; 0 = context_tokens (non-overlapping windows)
    uint64_t max_scored_tokens = 0;  // stop after this many scored tokens; 0 = the whole stream
};

struct PerplexityStats {
    double total_nll = 0;          // sum of -ln p(token | window prefix), nats
    uint64_t scored_tokens = 0;    // every stream token after the first is scored at most once
    uint64_t evaluated_tokens = 0; // forward steps run (> scored when windows overlap)
    // UTF-8 bytes of the text the scored targets stand for (token_text_bytes summed over them): the
    // tokenizer-independent denominator of bits_per_byte. BOS/EOS stand for no text, so when every
    // token after a leading BOS is scored this is the documents' own byte length, the same for every
    // tokenizer that encodes the text losslessly. A stream's first token is never scored, so a
    // vocabulary without BOS leaves its first text token's bytes out.
    uint64_t scored_bytes = 0;
    uint32_t windows = 0;
    uint32_t context_tokens = 0;   // the window and stride used (options resolved against the session)
    uint32_t stride_tokens = 0;
    double elapsed_ms = 0;
    double mean_nll() const { return scored_tokens ? total_nll / double(scored_tokens) : 0; }
    double perplexity() const;
    // total_nll / ln 2 / scored_bytes: bits to encode the scored text, per byte; compares models
    // whose tokenizers differ, where perplexity (per token) does not. 0 with no bytes scored.
    double bits_per_byte() const;
};

// Per id, the UTF-8 bytes of the text it stands for in its document: token_bytes for a text token,
// 0 for a control token (BOS, EOS, unknown); the first text token of a document (at the stream's
// start or right after a control token) loses the leading space the tokenizer strips on decode (SPM's
// dummy prefix), as decode() of that document alone does. Summed over a document's ids: the byte
// length of decode(those ids). ids: [N]; returns [N].
std::vector<uint32_t> token_text_bytes(const Tokenizer& tokenizer, std::span<const int32_t> ids);

// Called after every window with (scored so far, tokens to score in all); return false to cancel.
using PerplexityProgress = std::function<bool(uint64_t scored_tokens, uint64_t total_tokens)>;

// Windows of context_tokens + 1 ids starting every stride_tokens ids; each window starts from an
// empty KV cache and scores only the targets the previous window did not, so with stride < context
// every scored token sees at least context - stride tokens of history (the HF "strided" recipe).
// ids: [N] token ids, N >= 2.
Result<PerplexityStats> perplexity(Session& session, std::span<const int32_t> ids, const PerplexityOptions& options,
                                   const PerplexityProgress& progress = {}, const CancelToken* cancel = nullptr);

// llama.cpp's `llama-perplexity` recipe, so both tools report one number on one file: the whole text
// as one stream (ids: BOS + text, as encode(text, add_special) gives it), cut into floor(N / chunk)
// chunks of chunk_tokens ids; each chunk starts from an empty KV cache with its first id replaced by
// bos_id (when >= 0) and scores only its second half: targets chunk[first + 1 .. chunk - 1] with
// first = chunk / 2, so every scored token sees at least chunk / 2 tokens of history. Tokens after
// the last whole chunk are not scored. max_scored_tokens (0 = all) stops after the chunk that
// reaches it. ids: [N] token ids, N >= 2 * chunk_tokens (llama-perplexity's minimum).
Result<PerplexityStats> perplexity_llama_chunks(Session& session, std::span<const int32_t> ids, uint32_t chunk_tokens,
                                                int32_t bos_id, uint64_t max_scored_tokens = 0,
                                                const PerplexityProgress& progress = {},
                                                const CancelToken* cancel = nullptr);

// A text file as scored documents: split at "<|endoftext|>" when the text contains it, otherwise at
// blank lines; each non-empty (trimmed) document becomes BOS text EOS (where the vocabulary has them),
// concatenated. The same recipe as resources/training/evaluate.py, so both report one number.
std::vector<std::string> split_documents(std::string_view text);
std::vector<int32_t> tokenize_documents(const Tokenizer& tokenizer, const std::vector<std::string>& documents);

} // namespace cflow
