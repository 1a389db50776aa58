#pragma once
// Byte-level BPE tokenizer (tokenizer.ggml.model "gpt2"): llama.cpp's llm_tokenizer_bpe with the
// per-family pre-tokenizer regexes (tokenizer.ggml.pre), matched by PCRE2.
#include <memory>

#include "cflow/engine/tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_common.h"

namespace cflow::tok {

// Fails for an unknown tokenizer.ggml.pre, a malformed merge, or (builds without PCRE2) always.
Result<std::unique_ptr<Tokenizer>> make_bpe_tokenizer(Vocab vocab, const Metadata& metadata);

} // namespace cflow::tok
