#include "json_schema_grammar_merge.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "cflow/engine/generation/grammar.h"
#include "json_schema_grammar_parts.h"

namespace cflow::json_schema_merge {
namespace {

// Validity-changing keywords the grammar does not express. Refused rather than ignored: an
// ignored one would let replies through that a validator rejects.
constexpr const char* kSchemaRefusedKeywords[] = {
    "pattern", "patternProperties", "multipleOf", "not", "if", "then", "else", "dependentRequired",
    "dependentSchemas", "dependencies", "propertyNames", "minProperties", "maxProperties", "contains",
    "minContains", "maxContains", "unevaluatedProperties", "unevaluatedItems", "$dynamicRef",
    "$recursiveRef", "additionalItems"};

constexpr const char* kSchemaAnnotations[] = {
    "$schema", "$id", "$comment", "$anchor", "$dynamicAnchor", "$vocabulary", "title", "description", "default",
    "examples", "deprecated", "readOnly", "writeOnly", "$defs", "definitions", "contentEncoding", "contentMediaType"};

constexpr const char* kSchemaTypes[] = {"null", "boolean", "object", "array", "number", "string", "integer"};

const ordered_json& schema_true() {
    static const ordered_json value = true;  // a constant, shared read-only
    return value;
}

bool schema_is_whole(double value) { return std::isfinite(value) && std::floor(value) == value; }

Result<std::set<std::string>> schema_type_set(const ordered_json& type, const std::string& pointer) {
    std::set<std::string> types;
    auto add = [&](const ordered_json& name) -> Status {
        if (!name.is_string()) return schema_error(pointer + "/type", "type names are strings");
        const std::string text = name.get<std::string>();
        if (std::find(std::begin(kSchemaTypes), std::end(kSchemaTypes), text) == std::end(kSchemaTypes))
            return schema_error(pointer + "/type", "unknown type '" + text + "'");
        types.insert(text);
        return Status::success();
    };
    if (type.is_array()) {
        for (const auto& name : type)
            if (Status added = add(name); !added) return added.take_error();
        if (types.empty()) return schema_error(pointer + "/type", "an empty type list accepts nothing");
    } else if (Status added = add(type); !added) {
        return added.take_error();
    }
    return types;
}

// Collects allOf branches depth-first (nested allOf and $ref flattened); `true` adds nothing.
Status schema_collect_branches(const ordered_json& document, const ordered_json& schema, const std::string& pointer,
                               std::vector<std::pair<ordered_json, std::string>>& out, int depth) {
    if (depth > 32) return schema_error(pointer, "allOf and $ref nest deeper than 32");
    if (schema.is_boolean()) {
        if (!schema.get<bool>()) return schema_error(pointer, "the schema false accepts nothing");
        return Status::success();
    }
    if (!schema.is_object()) return schema_error(pointer, "a schema is an object or a boolean");
    if (Status refused = refused_keyword(schema, pointer); !refused) return refused;
    if (schema.contains("$ref")) {
        auto target = resolve_ref(document, schema["$ref"], pointer + "/$ref");
        if (!target) return target.take_error();
        if (Status rest = schema_collect_branches(document, without(schema, "$ref"), pointer, out, depth + 1); !rest) return rest;
        return schema_collect_branches(document, **target, ref_pointer(schema["$ref"]), out, depth + 1);
    }
    if (schema.contains("allOf")) {
        const ordered_json& list = schema["allOf"];
        if (!list.is_array() || list.empty()) return schema_error(pointer + "/allOf", "allOf is a non-empty array of schemas");
        if (Status rest = schema_collect_branches(document, without(schema, "allOf"), pointer, out, depth + 1); !rest) return rest;
        for (size_t i = 0; i < list.size(); ++i)
            if (Status branch = schema_collect_branches(document, list[i], pointer + "/allOf/" + std::to_string(i), out, depth + 1); !branch)
                return branch;
        return Status::success();
    }
    out.push_back({schema, pointer});
    return Status::success();
}

} // namespace

Error schema_error(const std::string& pointer, const std::string& what) {
    return make_error("JSON schema #" + pointer + ": " + what);
}

std::string escape_pointer(const std::string& key) {
    std::string out;
    for (char c : key) {
        if (c == '~') out += "~0";
        else if (c == '/') out += "~1";
        else out += c;
    }
    return out;
}

bool is_annotation(const std::string& key) {
    return std::find(std::begin(kSchemaAnnotations), std::end(kSchemaAnnotations), key) != std::end(kSchemaAnnotations);
}

bool constrains(const ordered_json& schema) {
    if (!schema.is_object()) return schema.is_boolean() && !schema.get<bool>();
    for (const auto& [key, value] : schema.items())
        if (!is_annotation(key)) return true;
    return false;
}

Status refused_keyword(const ordered_json& schema, const std::string& pointer) {
    for (const char* keyword : kSchemaRefusedKeywords)
        if (schema.contains(keyword))
            return schema_error(pointer + "/" + keyword, std::string("'") + keyword +
                                                             "' is not supported: the grammar cannot check it, and ignoring it would "
                                                             "let replies through that the schema rejects");
    if (schema.contains("uniqueItems") && schema["uniqueItems"] != ordered_json(false))
        return schema_error(pointer + "/uniqueItems", "'uniqueItems' is not supported: the grammar cannot check it");
    return Status::success();
}

ordered_json without(const ordered_json& schema, const std::string& key) {
    ordered_json out = schema;
    if (out.is_object()) out.erase(key);
    return out;
}

std::string ref_pointer(const ordered_json& ref) {
    if (!ref.is_string()) return "";
    const std::string text = ref.get<std::string>();
    return text.empty() ? text : text.substr(1);
}

Result<const ordered_json*> resolve_ref(const ordered_json& document, const ordered_json& ref, const std::string& at) {
    if (!ref.is_string()) return schema_error(at, "$ref is a string");
    const std::string text = ref.get<std::string>();
    if (text.empty() || text[0] != '#')
        return schema_error(at, "$ref '" + text + "' points outside this document (only #/$defs/... and other #/ pointers are followed)");
    if (text.size() > 1 && text[1] != '/') return schema_error(at, "$ref '" + text + "': anchors are not supported, use a #/ pointer");
    const ordered_json* node = &document;
    size_t start = 2;
    while (text.size() > 1 && start <= text.size()) {
        const size_t slash = std::min(text.find('/', start), text.size());
        std::string segment;
        for (size_t i = start; i < slash; ++i) {
            if (text[i] == '~' && i + 1 < slash && (text[i + 1] == '0' || text[i + 1] == '1')) {
                segment += text[i + 1] == '0' ? '~' : '/';
                ++i;
            } else {
                segment += text[i];
            }
        }
        if (node->is_object() && node->contains(segment)) {
            node = &(*node)[segment];
        } else if (node->is_array() && !segment.empty() && segment.find_first_not_of("0123456789") == std::string::npos &&
                   segment.size() < 10 && std::stoul(segment) < node->size()) {
            node = &(*node)[std::stoul(segment)];
        } else {
            return schema_error(at, "$ref '" + text + "' points at nothing in this document");
        }
        start = slash + 1;
    }
    return node;
}

Result<ordered_json> merge_all_of(const ordered_json& document, const ordered_json& schema, const std::string& pointer) {
    std::vector<std::pair<ordered_json, std::string>> branches;  // [branches] a copy of each schema, its pointer
    if (Status collected = schema_collect_branches(document, schema, pointer, branches, 0); !collected) return collected.take_error();
    const std::string at = pointer + "/allOf";
    ordered_json merged = ordered_json::object();
    std::vector<std::string> property_order;
    std::set<std::string> type_intersection;
    bool typed = false;
    for (const auto& [branch_value, branch_pointer] : branches) {
        const ordered_json* branch = &branch_value;
        for (const auto& [key, value] : branch->items()) {
            if (is_annotation(key) || key == "properties" || key == "additionalProperties") continue;
            if (key == "required") {
                if (!value.is_array()) return schema_error(branch_pointer + "/required", "required is an array of names");
                if (!merged.contains("required")) merged["required"] = ordered_json::array();
                for (const auto& name : value)
                    if (std::find(merged["required"].begin(), merged["required"].end(), name) == merged["required"].end())
                        merged["required"].push_back(name);
            } else if (key == "type") {
                auto types = schema_type_set(value, branch_pointer);
                if (!types) return types.take_error();
                if (types->count("number")) types->insert("integer");
                if (!typed) {
                    type_intersection = *types;
                } else {
                    std::set<std::string> both;
                    for (const auto& t : type_intersection) {
                        if (types->count(t)) both.insert(t);
                        else if (t == "number" && types->count("integer")) both.insert("integer");
                    }
                    type_intersection = both;
                }
                typed = true;
            } else if (key == "minLength" || key == "minItems" || key == "minimum") {
                merged[key] = merged.contains(key) ? std::max(merged[key], value) : value;
            } else if (key == "maxLength" || key == "maxItems" || key == "maximum") {
                merged[key] = merged.contains(key) ? std::min(merged[key], value) : value;
            } else if (merged.contains(key) && merged[key] != value) {
                return schema_error(branch_pointer + "/" + escape_pointer(key),
                                    "allOf branches disagree on '" + key + "' in a way this converter does not merge");
            } else {
                merged[key] = value;
            }
        }
        if (branch->contains("properties")) {
            if (!(*branch)["properties"].is_object()) return schema_error(branch_pointer + "/properties", "properties is an object");
            for (const auto& [name, property] : (*branch)["properties"].items())
                if (std::find(property_order.begin(), property_order.end(), name) == property_order.end()) property_order.push_back(name);
        }
    }
    if (typed) {
        // "number" stood for integer too above; drop the stand-in when number itself survived.
        if (type_intersection.count("number")) type_intersection.erase("integer");
        if (type_intersection.empty()) return schema_error(at, "the allOf branches share no type: the schema accepts nothing");
        merged["type"] = ordered_json(std::vector<std::string>(type_intersection.begin(), type_intersection.end()));
    }
    // Each property must satisfy every branch: the branches that declare it, and the extra-key
    // schema of those that do not (false: it may not appear).
    ordered_json properties = ordered_json::object();
    for (const std::string& name : property_order) {
        ordered_json all = ordered_json::array();
        bool forbidden = false;
        for (const auto& [branch_value, branch_pointer] : branches) {
        const ordered_json* branch = &branch_value;
            const bool declares = branch->contains("properties") && (*branch)["properties"].contains(name);
            if (declares) all.push_back((*branch)["properties"][name]);
            else if (branch->contains("additionalProperties")) {
                const ordered_json& extra = (*branch)["additionalProperties"];
                if (extra == ordered_json(false)) forbidden = true;
                else if (extra != ordered_json(true)) all.push_back(extra);
            }
        }
        if (forbidden) {
            if (merged.contains("required") &&
                std::find(merged["required"].begin(), merged["required"].end(), ordered_json(name)) != merged["required"].end())
                return schema_error(at, "property '" + name + "' is required by one branch and forbidden by another: the schema accepts nothing");
            continue;
        }
        if (all.size() == 1) properties[name] = all[0];
        else properties[name] = ordered_json{{"allOf", all}};
    }
    if (!property_order.empty()) merged["properties"] = properties;
    ordered_json extra_all = ordered_json::array();
    bool extra_forbidden = false, extra_seen = false;
    for (const auto& [branch_value, branch_pointer] : branches) {
        const ordered_json* branch = &branch_value;
        if (!branch->contains("additionalProperties")) continue;
        extra_seen = true;
        const ordered_json& extra = (*branch)["additionalProperties"];
        if (extra == ordered_json(false)) extra_forbidden = true;
        else if (extra != ordered_json(true)) extra_all.push_back(extra);
    }
    if (extra_forbidden) merged["additionalProperties"] = false;
    else if (extra_all.size() == 1) merged["additionalProperties"] = extra_all[0];
    else if (extra_all.size() > 1) merged["additionalProperties"] = ordered_json{{"allOf", extra_all}};
    else if (extra_seen) merged["additionalProperties"] = true;
    return merged;
}

Result<std::vector<std::string>> schema_types(const ordered_json& schema, const std::string& pointer) {
    std::vector<std::string> out;
    if (schema.contains("type")) {
        auto types = schema_type_set(schema["type"], pointer);
        if (!types) return types.take_error();
        // integer within number adds nothing.
        for (const char* name : kSchemaTypes)
            if (types->count(name) && !(std::string(name) == "integer" && types->count("number"))) out.push_back(name);
        return out;
    }
    auto has_any = [&](std::initializer_list<const char*> keys) {
        return std::any_of(keys.begin(), keys.end(), [&](const char* key) { return schema.contains(key); });
    };
    if (has_any({"properties", "additionalProperties", "required"})) out.push_back("object");
    if (has_any({"items", "prefixItems", "minItems", "maxItems"})) out.push_back("array");
    if (has_any({"minLength", "maxLength", "format"})) out.push_back("string");
    if (has_any({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) out.push_back("number");
    return out;
}

bool value_has_type(const ordered_json& value, const ordered_json& schema) {
    if (!schema.contains("type")) return true;
    auto types = schema_type_set(schema["type"], "");
    if (!types) return true;  // the type keyword's own error comes when it is read
    if (value.is_null()) return types->count("null") > 0;
    if (value.is_boolean()) return types->count("boolean") > 0;
    if (value.is_string()) return types->count("string") > 0;
    if (value.is_object()) return types->count("object") > 0;
    if (value.is_array()) return types->count("array") > 0;
    if (types->count("number")) return true;
    return types->count("integer") > 0 && schema_is_whole(value.get<double>());
}

Result<std::pair<size_t, std::optional<size_t>>> length_bounds(const ordered_json& schema, const std::string& pointer,
                                                               const char* min_key, const char* max_key,
                                                               const JsonSchemaLimits& limits) {
    (void)limits;
    const uint32_t most = GrammarLimits{}.max_repetition;
    std::pair<size_t, std::optional<size_t>> bounds{0, std::nullopt};
    for (const char* key : {min_key, max_key}) {
        if (!schema.contains(key)) continue;
        const ordered_json& value = schema[key];
        if (!value.is_number() || !schema_is_whole(value.get<double>()) || value.get<double>() < 0)
            return schema_error(pointer + "/" + key, std::string(key) + " is a non-negative whole number");
        const double count = value.get<double>();
        if (key == min_key) {
            if (count > most)
                return schema_error(pointer + "/" + key, std::string(key) + " " + value.dump() + " is over the grammar's limit of " +
                                                             std::to_string(most));
            bounds.first = size_t(count);
        } else if (count <= most) {
            bounds.second = size_t(count);
        }
    }
    if (bounds.second && *bounds.second < bounds.first)
        return schema_error(pointer + "/" + max_key, std::string(max_key) + " is below " + min_key + ": the schema accepts nothing");
    return bounds;
}

Result<std::pair<std::optional<int64_t>, std::optional<int64_t>>> number_bounds(const ordered_json& schema,
                                                                                const std::string& pointer, bool integer) {
    const double most = double(json_schema_parts::kMaxIntegerMagnitude);
    std::optional<double> low, high;  // whole numbers
    for (const char* key : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
        if (!schema.contains(key)) continue;
        const ordered_json& value = schema[key];
        const std::string at = pointer + "/" + key;
        if (value.is_boolean()) return schema_error(at, std::string(key) + " as a boolean (draft 4) is not supported");
        if (!value.is_number() || !std::isfinite(value.get<double>())) return schema_error(at, std::string(key) + " is a number");
        const double x = value.get<double>();
        const bool exclusive = key[0] == 'e', lower = std::string(key).find("inimum") != std::string::npos;
        double bound = 0;
        if (integer) {
            bound = lower ? (exclusive ? std::floor(x) + 1 : std::ceil(x)) : (exclusive ? std::ceil(x) - 1 : std::floor(x));
        } else {
            if (exclusive) return schema_error(at, std::string(key) + " is supported for integers only");
            if (!schema_is_whole(x)) return schema_error(at, std::string(key) + " " + value.dump() +
                                                                 ": only whole-number bounds are supported for numbers");
            bound = x;
        }
        if (lower) low = low ? std::max(*low, bound) : bound;
        else high = high ? std::min(*high, bound) : bound;
    }
    std::pair<std::optional<int64_t>, std::optional<int64_t>> bounds;
    if (low) {
        if (*low > most) return schema_error(pointer, "the lower bound is past the grammar's " + std::to_string(json_schema_parts::kMaxIntegerDigits) + " digits");
        if (*low >= -most) bounds.first = int64_t(*low);
    }
    if (high) {
        if (*high < -most) return schema_error(pointer, "the upper bound is past the grammar's " + std::to_string(json_schema_parts::kMaxIntegerDigits) + " digits");
        if (*high <= most) bounds.second = int64_t(*high);
    }
    if (bounds.first && bounds.second && *bounds.first > *bounds.second)
        return schema_error(pointer, "no number lies between the bounds: the schema accepts nothing");
    return bounds;
}

Result<ObjectShape> object_shape(const ordered_json& schema, const std::string& pointer, const JsonSchemaLimits& limits) {
    ObjectShape shape;
    std::vector<std::string> required;
    if (schema.contains("required")) {
        const ordered_json& list = schema["required"];
        if (!list.is_array()) return schema_error(pointer + "/required", "required is an array of names");
        for (const auto& name : list) {
            if (!name.is_string()) return schema_error(pointer + "/required", "required names are strings");
            required.push_back(name.get<std::string>());
        }
    }
    auto is_required = [&](const std::string& name) { return std::find(required.begin(), required.end(), name) != required.end(); };
    if (schema.contains("properties")) {
        const ordered_json& properties = schema["properties"];
        if (!properties.is_object()) return schema_error(pointer + "/properties", "properties is an object");
        if (properties.size() > limits.max_properties)
            return schema_error(pointer + "/properties", std::to_string(properties.size()) + " properties, over the limit of " +
                                                             std::to_string(limits.max_properties) + " (JsonSchemaLimits::max_properties)");
        for (const auto& [name, property] : properties.items())
            shape.properties.push_back({name, &property, pointer + "/properties/" + escape_pointer(name), is_required(name)});
    }
    const bool declared = schema.contains("properties") || schema.contains("required");
    bool extras_forbidden_explicitly = false;
    if (schema.contains("additionalProperties")) {
        const ordered_json& extra = schema["additionalProperties"];
        shape.additional_pointer = pointer + "/additionalProperties";
        if (extra == ordered_json(false)) extras_forbidden_explicitly = true;
        else if (extra == ordered_json(true)) shape.additional = &schema_true();
        else shape.additional = &extra;
    } else if (!declared) {
        shape.additional = &schema_true();
        shape.additional_pointer = pointer;
    }
    for (const std::string& name : required) {
        const bool listed = std::any_of(shape.properties.begin(), shape.properties.end(),
                                        [&](const ObjectProperty& p) { return p.name == name; });
        if (listed) continue;
        if (extras_forbidden_explicitly)
            return schema_error(pointer + "/required", "'" + name + "' is required but additionalProperties is false: the schema accepts nothing");
        shape.properties.push_back({name, shape.additional ? shape.additional : &schema_true(),
                                    pointer + "/required", true});
    }
    if (shape.properties.size() > limits.max_properties)
        return schema_error(pointer + "/required", "over the limit of " + std::to_string(limits.max_properties) + " properties");
    return shape;
}

} // namespace cflow::json_schema_merge
