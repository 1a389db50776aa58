#pragma once
// Public entry to the Hugging Face tokenizer reader: a tokenizer.json (with the
// tokenizer_config.json and chat_template.jinja beside it, when present) -> GGUF-style
// tokenizer metadata (tokenizer.ggml.*, tokenizer.chat_template), the form
// Tokenizer::from_metadata reads. Used by tools that take a bare tokenizer.json.
#include <string>

#include "cflow/formats/metadata.h"
#include "cflow/base/result.h"

namespace cflow {

// tokenizer_json_path must name a file called tokenizer.json (HF's fixed name: the config
// files are found beside it). Errors name the file and the field.
Result<Metadata> read_hf_tokenizer(const std::string& tokenizer_json_path);

} // namespace cflow
