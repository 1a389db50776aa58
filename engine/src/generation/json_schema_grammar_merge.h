#pragma once
// Reading JSON Schema keywords for the GBNF converter (json_schema_grammar.cpp): which keywords
// are refused, $ref resolution inside the document, allOf merged into one schema, and the bounds
// and object shapes the grammar is written from. Every error names the keyword's JSON pointer.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cflow/base/result.h"
#include "cflow/engine/generation/json_schema_grammar.h"

namespace cflow::json_schema_merge {

using nlohmann::ordered_json;

// "JSON schema #<pointer>: <what>" (InvalidInput).
Error schema_error(const std::string& pointer, const std::string& what);
std::string escape_pointer(const std::string& key);  // RFC 6901: ~ → ~0, / → ~1

// Keywords that never change which instances validate (title, description, $defs, ...).
bool is_annotation(const std::string& key);
// Whether a schema object has any keyword besides annotations.
bool constrains(const ordered_json& schema);
// The keyword this converter cannot express (pattern, multipleOf, not, ...), as an error.
Status refused_keyword(const ordered_json& schema, const std::string& pointer);

ordered_json without(const ordered_json& schema, const std::string& key);

// `#` or `#/json/pointer` inside the document; the pointer part of a $ref ("" for the root).
Result<const ordered_json*> resolve_ref(const ordered_json& document, const ordered_json& ref, const std::string& at);
std::string ref_pointer(const ordered_json& ref);

// The schema's allOf (and its own other keywords) as one schema without allOf.
Result<ordered_json> merge_all_of(const ordered_json& document, const ordered_json& schema, const std::string& pointer);

// The types named by `type` (one or a list), or inferred from type-specific keywords; empty: any.
Result<std::vector<std::string>> schema_types(const ordered_json& schema, const std::string& pointer);
bool value_has_type(const ordered_json& value, const ordered_json& schema);

// {min, max} of minLength/maxLength or minItems/maxItems; max absent when unbounded (or over
// the grammar's repetition limit, where leaving it out only narrows what is generated).
Result<std::pair<size_t, std::optional<size_t>>> length_bounds(const ordered_json& schema, const std::string& pointer,
                                                               const char* min_key, const char* max_key,
                                                               const JsonSchemaLimits& limits);
// Whole-number bounds from minimum / maximum (and exclusive ones for integers), clamped to what
// the digit grammar writes; absent: unbounded that way.
Result<std::pair<std::optional<int64_t>, std::optional<int64_t>>> number_bounds(const ordered_json& schema,
                                                                                const std::string& pointer, bool integer);

struct ObjectProperty {
    std::string name;
    const ordered_json* schema = nullptr;
    std::string pointer;
    bool required = false;
};
struct ObjectShape {
    std::vector<ObjectProperty> properties;  // [properties] in the schema's order, then required-only keys
    const ordered_json* additional = nullptr;  // schema of extra keys; null: none may come
    std::string additional_pointer;
};
// An object with properties and no additionalProperties takes no extra keys (OpenAI's strict mode
// requires additionalProperties false anyway); one with neither takes any keys.
Result<ObjectShape> object_shape(const ordered_json& schema, const std::string& pointer, const JsonSchemaLimits& limits);

} // namespace cflow::json_schema_merge
