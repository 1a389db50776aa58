#pragma once
// Reading a small input file whole (config.json, tokenizer.json, a safetensors index, a chat
// template): refused before any byte is read when it is not a regular file (a FIFO would
// block the program forever in open(), /dev/zero would fill memory), and capped in size with
// an error that names the file and the limit. One file per OS in platform/.
#include <cstdint>
#include <string>

#include "cflow/base/result.h"

namespace cflow {

// Caps for the kinds of files read whole; far above any real file of the kind.
inline constexpr uint64_t kMaxJsonConfigBytes = 64ull << 20;      // config.json, index.json, tokenizer_config.json
inline constexpr uint64_t kMaxTokenizerJsonBytes = 256ull << 20;  // tokenizer.json (real ones are < 50 MiB; the parse takes ~10x)
inline constexpr uint64_t kMaxChatTemplateBytes = 16ull << 20;    // chat_template.jinja
inline constexpr uint64_t kMaxTextInputBytes = 256ull << 20;      // text to tokenize or score, stdin of tokenize/detokenize
inline constexpr uint64_t kMaxInputLineBytes = 4ull << 20;        // one line of `cflow chat` input

// The file's bytes. Errors: Io (cannot open / read), InvalidInput (not a regular file, or
// larger than max_bytes; what names the kind of file for the message).
Result<std::string> read_whole_file(const std::string& path, uint64_t max_bytes, const char* what);

// InvalidInput when path exists but is not a regular file (checked without opening it for
// reading, so a FIFO cannot block); Io when it cannot be inspected.
Status require_regular_file(const std::string& path);

} // namespace cflow
