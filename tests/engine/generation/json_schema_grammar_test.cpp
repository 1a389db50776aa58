// JSON Schema → GBNF (issue 33): the grammar a schema converts to accepts instances that validate
// and refuses ones that do not (checked by the grammar matcher on whole byte strings); refused
// schemas name the JSON pointer of the offending keyword; hostile schemas fail fast; every schema
// of the corpus (tests/data/json-schemas) converts, and random walks through its grammar over a
// small vocabulary always finish with a JSON document (tests/engine/schema-node validates the
// CLI's constrained outputs with ajv).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cflow/engine/generation/grammar_matcher.h"
#include "cflow/engine/generation/grammar_vocabulary.h"
#include "cflow/engine/generation/json_schema_grammar.h"

namespace cflow {
namespace {

std::shared_ptr<const GrammarVocabulary> schema_test_byte_vocabulary() {
    return std::make_shared<const GrammarVocabulary>(std::vector<std::string>{"x"}, std::vector<bool>{});
}

// Whether the schema's grammar takes `text` whole and may end there.
bool schema_accepts(const std::string& schema, const std::string& text) {
    auto grammar = json_schema_grammar(schema);
    EXPECT_TRUE(grammar.ok()) << schema << ": " << (grammar.ok() ? "" : grammar.error());
    if (!grammar) return false;
    auto matcher = GrammarMatcher::create(*grammar, schema_test_byte_vocabulary());
    EXPECT_TRUE(matcher.ok());
    if (!matcher) return false;
    return matcher->accept_bytes(text).ok() && matcher->is_complete();
}

std::string schema_refusal(const std::string& schema, const JsonSchemaLimits& limits = {}) {
    auto grammar = json_schema_grammar(schema, limits);
    EXPECT_FALSE(grammar.ok()) << "converted: " << schema;
    if (grammar.ok()) return "";
    EXPECT_EQ(grammar.kind(), ErrorKind::InvalidInput) << grammar.error();
    return grammar.error();
}

TEST(JsonSchemaGrammar, RequiredAndOptionalPropertiesInOrderWithCommasRight) {
    const std::string schema = R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
        "c": {"type": "boolean"}}, "required": ["b"]})";
    for (const char* ok : {R"({"b":"x"})", R"({"a":1,"b":"x"})", R"({"b":"x","c":true})", R"({"a":-5,"b":"","c":false})",
                           "{ \"a\" : 1 ,\n  \"b\" : \"y\" }"})
        EXPECT_TRUE(schema_accepts(schema, ok)) << ok;
    for (const char* bad : {"{}", R"({"a":1})", R"({"b":"x",})", R"({,"b":"x"})", R"({"a":1,,"b":"x"})", R"({"b":1})",
                            R"({"b":"x","d":1})", R"({"b":"x","a":1})", R"({"b":"x","b":"y"})", R"([])", R"({"b":"x"} )"})
        EXPECT_FALSE(schema_accepts(schema, bad)) << bad;
    const std::string all_optional = R"({"type":"object","properties":{"a":{"type":"null"},"b":{"type":"null"},"c":{"type":"null"}}})";
    for (const char* ok : {"{}", R"({"b":null})", R"({"a":null,"c":null})", R"({"c":null})", R"({"a":null,"b":null,"c":null})"})
        EXPECT_TRUE(schema_accepts(all_optional, ok)) << ok;
    for (const char* bad : {R"({,})", R"({"a":null,})", R"({"c":null,"a":null})"}) EXPECT_FALSE(schema_accepts(all_optional, bad)) << bad;
}

TEST(JsonSchemaGrammar, AdditionalPropertiesFalseTrueAndSchema) {
    const std::string open = R"({"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],"additionalProperties":true})";
    EXPECT_TRUE(schema_accepts(open, R"({"id":1,"note":"x","n":[1,{"a":null}]})"));
    EXPECT_TRUE(schema_accepts(open, R"({"id":1,"i":2,"idx":3})"));
    EXPECT_FALSE(schema_accepts(open, R"({"id":1,"id":2})")) << "a declared key is not written twice as an extra";
    const std::string map = R"({"type":"object","additionalProperties":{"type":"number"}})";
    EXPECT_TRUE(schema_accepts(map, R"({"x":1.5,"y":-2e3})"));
    EXPECT_TRUE(schema_accepts(map, "{}"));
    EXPECT_FALSE(schema_accepts(map, R"({"x":"1"})"));
    const std::string closed = R"({"type":"object","properties":{"id":{"type":"integer"}},"additionalProperties":false})";
    EXPECT_FALSE(schema_accepts(closed, R"({"id":1,"x":2})"));
    EXPECT_FALSE(schema_accepts(R"({"type":"object","properties":{"id":{"type":"integer"}}})", R"({"x":2})"))
        << "the default for an object with properties is no extra keys";
    EXPECT_TRUE(schema_accepts(R"({"type":"object"})", R"({"anything":[true,null,"s"]})"));
}

TEST(JsonSchemaGrammar, EnumConstTypeListsAndNull) {
    const std::string enums = R"({"enum":["red","green",3,null,{"k":[1]}]})";
    for (const char* ok : {R"("red")", R"("green")", "3", "null", R"({"k":[1]})"}) EXPECT_TRUE(schema_accepts(enums, ok)) << ok;
    for (const char* bad : {R"("blue")", "4", R"("Red")", "true"}) EXPECT_FALSE(schema_accepts(enums, bad)) << bad;
    EXPECT_TRUE(schema_accepts(R"({"const":"tab\there"})", R"("tab\there")"));
    EXPECT_FALSE(schema_accepts(R"({"const":"x"})", R"("y")"));
    const std::string nullable = R"({"type":["string","null"],"maxLength":2})";
    EXPECT_TRUE(schema_accepts(nullable, "null"));
    EXPECT_TRUE(schema_accepts(nullable, R"("ab")"));
    EXPECT_FALSE(schema_accepts(nullable, R"("abc")"));
    EXPECT_FALSE(schema_accepts(nullable, "1"));
    EXPECT_TRUE(schema_accepts(R"({"type":"boolean"})", "false"));
    EXPECT_FALSE(schema_accepts(R"({"type":"boolean"})", "0"));
    EXPECT_FALSE(schema_accepts(R"({"type":"string","enum":["a",1]})", "1")) << "enum values of other types are dropped";
}

TEST(JsonSchemaGrammar, StringLengthsCountCharactersAndEscapes) {
    const std::string schema = R"({"type":"string","minLength":2,"maxLength":3})";
    for (const char* ok : {R"("ab")", R"("abc")", R"("\n\"")", R"("é€")", R"("\u00e9x")"}) EXPECT_TRUE(schema_accepts(schema, ok)) << ok;
    for (const char* bad : {R"("a")", R"("abcd")", "\"a\nb\"", R"("\ud83d\ude00")", R"("\x")"})
        EXPECT_FALSE(schema_accepts(schema, bad)) << bad;
}

TEST(JsonSchemaGrammar, FormatsAreExact) {
    const std::string date = R"({"type":"string","format":"date"})";
    for (const char* ok : {R"("2024-02-29")", R"("2000-02-29")", R"("2023-12-31")", R"("1999-04-30")", R"("0000-02-29")"})
        EXPECT_TRUE(schema_accepts(date, ok)) << ok;
    for (const char* bad : {R"("2023-02-29")", R"("1900-02-29")", R"("2023-04-31")", R"("2023-13-01")", R"("2023-00-10")",
                            R"("2023-01-00")", R"("23-01-01")", R"("2023-1-01")"})
        EXPECT_FALSE(schema_accepts(date, bad)) << bad;
    const std::string time = R"({"type":"string","format":"time"})";
    for (const char* ok : {R"("23:59:59Z")", R"("00:00:00.123+05:30")", R"("12:30:00-08:00")"}) EXPECT_TRUE(schema_accepts(time, ok)) << ok;
    for (const char* bad : {R"("24:00:00Z")", R"("12:60:00Z")", R"("12:00:00")", R"("12:00Z")"}) EXPECT_FALSE(schema_accepts(time, bad)) << bad;
    const std::string date_time = R"({"type":"string","format":"date-time"})";
    EXPECT_TRUE(schema_accepts(date_time, R"("2026-12-07T06:20:54Z")"));
    EXPECT_FALSE(schema_accepts(date_time, R"("2026-12-07 06:20:54Z")"));
    const std::string uuid = R"({"type":"string","format":"uuid"})";
    EXPECT_TRUE(schema_accepts(uuid, R"("123e4567-e89b-12d3-a456-426614174000")"));
    EXPECT_FALSE(schema_accepts(uuid, R"("123e4567e89b12d3a456426614174000")"));
    EXPECT_FALSE(schema_accepts(uuid, R"("123e4567-e89b-12d3-a456-42661417400g")"));
}

TEST(JsonSchemaGrammar, IntegerRangesMatchBruteForce) {
    struct Range {
        std::string keywords;
        long long lo, hi;  // inclusive, over the probed -1200..1200
    };
    const std::vector<Range> ranges = {
        {R"("minimum":0)", 0, 1200},       {R"("minimum":1,"maximum":100)", 1, 100}, {R"("minimum":-37,"maximum":5)", -37, 5},
        {R"("minimum":-999,"maximum":-10)", -999, -10}, {R"("maximum":17)", -1200, 17}, {R"("exclusiveMinimum":7,"exclusiveMaximum":1013)", 8, 1012},
        {R"("minimum":2.5,"maximum":99.9)", 3, 99}, {R"("minimum":0,"maximum":0)", 0, 0}, {R"("minimum":95,"maximum":1105)", 95, 1105}};
    for (const Range& range : ranges) {
        const std::string schema = R"({"type":"integer",)" + range.keywords + "}";
        auto grammar = json_schema_grammar(schema);
        ASSERT_TRUE(grammar.ok()) << schema << ": " << grammar.error();
        for (long long n = -1200; n <= 1200; ++n) {
            auto matcher = GrammarMatcher::create(*grammar, schema_test_byte_vocabulary());
            ASSERT_TRUE(matcher.ok());
            const bool accepted = matcher->accept_bytes(std::to_string(n)).ok() && matcher->is_complete();
            ASSERT_EQ(accepted, n >= range.lo && n <= range.hi) << schema << " n=" << n;
        }
        EXPECT_FALSE(schema_accepts(schema, "01")) << "no leading zeros";
        EXPECT_FALSE(schema_accepts(schema, "1.0"));
    }
}

TEST(JsonSchemaGrammar, NumberBoundsAndPlainNumbers) {
    const std::string unit = R"({"type":"number","minimum":0,"maximum":1})";
    for (const char* ok : {"0", "0.5", "1", "1.0", "1.000", "0.999"}) EXPECT_TRUE(schema_accepts(unit, ok)) << ok;
    for (const char* bad : {"1.5", "-0.1", "1.01", "2", "1e0", "-1"}) EXPECT_FALSE(schema_accepts(unit, bad)) << bad;
    const std::string negative = R"({"type":"number","minimum":-3,"maximum":-1})";
    for (const char* ok : {"-1", "-2.5", "-3", "-3.0", "-1.25"}) EXPECT_TRUE(schema_accepts(negative, ok)) << ok;
    for (const char* bad : {"-0.5", "-3.5", "0", "1"}) EXPECT_FALSE(schema_accepts(negative, bad)) << bad;
    const std::string plain = R"({"type":"number"})";
    for (const char* ok : {"0", "-0.5", "12e3", "1E-7", "123456789012345"}) EXPECT_TRUE(schema_accepts(plain, ok)) << ok;
    for (const char* bad : {"01", ".5", "1.", "+1", "1e", "NaN", "1234567890123456"}) EXPECT_FALSE(schema_accepts(plain, bad)) << bad;
}

TEST(JsonSchemaGrammar, ArraysWithItemsPrefixItemsAndBounds) {
    const std::string bounded = R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})";
    for (const char* ok : {"[1,2]", "[1, 2, 3]", "[ 1 ,2 ]"}) EXPECT_TRUE(schema_accepts(bounded, ok)) << ok;
    for (const char* bad : {"[]", "[1]", "[1,2,3,4]", "[1,2,]", "[1,\"2\"]"}) EXPECT_FALSE(schema_accepts(bounded, bad)) << bad;
    const std::string any_length = R"({"type":"array","items":{"type":"string"}})";
    EXPECT_TRUE(schema_accepts(any_length, "[]"));
    EXPECT_TRUE(schema_accepts(any_length, R"(["a","b","c","d","e","f"])"));
    EXPECT_FALSE(schema_accepts(any_length, "[,]"));
    const std::string tuple = R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false,"minItems":1})";
    for (const char* ok : {R"(["a"])", R"(["a",1])"}) EXPECT_TRUE(schema_accepts(tuple, ok)) << ok;
    for (const char* bad : {"[]", R"([1])", R"(["a",1,2])", R"(["a","b"])"}) EXPECT_FALSE(schema_accepts(tuple, bad)) << bad;
    const std::string tuple_then_items = R"({"prefixItems":[{"const":0}],"items":{"type":"boolean"},"maxItems":3})";
    for (const char* ok : {"[]", "[0]", "[0,true]", "[0,true,false]"}) EXPECT_TRUE(schema_accepts(tuple_then_items, ok)) << ok;
    for (const char* bad : {"[true]", "[0,true,false,true]"}) EXPECT_FALSE(schema_accepts(tuple_then_items, bad)) << bad;
}

TEST(JsonSchemaGrammar, AnyOfAllOfAndNestedObjects) {
    const std::string any_of = R"({"anyOf":[{"type":"integer"},{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}]})";
    EXPECT_TRUE(schema_accepts(any_of, "42"));
    EXPECT_TRUE(schema_accepts(any_of, R"({"x":"y"})"));
    EXPECT_FALSE(schema_accepts(any_of, R"("42")"));
    const std::string all_of = R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
        {"properties":{"b":{"type":"string"}},"required":["b"]}]})";
    EXPECT_TRUE(schema_accepts(all_of, R"({"a":1,"b":"x"})"));
    EXPECT_FALSE(schema_accepts(all_of, R"({"a":1})"));
    EXPECT_FALSE(schema_accepts(all_of, R"({"b":"x"})"));
    const std::string parent_and_branches = R"({"type":"object","properties":{"kind":{"enum":["a","b"]},"n":{"type":"integer"}},
        "anyOf":[{"required":["kind"]},{"required":["n"]}]})";
    EXPECT_TRUE(schema_accepts(parent_and_branches, R"({"kind":"a"})"));
    EXPECT_TRUE(schema_accepts(parent_and_branches, R"({"n":1})"));
    EXPECT_FALSE(schema_accepts(parent_and_branches, "{}"));
    const std::string nested = R"({"type":"object","properties":{"user":{"type":"object","properties":{"name":{"type":"string"},
        "tags":{"type":"array","items":{"type":"string"}}},"required":["name","tags"]}},"required":["user"]})";
    EXPECT_TRUE(schema_accepts(nested, R"({"user":{"name":"n","tags":["a","b"]}})"));
    EXPECT_FALSE(schema_accepts(nested, R"({"user":{"name":"n"}})"));
}

TEST(JsonSchemaGrammar, RecursiveTreeThroughDefsRunsInTheMatcher) {
    const std::string tree = R"({"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{"value":{"type":"integer"},
        "children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["value","children"]}}})";
    EXPECT_TRUE(schema_accepts(tree, R"({"value":1,"children":[]})"));
    EXPECT_TRUE(schema_accepts(tree, R"({"value":1,"children":[{"value":2,"children":[{"value":3,"children":[{"value":4,"children":[]}]}]},{"value":5,"children":[]}]})"));
    EXPECT_FALSE(schema_accepts(tree, R"({"value":1,"children":[{"value":2}]})"));
    const std::string definitions = R"({"type":"object","properties":{"next":{"$ref":"#"},"v":{"type":"integer"}},"required":["v"]})";
    EXPECT_TRUE(schema_accepts(definitions, R"({"next":{"next":{"v":3},"v":2},"v":1})"));
}

TEST(JsonSchemaGrammar, RecursionCapLeavesOutWhatWouldRecurseDeeper) {
    const std::string tree = R"({"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
        "kids":{"type":"array","items":{"$ref":"#/$defs/node"}},"next":{"$ref":"#/$defs/node"}},"required":["v","kids"]}}})";
    JsonSchemaLimits capped;
    capped.max_recursion_depth = 2;
    auto grammar = json_schema_grammar(tree, capped);
    ASSERT_TRUE(grammar.ok()) << grammar.error();
    auto accepts = [&](const std::string& text) {
        auto matcher = GrammarMatcher::create(*grammar, schema_test_byte_vocabulary());
        return matcher.ok() && matcher->accept_bytes(text).ok() && matcher->is_complete();
    };
    EXPECT_TRUE(accepts(R"({"v":1,"kids":[]})"));
    EXPECT_TRUE(accepts(R"({"v":1,"kids":[{"v":2,"kids":[]},{"v":3,"kids":[]}],"next":{"v":4,"kids":[]}})"));
    EXPECT_FALSE(accepts(R"({"v":1,"kids":[{"v":2,"kids":[{"v":3,"kids":[]}]}]})")) << "a third level";
    EXPECT_FALSE(accepts(R"({"v":1,"kids":[],"next":{"v":2,"kids":[],"next":{"v":3,"kids":[]}}})")) << "a third level";
    EXPECT_TRUE(schema_accepts(tree, R"({"v":1,"kids":[{"v":2,"kids":[{"v":3,"kids":[]}]}]})")) << "uncapped";
    // A recursion that every value needs cannot be cut short.
    EXPECT_NE(schema_refusal(R"({"$defs":{"n":{"type":"object","properties":{"c":{"$ref":"#/$defs/n"}},"required":["c"]}},
        "$ref":"#/$defs/n"})", capped).find("recursion cap"), std::string::npos);
}

TEST(JsonSchemaGrammar, EmptySchemaAndTrueAreAnyValue) {
    for (const char* schema : {"{}", "true", R"({"description":"anything"})"})
        for (const char* ok : {"1", "\"s\"", "null", "[1,[2,{}]]", R"({"a":{"b":[true]}})"}) EXPECT_TRUE(schema_accepts(schema, ok)) << ok;
}

TEST(JsonSchemaGrammar, RefusalsNameTheKeywordsPointer) {
    struct Case {
        const char* schema;
        const char* pointer;
    };
    const std::vector<Case> cases = {
        {R"({"type":"object","properties":{"name":{"type":"string","pattern":"^a"}}})", "#/properties/name/pattern"},
        {R"({"type":"integer","multipleOf":3})", "#/multipleOf"},
        {R"({"not":{"type":"string"}})", "#/not"},
        {R"({"type":"array","uniqueItems":true})", "#/uniqueItems"},
        {R"({"type":"strnig"})", "#/type"},
        {R"({"properties":{"a":{"$ref":"https://example.com/a.json"}}})", "#/properties/a/$ref"},
        {R"({"$ref":"#/$defs/missing"})", "#/$ref"},
        {R"({"enum":[]})", "#/enum"},
        {R"({"properties":{"a":false},"required":["a"]})", "#/properties/a"},
        {R"({"type":"string","format":"email"})", "#/format"},
        {R"({"type":"array","minItems":3,"maxItems":2})", "#/maxItems"},
        {R"({"type":"number","minimum":0.5})", "#/minimum"},
        {R"({"type":"integer","minimum":10,"maximum":5})", "#"},
        {R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["b"],"additionalProperties":false})", "#/required"},
        {R"({"$defs":{"loop":{"$ref":"#/$defs/loop"}},"$ref":"#/$defs/loop"})", "#/$defs/loop/$ref"},
        {R"({"type":"object","properties":{"a~b/c":{"type":"string","minLength":-1}}})", "#/properties/a~0b~1c/minLength"},
    };
    for (const Case& c : cases) {
        const std::string error = schema_refusal(c.schema);
        EXPECT_NE(error.find(std::string("JSON schema ") + c.pointer + ":"), std::string::npos) << c.schema << "\n -> " << error;
    }
    EXPECT_NE(schema_refusal("{not json").find("not valid JSON"), std::string::npos);
    EXPECT_NE(schema_refusal("false").find("accepts nothing"), std::string::npos);
}

TEST(JsonSchemaGrammar, HostileSchemasFailInBoundedTime) {
    const auto start = std::chrono::steady_clock::now();
    std::string wide = R"({"type":"object","properties":{)";
    for (int i = 0; i < 10000; ++i) wide += (i ? "," : "") + std::string("\"p") + std::to_string(i) + R"(":{"type":"integer"})";
    wide += "}}";
    EXPECT_NE(schema_refusal(wide).find("#/properties: 10000 properties, over the limit"), std::string::npos);

    std::string deep = "{}";
    for (int i = 0; i < 100; ++i) deep = R"({"type":"array","items":)" + deep + "}";
    EXPECT_NE(schema_refusal(deep).find("nest deeper than"), std::string::npos);

    std::string very_deep(100000, '[');
    EXPECT_FALSE(json_schema_grammar(very_deep).ok());

    // Every branch needs itself again: a recursion with no finite instance.
    const std::string no_base = R"({"type":"object","properties":{"child":{"$ref":"#"}},"required":["child"]})";
    EXPECT_NE(schema_refusal(no_base).find("JSON schema #"), std::string::npos);

    JsonSchemaLimits few_rules;
    few_rules.max_rules = 10;
    EXPECT_NE(schema_refusal(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},
        "c":{"type":"integer"},"d":{"type":"integer"},"e":{"type":"integer"},"f":{"type":"integer"}}})", few_rules).find("max_rules"),
              std::string::npos);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(JsonSchemaGrammar, RulesEmbedUnderTheirOwnName) {
    auto rules = json_schema_gbnf_rules(R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})", "args");
    ASSERT_TRUE(rules.ok()) << rules.error();
    EXPECT_EQ(rules->rfind("args ::= ", 0), 0u) << *rules;
    std::istringstream lines(*rules);
    for (std::string line; std::getline(lines, line);)
        EXPECT_EQ(line.rfind("args", 0), 0u) << "every rule carries the entry's name: " << line;
    auto embedded = parse_grammar("root ::= \"<call>\" args \"</call>\"\n" + *rules);
    ASSERT_TRUE(embedded.ok()) << embedded.error();
    EXPECT_FALSE(json_schema_gbnf_rules("{}", "bad name").ok());
}

// A walk through the grammar that picks uniformly among the allowed tokens of a small
// vocabulary (ASCII, every non-ASCII byte, JSON punctuation, words, multi-byte text): the text when the grammar lets it
// end, empty when it did not within `most_steps`.
std::string schema_random_walk(const std::shared_ptr<const Grammar>& grammar, uint32_t seed, int most_steps) {
    static const std::vector<std::string> pieces = {"{\"", "\":", "\",\"", "\"}", "[", "]", "{", "}", ",", ":", "\"", "true",
                                                    "false", "null", " ", "\n", "  ", "0", "1", "9", "-", ".", "e", "12",
                                                    "é", "€", "\\n", "\\\"", "\\u00e9", "T", "Z", "a", "name", "id"};
    std::vector<std::string> tokens;
    for (int c = 0x20; c < 0x7F; ++c) tokens.push_back(std::string(1, char(c)));
    for (int c = 0x80; c < 0x100; ++c) tokens.push_back(std::string(1, char(c)));  // byte fallback: any UTF-8
    tokens.insert(tokens.end(), pieces.begin(), pieces.end());
    tokens.push_back("");  // the end token
    std::vector<bool> special(tokens.size(), false);
    special.back() = true;
    const int32_t end_id = int32_t(tokens.size() - 1);
    auto vocabulary = std::make_shared<const GrammarVocabulary>(tokens, special);
    auto matcher = GrammarMatcher::create(grammar, vocabulary);
    if (!matcher) return "";
    std::mt19937 rng(seed);
    std::string text;
    std::vector<uint8_t> allowed;
    const int32_t ends[] = {end_id};
    for (int step = 0; step < most_steps; ++step) {
        auto count = matcher->allowed_tokens(allowed, ends);
        if (!count) return "";
        std::vector<int32_t> choices;
        for (size_t id = 0; id < allowed.size(); ++id)
            if (allowed[id]) choices.push_back(int32_t(id));
        if (choices.empty()) return "";
        const int32_t pick = choices[std::uniform_int_distribution<size_t>(0, choices.size() - 1)(rng)];
        if (pick == end_id) return text;
        if (!matcher->accept_token(pick).ok()) return "";
        text += tokens[size_t(pick)];
    }
    return "";
}

TEST(JsonSchemaGrammar, EveryCorpusSchemaConvertsAndItsWalksFinishAsJson) {
    const std::filesystem::path corpus = std::filesystem::path(CFLOW_SOURCE_DIR) / "tests" / "data" / "json-schemas";
    ASSERT_TRUE(std::filesystem::is_directory(corpus)) << corpus;
    JsonSchemaLimits steer;
    steer.max_string_chars = 6;
    steer.max_array_items = 3;
    steer.max_recursion_depth = 3;
    size_t schemas = 0;
    for (const auto& entry : std::filesystem::directory_iterator(corpus)) {
        if (entry.path().extension() != ".json") continue;
        ++schemas;
        std::ifstream in(entry.path(), std::ios::binary);
        const std::string schema((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        auto grammar = json_schema_grammar(schema, steer);
        ASSERT_TRUE(grammar.ok()) << entry.path() << ": " << grammar.error();
        for (uint32_t seed = 1; seed <= 3; ++seed) {
            const std::string text = schema_random_walk(*grammar, seed, 6000);
            ASSERT_FALSE(text.empty()) << entry.path() << " seed " << seed << ": the walk did not finish";
            EXPECT_TRUE(nlohmann::json::accept(text)) << entry.path() << ": " << text;
        }
    }
    EXPECT_GE(schemas, 60u);
}

} // namespace
} // namespace cflow
