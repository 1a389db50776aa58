// GBNF parsing: what is accepted and how it is flattened; every refusal with its line:column and
// wording; hostile grammars (left recursion, exploding repetitions, ambiguity, matching nothing)
// refused or stopped in bounded time.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cflow/engine/generation/grammar.h"
#include "cflow/engine/generation/grammar_matcher.h"
#include "cflow/engine/generation/grammar_vocabulary.h"

namespace cflow {
namespace {

std::string grammar_refusal(const std::string& source, const GrammarLimits& limits = {}) {
    auto parsed = parse_grammar(source, limits);
    if (parsed) return "(accepted)";
    EXPECT_EQ(parsed.kind(), ErrorKind::InvalidInput);
    return parsed.error();
}

std::vector<GrammarElement> grammar_rule_elements(const Grammar& g, const std::string& name) {
    for (size_t r = 0; r < g.rule_names.size(); ++r) {
        if (g.rule_names[r] != name) continue;
        std::vector<GrammarElement> out;
        for (uint32_t i = g.rule_start[r];; ++i) {
            out.push_back(g.elements[i]);
            if (g.elements[i].op == GrammarOp::End) break;
        }
        return out;
    }
    return {};
}

bool grammar_same_elements(const std::vector<GrammarElement>& a, const std::vector<GrammarElement>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].op != b[i].op || a[i].value != b[i].value) return false;
    return true;
}

TEST(GrammarParser, AcceptsLlamaCppJsonGrammar) {
    // llama.cpp's grammars/json.gbnf.
    const char* json = R"g(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)g";
    auto parsed = parse_grammar(json);
    ASSERT_TRUE(parsed) << parsed.error();
    EXPECT_EQ(parsed->rule_names[parsed->root], "root");
}

TEST(GrammarParser, FlattensLiteralsClassesAndRepetitions) {
    auto parsed = parse_grammar("root ::= \"a\\x42\\u00e9\" [^x-z\\n] . | \"\"\n");
    ASSERT_TRUE(parsed) << parsed.error();
    using Op = GrammarOp;
    EXPECT_TRUE(grammar_same_elements(grammar_rule_elements(*parsed, "root"),
                     {{Op::Char, 'a'}, {Op::Char, 'B'}, {Op::Char, 0xE9}, {Op::CharNot, 'x'}, {Op::CharRangeUpper, 'z'},
                      {Op::CharAlt, '\n'}, {Op::CharAny, 0}, {Op::Alt, 0}, {Op::End, 0}}));

    // x{2,4}: two copies, then a chain of two optional copies.
    auto repeated = parse_grammar("root ::= \"x\"{2,4}");
    ASSERT_TRUE(repeated) << repeated.error();
    const auto root = grammar_rule_elements(*repeated, "root");
    ASSERT_EQ(root.size(), 4u);
    EXPECT_EQ(root[0].op, Op::Char);
    EXPECT_EQ(root[1].op, Op::Char);
    ASSERT_EQ(root[2].op, Op::RuleRef);
    const std::string outer = repeated->rule_names[root[2].value];
    const auto optional = grammar_rule_elements(*repeated, outer);
    ASSERT_EQ(optional.size(), 4u);  // x inner | ""
    EXPECT_EQ(optional[1].op, Op::RuleRef);
    EXPECT_TRUE(grammar_same_elements(grammar_rule_elements(*repeated, repeated->rule_names[optional[1].value]),
                     {{Op::Char, 'x'}, {Op::Alt, 0}, {Op::End, 0}}));

    // Unbounded: r ::= x r | "".
    auto star = parse_grammar("root ::= [0-9]+");
    ASSERT_TRUE(star) << star.error();
    const auto plus = grammar_rule_elements(*star, "root");
    ASSERT_EQ(plus.size(), 4u);
    const uint32_t loop = plus[2].value;
    EXPECT_TRUE(grammar_same_elements(grammar_rule_elements(*star, star->rule_names[loop]),
                     {{Op::Char, '0'}, {Op::CharRangeUpper, '9'}, {Op::RuleRef, loop}, {Op::Alt, 0}, {Op::End, 0}}));
}

TEST(GrammarParser, RefusalsNameLineColumnAndWhat) {
    EXPECT_EQ(grammar_refusal("root ::= foo"), "grammar:1:10: undefined rule 'foo'");
    EXPECT_EQ(grammar_refusal("a ::= \"x\""), "grammar:1:1: no rule named 'root' (a grammar starts at root)");
    EXPECT_EQ(grammar_refusal("root ::= \"x\"\n  other ::= \"abc"), "grammar:2:13: unterminated string literal");
    EXPECT_EQ(grammar_refusal("root ::= [abc"), "grammar:1:10: unterminated character class");
    EXPECT_EQ(grammar_refusal("root ::= []"), "grammar:1:10: empty character class [] matches nothing");
    EXPECT_EQ(grammar_refusal("root ::= [z-a]"), "grammar:1:12: character range ends below its start");
    EXPECT_EQ(grammar_refusal("root ::= \"\\q\""), "grammar:1:11: unknown escape '\\q'");
    EXPECT_EQ(grammar_refusal("root ::= \"\\x4\""), "grammar:1:11: escape needs 2 hex digits");
    EXPECT_EQ(grammar_refusal("root ::= \"\\uD800\""),
              "grammar:1:11: escape is not a Unicode scalar value (surrogates and values over U+10FFFF are not)");
    EXPECT_EQ(grammar_refusal("root ::= *"), "grammar:1:10: '*' has nothing before it to repeat");
    EXPECT_EQ(grammar_refusal("root = \"a\""), "grammar:1:6: expecting '::=' after the rule name 'root'");
    EXPECT_EQ(grammar_refusal("root ::= \"a\"\n  | \"b\""), "grammar:2:3: expecting a rule name, found '|'");
    EXPECT_EQ(grammar_refusal("root ::= (\"a\" "), "grammar:1:10: unclosed '(': expecting ')'");
    EXPECT_EQ(grammar_refusal("root ::= \"a\"{3,2}"), "grammar:1:13: repetition {m,n} with n below m");
    EXPECT_EQ(grammar_refusal("root ::= \"a\"{10001}"), "grammar:1:14: repetition bound over the limit of 10000");
    EXPECT_EQ(grammar_refusal("root ::= \"a\"\nroot ::= \"b\""), "grammar:2:1: rule 'root' is defined twice (first at 1:1)");
    EXPECT_EQ(grammar_refusal("root ::= \"a\" )"), "grammar:1:14: expecting a newline or the end of the grammar, found ')'");
    EXPECT_EQ(grammar_refusal("root ::= \"\xff\""), "grammar:1:11: the grammar is not valid UTF-8 here");
}

TEST(GrammarParser, RefusesLeftRecursionWithTheCycle) {
    EXPECT_EQ(grammar_refusal("root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\""),
              "grammar:2:1: rule 'expr' is left-recursive (expr -> expr): it can reach itself without matching a "
              "character, which would loop forever; rewrite it right-recursive or with a repetition (a repetition of "
              "something that can be empty does this too)");
    // Through a rule that may be empty.
    const std::string indirect = grammar_refusal("root ::= a\na ::= b \"x\"\nb ::= \"\" | c a\nc ::= \"y\"?");
    EXPECT_EQ(indirect.rfind("grammar:2:1: rule 'a' is left-recursive (a -> b -> a)", 0), 0u) << indirect;
    // A repetition of something that can be empty.
    const std::string nullable_star = grammar_refusal("root ::= (\"a\"?)*");
    EXPECT_NE(nullable_star.find("is left-recursive (root_3 -> root_3)"), std::string::npos) << nullable_star;
    // Right recursion is fine.
    EXPECT_EQ(grammar_refusal("root ::= \"1\" (\"+\" root)?"), "(accepted)");
}

TEST(GrammarParser, RefusesGrammarsThatMatchNothing) {
    EXPECT_EQ(grammar_refusal("root ::= \"x\" b\nb ::= \"y\" b"),
              "grammar:2:1: rule 'b' can never finish: every alternative needs a rule that cannot finish either (b), so "
              "it matches nothing");
    const std::string mutual = grammar_refusal("root ::= a\na ::= \"x\" b\nb ::= \"y\" a");
    EXPECT_EQ(mutual, "grammar:1:1: rule 'root' can never finish: every alternative needs a rule that cannot finish "
                      "either (a), so it matches nothing");
    const std::string root_loop = grammar_refusal("root ::= \"(\" root \")\"");
    EXPECT_EQ(root_loop.rfind("grammar:1:1: rule 'root' can never finish", 0), 0u) << root_loop;
}

TEST(GrammarParser, HostileSizesAreRefusedQuickly) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(grammar_refusal("root ::= \"a\"{10000}{10000}"),
              "grammar:1:20: the grammar expands to more than 1048576 elements (repetitions multiply); write it with "
              "fewer or smaller repetitions");
    GrammarLimits small;
    small.max_source_bytes = 16;
    EXPECT_EQ(grammar_refusal("root ::= \"0123456789\"", small), "grammar: 21 bytes, over the limit of 16");
    EXPECT_EQ(grammar_refusal("root ::= " + std::string(300, '(') + "\"a\"" + std::string(300, ')')),
              "grammar:1:266: groups nested deeper than 256");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(seconds, 5.0);
}

std::shared_ptr<const GrammarVocabulary> grammar_letters_vocabulary() {
    return std::make_shared<const GrammarVocabulary>(std::vector<std::string>{"a", "b", "c", "x"}, std::vector<bool>{});
}

TEST(GrammarParser, AmbiguityStopsAtTheStackLimit) {
    // After n "a"s every string of n "b"/"c" choices is a distinct stack: 2^n of them.
    auto grammar = parse_grammar("root ::= x\nx ::= \"a\" x \"b\" | \"a\" x \"c\" | \"\"");
    ASSERT_TRUE(grammar) << grammar.error();
    auto matcher = GrammarMatcher::create(std::make_shared<const Grammar>(std::move(grammar.value())), grammar_letters_vocabulary());
    ASSERT_TRUE(matcher) << matcher.error();
    const auto t0 = std::chrono::steady_clock::now();
    Status status;
    int accepted = 0;
    for (; accepted < 40 && status; ++accepted) status = matcher->accept_token(0);
    ASSERT_FALSE(status);
    EXPECT_EQ(status.kind(), ErrorKind::OverBudget);
    EXPECT_EQ(status.error(), "grammar: more than 4096 parses are alive at once; the grammar is too ambiguous here");
    // After n "a"s: 3 * 2^n stacks (two "a" alternatives and the popped "b"/"c" tail per suffix):
    // 3072 after 10 fit, the 11th "a" goes over.
    EXPECT_EQ(accepted, 11);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

TEST(GrammarParser, AStepOverManyParsesStopsAtTheWorkLimit) {
    // 3 * 2^n parses alive after n "a"s, compared pairwise as they are merged: about 0.3 M
    // comparisons for the 8th "a", 1.2 M for the 9th. The default limit (2^27) bounds a call
    // near 0.3 s; a small one shows the stop, before the stack limit.
    GrammarLimits limits;
    limits.max_step_work = 1000000;
    auto grammar = parse_grammar("root ::= x\nx ::= \"a\" x \"b\" | \"a\" x \"c\" | \"\"", limits);
    ASSERT_TRUE(grammar) << grammar.error();
    std::vector<std::string> bytes;
    for (size_t length = 1; length <= 6; ++length)
        for (size_t bits = 0; bits < (size_t(1) << length); ++bits) {
            std::string token;
            for (size_t k = 0; k < length; ++k) token.push_back((bits >> k) & 1 ? 'b' : 'c');
            bytes.push_back(token);
        }
    auto vocabulary = std::make_shared<const GrammarVocabulary>(bytes, std::vector<bool>{});
    auto matcher = GrammarMatcher::create(std::make_shared<const Grammar>(std::move(grammar.value())), vocabulary);
    ASSERT_TRUE(matcher) << matcher.error();
    for (int i = 0; i < 8; ++i) ASSERT_TRUE(matcher->accept_bytes("a")) << i;
    ASSERT_EQ(matcher->stack_count(), 768u);
    const Status ninth = matcher->accept_bytes("a");
    ASSERT_FALSE(ninth);
    EXPECT_EQ(ninth.kind(), ErrorKind::OverBudget);
    EXPECT_EQ(ninth.error(), "grammar: one step would compare more than 1000000 parse stacks; the grammar is too "
                             "ambiguous here");
    EXPECT_EQ(matcher->stack_count(), 768u) << "a refused step leaves the state as it was";
    // The next call has its own budget: the mask over "b"/"c" strings fits.
    std::vector<uint8_t> allowed;
    auto counted = matcher->allowed_tokens(allowed, {});
    ASSERT_TRUE(counted) << counted.error();
    EXPECT_EQ(*counted, bytes.size());  // 8 pending "b"/"c" closers: any string of up to 6 fits
}

TEST(GrammarParser, ExponentialAlternativesStopAtTheExpansionLimit) {
    // a0 ::= a1 | a1, a1 ::= a2 | a2, ...: 2^40 ways to reach "x", one stack in the end.
    std::string source = "root ::= a0\n";
    for (int i = 0; i < 40; ++i) source += "a" + std::to_string(i) + " ::= a" + std::to_string(i + 1) + " | a" + std::to_string(i + 1) + "\n";
    source += "a40 ::= \"x\"\n";
    auto grammar = parse_grammar(source);
    ASSERT_TRUE(grammar) << grammar.error();
    const auto t0 = std::chrono::steady_clock::now();
    auto matcher = GrammarMatcher::create(std::make_shared<const Grammar>(std::move(grammar.value())), grammar_letters_vocabulary());
    ASSERT_FALSE(matcher);
    EXPECT_EQ(matcher.kind(), ErrorKind::OverBudget);
    EXPECT_EQ(matcher.error(),
              "grammar: one character expands to more than 1048576 stack entries; the grammar nests too many alternatives");
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

} // namespace
} // namespace cflow
