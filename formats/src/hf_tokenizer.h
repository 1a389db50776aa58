#pragma once
// HF tokenizer.json + tokenizer_config.json (+ chat_template.jinja) -> GGUF-style
// tokenizer metadata (tokenizer.ggml.*, tokenizer.chat_template). Internal to formats/.
#include <string>

#include "cflow/formats/metadata.h"
#include "cflow/base/result.h"

namespace cflow::hf {

// Reads the tokenizer files of an HF folder into meta. Returns false (and sets nothing)
// when the folder has no tokenizer.json; errors name the file and the field.
//   BPE + byte_fallback -> "llama" (SentencePiece-BPE; score = -(rank of the merge that
//                          first creates the token), 0 for special/byte/unmerged tokens)
//   BPE                 -> "gpt2" (byte-level; tokens, merges, token types)
//   WordPiece           -> "bert"
//   Unigram             -> "llama" (scores taken as given)
Result<bool> load_tokenizer(const std::string& dir, Metadata& meta);

} // namespace cflow::hf
