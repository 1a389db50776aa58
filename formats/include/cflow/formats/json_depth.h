#pragma once
// A guard run before any JSON text is parsed: nlohmann::json builds, copies and destroys
// values recursively, so ~60k-200k nested arrays or objects (a hostile tokenizer.json, a
// --messages file) overflowed the stack. The scan itself is iterative.
#include <cstddef>
#include <string>
#include <string_view>

#include "cflow/base/result.h"

namespace cflow {

// Far deeper than any real config, tokenizer, index or chat message list (they nest < 10).
inline constexpr size_t kMaxJsonDepth = 256;

// The deepest nesting of arrays and objects in text (brackets inside strings do not count).
size_t json_nesting_depth(std::string_view text);

// InvalidInput naming `what` when text nests deeper than max_depth.
Status check_json_depth(std::string_view text, const std::string& what, size_t max_depth = kMaxJsonDepth);

} // namespace cflow
