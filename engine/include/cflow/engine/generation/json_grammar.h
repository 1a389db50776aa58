#pragma once
// The grammar of one JSON object (RFC 8259), for replies that must be a JSON object (the
// OpenAI API's response_format {"type": "json_object"}). Whitespace between tokens is bounded
// (at most kJsonGrammarMaxWhitespace characters in a row) so a model cannot pad a reply forever,
// and the object is the whole reply: it starts with '{' and nothing may follow its closing brace.
#include <memory>
#include <string_view>

#include "cflow/base/result.h"
#include "cflow/engine/generation/grammar.h"

namespace cflow {

inline constexpr int kJsonGrammarMaxWhitespace = 20;

// The GBNF text (root: one object).
std::string_view json_object_grammar_source();

// Parsed: a few microseconds; the result is immutable and may be shared.
Result<std::shared_ptr<const Grammar>> json_object_grammar();

} // namespace cflow
