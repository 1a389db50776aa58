// The JSON object grammar behind response_format json_object (issue 33): it parses, accepts every
// JSON object nlohmann::json writes or reads (nested values, escapes, numbers in every form),
// and refuses what is not one object: other JSON values, text before or after it, bad escapes,
// leading zeros, control characters, and whitespace past its bound.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cflow/engine/generation/grammar_matcher.h"
#include "cflow/engine/generation/grammar_vocabulary.h"
#include "cflow/engine/generation/json_grammar.h"

namespace cflow {
namespace {

// Whether the grammar takes `text` whole and may end there.
bool json_grammar_accepts(const std::string& text) {
    auto grammar = json_object_grammar();
    EXPECT_TRUE(grammar.ok()) << (grammar.ok() ? "" : grammar.error());
    if (!grammar) return false;
    auto vocabulary = std::make_shared<const GrammarVocabulary>(std::vector<std::string>{"x"}, std::vector<bool>{});
    auto matcher = GrammarMatcher::create(*grammar, vocabulary);
    EXPECT_TRUE(matcher.ok());
    if (!matcher) return false;
    return matcher->accept_bytes(text).ok() && matcher->is_complete();
}

TEST(JsonObjectGrammar, AcceptsObjectsAsJsonLibrariesWriteThem) {
    const nlohmann::json values = nlohmann::json::parse(R"({
        "name": "cflow", "ok": true, "none": null, "n": -12.5e-3, "zero": 0, "big": 123456789,
        "list": [1, 2.0, "three", [], {}, [false]], "nested": {"a": {"b": {"c": "d"}}},
        "escapes": "quote \" backslash \\ slash / tab \t newline \n unicode \u00e9 \u20ac",
        "emoji": "\ud83d\ude00", "empty": ""})");
    EXPECT_TRUE(json_grammar_accepts(values.dump()));
    EXPECT_TRUE(json_grammar_accepts(values.dump(2)));
    EXPECT_TRUE(json_grammar_accepts("{}"));
    EXPECT_TRUE(json_grammar_accepts("{ \"a\" : [ 1 , 2 ] }"));
    EXPECT_TRUE(json_grammar_accepts(R"({"e":1E+9,"f":0.5,"g":-0})"));
}

TEST(JsonObjectGrammar, RefusesWhatIsNotOneObject) {
    for (const char* text : {"[]", "\"s\"", "1", "true", "null", "", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}",
                             "{\"a\":01}", "{\"a\":1.}", "{\"a\":.5}", "{\"a\":+1}", "{'a':1}", "{\"a\":\"\\x\"}",
                             "{\"a\":\"\\u12\"}", "{\"a\":tru}", "{} {}", "{}x", " {}", "\n{}", "{\"a\":\"line\nbreak\"}"})
        EXPECT_FALSE(json_grammar_accepts(text)) << "accepted: " << text;
}

TEST(JsonObjectGrammar, WhitespaceIsBoundedSoAReplyCannotPadForever) {
    const std::string most(kJsonGrammarMaxWhitespace, ' ');
    EXPECT_TRUE(json_grammar_accepts("{" + most + "}"));
    EXPECT_FALSE(json_grammar_accepts("{" + most + " }"));
    EXPECT_NE(json_object_grammar_source().find("{0," + std::to_string(kJsonGrammarMaxWhitespace) + "}"), std::string::npos)
        << "the constant and the grammar's bound agree";
}

} // namespace
} // namespace cflow
