#pragma once
// JSON Schema → GBNF, for replies that must validate against a schema (the OpenAI API's
// response_format json_schema, tool-call arguments, `cflow chat --json-schema`).
//
// Covered (draft 2020-12 / OpenAI structured-output subset): type (one or a list), enum, const,
// object properties with required and optional keys (in the schema's property order),
// additionalProperties (false, true or a schema), arrays with items / prefixItems and
// minItems / maxItems, nested objects, anyOf / oneOf, allOf of objects, $ref to #/$defs and
// #/definitions (recursion allowed, as a grammar rule), nullable via type lists, strings with
// minLength / maxLength / pattern-free formats date, time, date-time, uuid, email-free plain text,
// integers and numbers (minimum / maximum checked where a bounded digit grammar can express them).
// Refused with InvalidInput naming the JSON pointer of the offending keyword: what the grammar
// cannot express honestly (an unknown type, a $ref outside the document, a schema that accepts
// nothing, e.g. an empty enum), and what is over the limits.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "cflow/base/result.h"
#include "cflow/engine/generation/grammar.h"

namespace cflow {

struct JsonSchemaLimits {
    size_t max_schema_bytes = size_t(1) << 20;
    size_t max_depth = 64;          // nested schemas
    size_t max_properties = 1000;   // in one object
    size_t max_rules = 20000;       // generated GBNF rules
};

// GBNF rules whose entry rule is named `rule_name` (other rules it needs are named
// `rule_name-...`), for embedding in a larger grammar (tool calls). Whitespace between JSON tokens
// is bounded as in json_grammar.h.
Result<std::string> json_schema_gbnf_rules(std::string_view schema_json, std::string_view rule_name,
                                          const JsonSchemaLimits& limits = {});

// A whole grammar: `root` is one JSON value valid under the schema, and nothing follows it.
Result<std::string> json_schema_gbnf(std::string_view schema_json, const JsonSchemaLimits& limits = {});
Result<std::shared_ptr<const Grammar>> json_schema_grammar(std::string_view schema_json,
                                                           const JsonSchemaLimits& limits = {});

} // namespace cflow
