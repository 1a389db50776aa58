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
//
// Choices: an object with properties (or required) and no additionalProperties takes no extra
// keys (OpenAI's strict mode forbids them too); properties come in the schema's order, each
// optional one may be left out. Keywords that change validity and that the grammar cannot check
// are refused, not ignored: pattern, patternProperties, multipleOf, not, if/then/else,
// dependentRequired, dependentSchemas, dependencies, propertyNames, min/maxProperties, contains,
// min/maxContains, unevaluatedProperties/Items, uniqueItems true, additionalItems, $dynamicRef,
// formats other than date, time, date-time and uuid, bounds on numbers that are not whole, and
// exclusive bounds on numbers (integers take them). oneOf is generated as anyOf (its branches
// should not overlap). Numbers have at most 15 integer and 15 fraction digits, and generic values
// (the empty schema, `true`) nest at most 6 levels: narrower than the schema, never wider.
// Errors read "JSON schema #<pointer>: what".
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
    // Steering for models that would never close a string or an array (a random-weight or tiny
    // model): strings without maxLength get at most this many characters, arrays without
    // maxItems (and an object's extra keys) at most this many. 0: as the schema says. Every value the capped
    // grammar allows still validates; it only allows fewer.
    size_t max_string_chars = 0;
    size_t max_array_items = 0;
    // A recursive $ref is expanded at most this many levels deep; past it, the array items,
    // optional properties and anyOf branches that would recurse are left out. 0: unbounded.
    size_t max_recursion_depth = 0;
};

// GBNF rules whose entry rule is named `rule_name` (other rules it needs are named
// `rule_name-...`), for embedding in a larger grammar (tool calls). Whitespace between JSON tokens
// is bounded: nothing, one space, or one line break and at most kJsonGrammarMaxWhitespace spaces
// or tabs of indent (json_grammar.h), so a model cannot pad a reply with blank lines.
Result<std::string> json_schema_gbnf_rules(std::string_view schema_json, std::string_view rule_name,
                                          const JsonSchemaLimits& limits = {});

// A whole grammar: `root` is one JSON value valid under the schema, and nothing follows it.
Result<std::string> json_schema_gbnf(std::string_view schema_json, const JsonSchemaLimits& limits = {});
Result<std::shared_ptr<const Grammar>> json_schema_grammar(std::string_view schema_json,
                                                           const JsonSchemaLimits& limits = {});

} // namespace cflow
