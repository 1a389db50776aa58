#pragma once
// WordPiece tokenizer (tokenizer.ggml.model "bert"): BERT's basic tokenizer then greedy longest-match-first.
#include <memory>

#include "cflow/engine/tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_common.h"

namespace cflow::tok {

std::unique_ptr<Tokenizer> make_wordpiece_tokenizer(Vocab vocab);

} // namespace cflow::tok
