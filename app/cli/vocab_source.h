#pragma once
// MODEL_OR_VOCAB arguments of tokenize / detokenize / template: the tokenizer metadata of a
// .cflow/.vflow model, a .gguf (vocab-only files included), a Hugging Face tokenizer.json or a
// folder holding one, in the GGUF key form Tokenizer::from_metadata reads.
#include <memory>
#include <string>

#include "cflow/engine/tokenizer/tokenizer.h"
#include "cflow/formats/metadata.h"
#include "cflow/base/result.h"

namespace cflow::cli {

// Dispatches on what the path is (sniff_model_path: a folder, a GGUF), then on a JSON object's
// opening brace, else the .cflow/.vflow reader, which checks its own magic; a misnamed file still
// reads or fails with its reader's message.
Result<Metadata> read_vocab_metadata(const std::string& path);

struct VocabSource {
    Metadata metadata;
    std::unique_ptr<Tokenizer> tokenizer;
};

// read_vocab_metadata + Tokenizer::from_metadata; errors are prefixed with the path.
Result<VocabSource> load_vocab_source(const std::string& path);

} // namespace cflow::cli
