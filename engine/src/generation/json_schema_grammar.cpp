#include "cflow/engine/generation/json_schema_grammar.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "cflow/engine/generation/json_grammar.h"
#include "cflow/formats/json_depth.h"
#include "json_schema_grammar_merge.h"
#include "json_schema_grammar_parts.h"

namespace cflow {
namespace {

using nlohmann::ordered_json;
namespace parts = json_schema_parts;
namespace merge = json_schema_merge;

// Generic JSON values (the empty schema, additional properties that are `true`) nest at most this
// deep: a model cannot open brackets forever, and any real reply nests far less.
constexpr int kSchemaAnyValueDepth = 6;

bool schema_rule_name_ok(std::string_view name) {
    if (name.empty()) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    });
}

// A readable rule-name hint from a JSON pointer: its last segments, [a-z0-9-] only.
std::string schema_hint(const std::string& pointer) {
    std::string hint;
    for (char c : pointer) {
        const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (keep) hint += c;
        else if (!hint.empty() && hint.back() != '-') hint += '-';
    }
    while (!hint.empty() && hint.back() == '-') hint.pop_back();
    if (hint.size() > 32) hint = hint.substr(hint.size() - 32);
    while (!hint.empty() && hint.front() == '-') hint.erase(hint.begin());
    return hint.empty() ? "value" : hint;
}

// What visit() returns for a part of the schema that accepts nothing under the recursion cap:
// the enclosing array, optional property or anyOf branch leaves it out.
const std::string kAcceptsNothing;

class SchemaToGbnf {
public:
    SchemaToGbnf(const ordered_json& document, std::string prefix, const JsonSchemaLimits& limits)
        : document_(document), prefix_(std::move(prefix)), limits_(limits) {}

    Result<std::string> convert() {
        auto entry = visit(document_, "", 0);
        if (!entry) return entry.take_error();
        if (entry->empty())
            return schema_error("", "no value fits within the recursion cap (JsonSchemaLimits::max_recursion_depth " +
                                        std::to_string(limits_.max_recursion_depth) + ")");
        std::string text = prefix_ + " ::= " + *entry + "\n";
        rule_pointer_.insert(rule_pointer_.begin(), "");
        for (const Rule& rule : rules_) text += rule.name + " ::= " + rule.body + "\n";
        return text;
    }

    // [lines] the schema pointer each GBNF line came from (line 1 is the entry rule).
    const std::vector<std::string>& line_pointers() const { return rule_pointer_; }

private:
    struct Rule {
        std::string name;
        std::string body;
    };

    Error schema_error(const std::string& pointer, const std::string& what) const {
        return merge::schema_error(pointer, what);
    }

    Result<std::string> add_rule(const std::string& pointer, const std::string& body) {
        auto name = reserve_rule(pointer);
        if (!name) return name;
        rules_[rule_index_[*name]].body = body;
        return name;
    }
    Result<std::string> reserve_rule(const std::string& pointer, std::string hint = {}) {
        if (rules_.size() >= limits_.max_rules)
            return schema_error(pointer, "the grammar needs more than " + std::to_string(limits_.max_rules) +
                                             " rules (JsonSchemaLimits::max_rules)");
        if (hint.empty()) hint = schema_hint(pointer);
        std::string name = prefix_ + "-" + hint;
        if (rule_index_.count(name)) name += "-" + std::to_string(rules_.size());
        rule_index_[name] = rules_.size();
        rules_.push_back({name, ""});
        rule_pointer_.push_back(pointer);
        return name;
    }
    // A shared helper rule (ws, string, number, a format...), defined once.
    std::string shared(const std::string& suffix, const std::string& body) {
        const std::string name = prefix_ + "-" + suffix;
        if (!rule_index_.count(name)) {
            rule_index_[name] = rules_.size();
            rules_.push_back({name, body});
            rule_pointer_.push_back("");
        }
        return name;
    }

    // Between tokens: nothing, a space, or one line break and an indent (pretty-printed JSON);
    // a model cannot pad a reply with blank lines.
    std::string ws() {
        return shared("ws", "( \" \" | \"\\n\" [ \\t]{0," + std::to_string(kJsonGrammarMaxWhitespace) + "} )?");
    }
    std::string string_char() {
        const std::string hex = shared("hex", "[0-9a-fA-F]");
        // \u escapes of surrogates are left out: a lone one is not text, and a pair would count
        // as two characters here but one for minLength.
        const std::string unicode = shared("unicode", "[0-9a-cA-Ce-fE-F] " + hex + " " + hex + " " + hex + " | [dD] [0-7] " + hex + " " + hex);
        return shared("char", "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" " + unicode + " )");
    }
    std::string bounded_string(size_t min_chars, std::optional<size_t> max_chars) {
        if (!max_chars && limits_.max_string_chars > 0) max_chars = std::max(min_chars, limits_.max_string_chars);
        const std::string c = string_char();
        std::string repeat;
        if (!max_chars) repeat = min_chars == 0 ? c + "*" : c + "{" + std::to_string(min_chars) + ",}";
        else repeat = c + "{" + std::to_string(min_chars) + "," + std::to_string(*max_chars) + "}";
        if (min_chars == 0 && !max_chars) return shared("string", "\"\\\"\" " + repeat + " \"\\\"\"");
        return shared("string-" + std::to_string(min_chars) + "-" + (max_chars ? std::to_string(*max_chars) : "up"),
                      "\"\\\"\" " + repeat + " \"\\\"\"");
    }
    std::string plain_number() {
        return shared("number", "\"-\"? ( \"0\" | [1-9] [0-9]{0," + std::to_string(parts::kMaxIntegerDigits - 1) +
                                    "} ) ( \".\" [0-9]{1," + std::to_string(parts::kMaxFractionDigits) +
                                    "} )? ( [eE] [-+]? [0-9]{1,2} )?");
    }
    std::string plain_integer() {
        return shared("integer", "\"-\"? ( \"0\" | [1-9] [0-9]{0," + std::to_string(parts::kMaxIntegerDigits - 1) + "} )");
    }
    // Any JSON value nesting at most `depth` more levels.
    std::string any_value(int depth = kSchemaAnyValueDepth) {
        const std::string d = std::to_string(depth);
        const std::string scalars = bounded_string(0, std::nullopt) + " | " + plain_number() + " | \"true\" | \"false\" | \"null\"";
        if (depth == 0) return shared("any-0", scalars);
        const std::string inner = any_value(depth - 1), w = ws(), key = bounded_string(0, std::nullopt);
        const std::string object = shared("any-object-" + d, "\"{\" " + w + " ( " + key + " " + w + " \":\" " + w + " " + inner + " " + w +
                                                                 " ( \",\" " + w + " " + key + " " + w + " \":\" " + w + " " + inner + " " + w + " )" +
                                                                 items_repeat_cap() + " )? \"}\"");
        const std::string array = shared("any-array-" + d, "\"[\" " + w + " ( " + inner + " " + w + " ( \",\" " + w + " " + inner + " " + w +
                                                               " )" + items_repeat_cap() + " )? \"]\"");
        return shared("any-" + d, object + " | " + array + " | " + scalars);
    }
    // `*`, or {0,n-1} when arrays without maxItems and objects' extra keys are capped
    // (JsonSchemaLimits::max_array_items).
    std::string items_repeat_cap() const {
        if (limits_.max_array_items == 0) return "*";
        return "{0," + std::to_string(limits_.max_array_items - 1) + "}";
    }

    Result<std::string> visit(const ordered_json& schema, const std::string& pointer, size_t depth);
    Result<std::string> visit_ref(const ordered_json& schema, const std::string& pointer, size_t depth);
    Result<std::string> visit_typed(const ordered_json& schema, const std::string& pointer, size_t depth);
    Result<std::string> visit_type(const std::string& type, const ordered_json& schema, const std::string& pointer, size_t depth);
    Result<std::string> visit_string(const ordered_json& schema, const std::string& pointer);
    Result<std::string> visit_number(bool integer, const ordered_json& schema, const std::string& pointer);
    Result<std::string> visit_array(const ordered_json& schema, const std::string& pointer, size_t depth);
    Result<std::string> visit_object(const ordered_json& schema, const std::string& pointer, size_t depth);
    Result<std::string> literal_of(const ordered_json& value, const std::string& pointer);

    const ordered_json& document_;
    std::string prefix_;
    JsonSchemaLimits limits_;
    std::vector<Rule> rules_;                      // [rules] in the order they were named
    std::map<std::string, size_t> rule_index_;     // name → index into rules_
    std::vector<std::string> rule_pointer_;        // [lines] schema pointer of each line's rule
    std::map<std::string, std::string> ref_rules_; // $ref target pointer → its rule
    std::set<std::string> refs_without_progress_;  // $ref targets entered since the last '{' or '['
    std::map<std::string, size_t> ref_levels_;     // $ref target pointer → how many of it are being expanded
};

Result<std::string> SchemaToGbnf::literal_of(const ordered_json& value, const std::string& pointer) {
    try {
        return parts::gbnf_literal(value.dump(-1, ' ', false, ordered_json::error_handler_t::strict));
    } catch (const std::exception& error) {
        return schema_error(pointer, std::string("the value cannot be written as JSON: ") + error.what());
    }
}

Result<std::string> SchemaToGbnf::visit(const ordered_json& schema, const std::string& pointer, size_t depth) {
    if (depth > limits_.max_depth)
        return schema_error(pointer, "schemas nest deeper than " + std::to_string(limits_.max_depth) +
                                         " (JsonSchemaLimits::max_depth)");
    if (schema.is_boolean()) {
        if (!schema.get<bool>()) return schema_error(pointer, "the schema false accepts nothing");
        return any_value();
    }
    if (!schema.is_object()) return schema_error(pointer, "a schema is an object or a boolean");
    if (auto refused = merge::refused_keyword(schema, pointer); !refused) return refused.take_error();
    if (schema.contains("$ref")) return visit_ref(schema, pointer, depth);
    if (schema.contains("allOf")) {
        auto merged = merge::merge_all_of(document_, schema, pointer);
        if (!merged) return merged.take_error();
        return visit(*merged, pointer, depth + 1);
    }
    if (schema.contains("const")) return literal_of(schema["const"], pointer + "/const");
    if (schema.contains("enum")) {
        const ordered_json& values = schema["enum"];
        if (!values.is_array()) return schema_error(pointer + "/enum", "enum is an array of values");
        std::string body;
        for (const ordered_json& value : values) {
            if (!merge::value_has_type(value, schema)) continue;  // the type keyword refuses it anyway
            auto literal = literal_of(value, pointer + "/enum");
            if (!literal) return literal;
            body += (body.empty() ? "" : " | ") + *literal;
        }
        if (body.empty()) return schema_error(pointer + "/enum", "no value of the enum is allowed: the schema accepts nothing");
        return add_rule(pointer, body);
    }
    for (const char* keyword : {"anyOf", "oneOf"}) {
        if (!schema.contains(keyword)) continue;
        const std::string at = pointer + "/" + keyword;
        const ordered_json& branches = schema[keyword];
        if (!branches.is_array() || branches.empty())
            return schema_error(at, std::string(keyword) + " is a non-empty array of schemas");
        // Keywords beside anyOf apply to every branch: each branch is the parent merged with it.
        const ordered_json parent = merge::without(schema, keyword);
        const bool parent_constrains = merge::constrains(parent);
        std::string body;
        for (size_t i = 0; i < branches.size(); ++i) {
            const std::string branch_at = at + "/" + std::to_string(i);
            Result<std::string> branch = std::string();
            if (parent_constrains) {
                ordered_json both = ordered_json::object();
                both["allOf"] = ordered_json::array({parent, branches[i]});
                auto merged = merge::merge_all_of(document_, both, branch_at);
                if (!merged) return merged.take_error();
                branch = visit(*merged, branch_at, depth + 1);
            } else {
                branch = visit(branches[i], branch_at, depth + 1);
            }
            if (!branch) return branch;
            if (branch->empty()) continue;
            body += (body.empty() ? "" : " | ") + *branch;
        }
        if (body.empty()) return kAcceptsNothing;
        return add_rule(pointer, body);
    }
    return visit_typed(schema, pointer, depth);
}

Result<std::string> SchemaToGbnf::visit_ref(const ordered_json& schema, const std::string& pointer, size_t depth) {
    const std::string at = pointer + "/$ref";
    for (const auto& [key, value] : schema.items())
        if (key != "$ref" && !merge::is_annotation(key))
            return schema_error(pointer + "/" + merge::escape_pointer(key),
                                "'" + key + "' beside $ref is not supported (wrap them in allOf)");
    auto target = merge::resolve_ref(document_, schema["$ref"], at);
    if (!target) return target.take_error();
    const std::string target_pointer = merge::ref_pointer(schema["$ref"]);
    if (refs_without_progress_.count(target_pointer))
        return schema_error(at, "$ref '" + target_pointer + "' refers back to itself before any value begins: the schema has no base case");
    // Unbounded: one rule per target, recursion refers back to it. With a recursion cap each
    // level of the target gets its own rule and the level past the cap accepts nothing.
    const size_t level = ref_levels_[target_pointer];
    if (limits_.max_recursion_depth > 0 && level >= limits_.max_recursion_depth) return kAcceptsNothing;
    const std::string key = limits_.max_recursion_depth > 0 ? target_pointer + "@" + std::to_string(level) : target_pointer;
    if (auto found = ref_rules_.find(key); found != ref_rules_.end()) return found->second;
    auto name = reserve_rule(target_pointer.empty() ? "/root" : target_pointer, target_pointer.empty() ? "self" : "");
    if (!name) return name;
    ref_rules_[key] = *name;
    refs_without_progress_.insert(target_pointer);
    ++ref_levels_[target_pointer];
    auto body = visit(**target, target_pointer, depth + 1);
    --ref_levels_[target_pointer];
    refs_without_progress_.erase(target_pointer);
    if (!body) return body;
    if (body->empty()) {
        ref_rules_[key] = kAcceptsNothing;
        rules_[rule_index_[*name]].body = "\"null\"";  // never referenced: the levels above drop it
        return kAcceptsNothing;
    }
    rules_[rule_index_[*name]].body = *body;
    return name;
}

Result<std::string> SchemaToGbnf::visit_typed(const ordered_json& schema, const std::string& pointer, size_t depth) {
    auto types = merge::schema_types(schema, pointer);
    if (!types) return types.take_error();
    if (types->empty()) return any_value();
    std::string body;
    for (const std::string& type : *types) {
        auto one = visit_type(type, schema, pointer, depth);
        if (!one) return one;
        if (one->empty()) continue;
        body += (body.empty() ? "" : " | ") + *one;
    }
    if (types->size() == 1 || body.empty()) return body;
    return add_rule(pointer, body);
}

Result<std::string> SchemaToGbnf::visit_type(const std::string& type, const ordered_json& schema, const std::string& pointer,
                                             size_t depth) {
    if (type == "null") return std::string("\"null\"");
    if (type == "boolean") return shared("boolean", "\"true\" | \"false\"");
    if (type == "string") return visit_string(schema, pointer);
    if (type == "integer") return visit_number(true, schema, pointer);
    if (type == "number") return visit_number(false, schema, pointer);
    // A bracket consumes input: recursion past it has a base to stand on.
    const auto saved = std::move(refs_without_progress_);
    refs_without_progress_.clear();
    auto result = type == "array" ? visit_array(schema, pointer, depth) : visit_object(schema, pointer, depth);
    refs_without_progress_ = saved;
    return result;
}

Result<std::string> SchemaToGbnf::visit_string(const ordered_json& schema, const std::string& pointer) {
    if (schema.contains("format")) {
        const ordered_json& format = schema["format"];
        if (!format.is_string() || !parts::is_supported_format(format.get<std::string>()))
            return schema_error(pointer + "/format", "format " + format.dump() +
                                                         " is not supported (date, time, date-time and uuid are)");
        if (schema.contains("minLength") || schema.contains("maxLength"))
            return schema_error(pointer + "/format", "minLength / maxLength beside a format are not supported");
        const auto rules = parts::format_rules(format.get<std::string>(), prefix_ + "-");
        for (const auto& rule : rules) shared(rule.suffix, rule.body);
        return prefix_ + "-" + rules.front().suffix;
    }
    auto bounds = merge::length_bounds(schema, pointer, "minLength", "maxLength", limits_);
    if (!bounds) return bounds.take_error();
    return bounded_string(bounds->first, bounds->second);
}

Result<std::string> SchemaToGbnf::visit_number(bool integer, const ordered_json& schema, const std::string& pointer) {
    auto bounds = merge::number_bounds(schema, pointer, integer);
    if (!bounds) return bounds.take_error();
    if (!bounds->first && !bounds->second) return integer ? plain_integer() : plain_number();
    const std::string body = integer ? parts::integer_in_range(bounds->first, bounds->second)
                                     : parts::decimal_in_range(bounds->first, bounds->second);
    return add_rule(pointer + (integer ? "/integer" : "/number"), body);
}

Result<std::string> SchemaToGbnf::visit_array(const ordered_json& schema, const std::string& pointer, size_t depth) {
    std::vector<std::string> prefix_items;  // [prefixItems] each position's expression
    if (schema.contains("prefixItems")) {
        const ordered_json& list = schema["prefixItems"];
        if (!list.is_array()) return schema_error(pointer + "/prefixItems", "prefixItems is an array of schemas");
        for (size_t i = 0; i < list.size(); ++i) {
            auto item = visit(list[i], pointer + "/prefixItems/" + std::to_string(i), depth + 1);
            if (!item) return item;
            if (item->empty()) break;  // no array gets past position i
            prefix_items.push_back(*item);
        }
    }
    std::optional<std::string> rest_item;  // absent: items false, no more than the prefix
    if (!schema.contains("items")) {
        rest_item = any_value();
    } else if (schema["items"].is_boolean() && !schema["items"].get<bool>()) {
        rest_item.reset();
    } else if (schema["items"].is_array()) {
        return schema_error(pointer + "/items", "items as an array (draft 4-7 tuples) is not supported: use prefixItems");
    } else {
        auto item = visit(schema["items"], pointer + "/items", depth + 1);
        if (!item) return item;
        if (!item->empty()) rest_item = *item;
    }
    const bool prefix_cut = schema.contains("prefixItems") && prefix_items.size() < schema["prefixItems"].size();
    if (prefix_cut) rest_item.reset();
    auto bounds = merge::length_bounds(schema, pointer, "minItems", "maxItems", limits_);
    if (!bounds) return bounds.take_error();
    const size_t min_items = bounds->first;
    std::optional<size_t> max_items = bounds->second;
    if (!rest_item) max_items = std::min(max_items.value_or(prefix_items.size()), prefix_items.size());
    if (!max_items && limits_.max_array_items > 0) max_items = std::max(min_items, limits_.max_array_items);
    if (max_items && *max_items < min_items) {
        if (limits_.max_recursion_depth > 0) return kAcceptsNothing;  // the cap left too few item kinds
        return schema_error(pointer + "/minItems", "more items are required than the array may hold: the schema accepts nothing");
    }

    const std::string w = ws();
    auto element = [&](size_t i) { return (i < prefix_items.size() ? prefix_items[i] : *rest_item) + " " + w; };
    // Built from the back: tail(i) is what may follow once i elements are written.
    std::string tail;
    const size_t k = prefix_items.size();
    if (rest_item && (!max_items || *max_items > k)) {
        const size_t low = min_items > k ? min_items - k : 0;
        const std::string repeat = max_items ? "{" + std::to_string(low) + "," + std::to_string(*max_items - k) + "}"
                                             : (low == 0 ? std::string("*") : "{" + std::to_string(low) + ",}");
        if (k > 0) {
            tail = "( \",\" " + w + " " + element(k) + " )" + repeat;
        } else {
            // No element before the first: it goes without a comma.
            const std::string more = max_items ? "{" + std::to_string(low ? low - 1 : 0) + "," + std::to_string(*max_items - 1) + "}"
                                               : (low <= 1 ? std::string("*") : "{" + std::to_string(low - 1) + ",}");
            tail = "( " + element(0) + " ( \",\" " + w + " " + element(0) + " )" + more + " )" + (low == 0 ? "?" : "");
        }
    }
    for (size_t i = std::min(k, max_items.value_or(k)); i-- > 0;) {
        const std::string item = (i == 0 ? std::string() : "\",\" " + w + " ") + element(i) + (tail.empty() ? "" : " " + tail);
        tail = i < min_items ? item : "( " + item + " )?";
    }
    return add_rule(pointer, "\"[\" " + w + (tail.empty() ? "" : " " + tail) + " \"]\"");
}

Result<std::string> SchemaToGbnf::visit_object(const ordered_json& schema, const std::string& pointer, size_t depth) {
    auto shape = merge::object_shape(schema, pointer, limits_);
    if (!shape) return shape.take_error();
    const std::string w = ws();
    std::vector<std::string> members;  // [properties] `"key" ws ":" ws value ws`
    std::vector<std::string> names;
    std::vector<bool> required_members;  // [properties]
    std::vector<std::string> member_pointers;  // [properties]
    for (const auto& property : shape->properties) {
        auto value = visit(*property.schema, property.pointer, depth + 1);
        if (!value) return value;
        if (value->empty()) {
            if (property.required) return kAcceptsNothing;
            continue;
        }
        auto key = literal_of(ordered_json(property.name), property.pointer);
        if (!key) return key;
        members.push_back(*key + " " + w + " \":\" " + w + " " + *value + " " + w);
        names.push_back(property.name);
        required_members.push_back(property.required);
        member_pointers.push_back(property.pointer);
    }
    std::string extra;  // one additional member, or empty when none may come
    if (shape->additional) {
        auto value = visit(*shape->additional, shape->additional_pointer, depth + 1);
        if (!value) return value;
        std::string key = bounded_string(0, std::nullopt);
        if (!value->empty() && !names.empty()) {
            auto entry = reserve_rule(pointer + "/additionalProperties", schema_hint(pointer) + "-extra-key");
            if (!entry) return entry;
            const auto rules = parts::key_not_in_rules(names, *entry, limits_.max_string_chars);
            if (rules_.size() + rules.size() > limits_.max_rules)
                return schema_error(pointer, "the grammar needs more than " + std::to_string(limits_.max_rules) + " rules");
            rules_[rule_index_[*entry]].body = rules.front().body;
            for (size_t i = 1; i < rules.size(); ++i) shared(entry->substr(prefix_.size() + 1) + rules[i].suffix, rules[i].body);
            key = *entry;
        }
        if (!value->empty()) extra = key + " " + w + " \":\" " + w + " " + *value + " " + w;
    }
    // first(i): members from i on when none is written yet; rest(i): after one is. Each optional
    // member may be skipped and commas go only between written members.
    const size_t n = members.size();
    std::vector<std::string> first(n + 1), rest(n + 1);
    rest[n] = extra.empty() ? "" : "( \",\" " + w + " " + extra + " )" + items_repeat_cap();
    first[n] = extra.empty() ? "" : "( " + extra + " " + rest[n] + " )?";
    for (size_t i = n; i-- > 0;) {
        const bool required = required_members[i];
        const std::string after = rest[i + 1].empty() ? "" : " " + rest[i + 1];
        std::string rest_body = required ? "\",\" " + w + " " + members[i] + after
                                         : "( \",\" " + w + " " + members[i] + " )?" + after;
        std::string first_body = required ? members[i] + after
                                          : members[i] + after + (first[i + 1].empty() ? " | \"\"" : " | " + first[i + 1]);
        if (i > 0) {
            auto r = add_rule(member_pointers[i], rest_body);
            if (!r) return r;
            rest[i] = *r;
        }
        auto f = add_rule(member_pointers[i], "( " + first_body + " )");
        if (!f) return f;
        first[i] = *f;
    }
    return add_rule(pointer, "\"{\" " + w + (first[0].empty() ? "" : " " + first[0]) + " \"}\"");
}

// The entry rule's name owns the names of every rule it needs.
Result<std::string> schema_rules(std::string_view schema_json, std::string_view rule_name, const JsonSchemaLimits& limits,
                                 std::vector<std::string>* line_pointers) {
    if (!schema_rule_name_ok(rule_name))
        return make_error("JSON schema: rule name '" + std::string(rule_name) + "' is not a GBNF name ([a-zA-Z0-9-])");
    if (schema_json.size() > limits.max_schema_bytes)
        return make_error("JSON schema: " + std::to_string(schema_json.size()) + " bytes, over the limit of " +
                          std::to_string(limits.max_schema_bytes));
    if (Status depth = check_json_depth(schema_json, "JSON schema"); !depth) return depth.take_error();
    try {
        const ordered_json document = ordered_json::parse(schema_json, nullptr, false);
        if (document.is_discarded()) return make_error("JSON schema: not valid JSON");
        SchemaToGbnf converter(document, std::string(rule_name), limits);
        auto text = converter.convert();
        if (text && line_pointers) *line_pointers = converter.line_pointers();
        return text;
    } catch (const std::bad_alloc&) {
        return out_of_memory_error("JSON schema");
    } catch (const std::exception& error) {
        return make_error(ErrorKind::Internal, std::string("JSON schema: ") + error.what());
    }
}

} // namespace

Result<std::string> json_schema_gbnf_rules(std::string_view schema_json, std::string_view rule_name, const JsonSchemaLimits& limits) {
    return schema_rules(schema_json, rule_name, limits, nullptr);
}

Result<std::string> json_schema_gbnf(std::string_view schema_json, const JsonSchemaLimits& limits) {
    return schema_rules(schema_json, "root", limits, nullptr);
}

Result<std::shared_ptr<const Grammar>> json_schema_grammar(std::string_view schema_json, const JsonSchemaLimits& limits) {
    std::vector<std::string> line_pointers;
    auto text = schema_rules(schema_json, "root", limits, &line_pointers);
    if (!text) return text.take_error();
    auto parsed = parse_grammar(*text);
    if (parsed) return std::shared_ptr<const Grammar>(std::make_shared<Grammar>(std::move(parsed).value()));
    // The parser names a line of the generated grammar; say which part of the schema wrote it.
    const std::string& message = parsed.error();
    size_t line = 0;
    if (message.rfind("grammar:", 0) == 0) line = size_t(std::strtoul(message.c_str() + 8, nullptr, 10));
    std::string pointer = line >= 1 && line <= line_pointers.size() ? line_pointers[line - 1] : "";
    return make_error(parsed.kind(), "JSON schema #" + pointer + ": the schema's grammar is refused (" + message +
                                         "); e.g. a recursion with no base case accepts no finite value");
}

} // namespace cflow
