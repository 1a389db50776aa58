#pragma once
// SentencePiece-BPE tokenizer (tokenizer.ggml.model "llama"): llama.cpp's llm_tokenizer_spm.
#include <memory>

#include "cflow/engine/tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_common.h"

namespace cflow::tok {

std::unique_ptr<Tokenizer> make_spm_tokenizer(Vocab vocab);

} // namespace cflow::tok
