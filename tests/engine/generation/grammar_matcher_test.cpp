// GrammarMatcher masks against brute force: for fixed grammars and a small synthetic vocabulary
// (every 1-3 byte string over the grammar's alphabet, multi-byte and partial UTF-8 pieces, an
// end token), the mask allows a token iff a backtracking recogniser finds that the bytes so far
// plus the token's are the start of some string of the language, along random walks.
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cflow/engine/generation/grammar.h"
#include "cflow/engine/generation/grammar_matcher.h"
#include "cflow/engine/generation/grammar_vocabulary.h"

namespace cflow {
namespace {

// The test's own strict UTF-8 reading: the complete code points, and the bytes of a trailing
// incomplete sequence (empty when the text ends on a boundary). False when not well formed.
bool grammar_split_utf8(const std::string& text, std::vector<uint32_t>& code_points, std::string& tail) {
    code_points.clear();
    tail.clear();
    size_t i = 0;
    while (i < text.size()) {
        const unsigned lead = static_cast<unsigned char>(text[i]);
        const size_t length = lead < 0x80 ? 1 : lead >= 0xF0 && lead < 0xF8 ? 4 : lead >= 0xE0 && lead < 0xF0 ? 3
                                            : lead >= 0xC0 && lead < 0xE0  ? 2 : 0;
        if (length == 0) return false;
        if (i + length > text.size()) {
            for (size_t k = i + 1; k < text.size(); ++k)
                if ((static_cast<unsigned char>(text[k]) & 0xC0) != 0x80) return false;
            tail = text.substr(i);
            return true;
        }
        uint32_t cp = length == 1 ? lead : length == 2 ? (lead & 0x1F) : length == 3 ? (lead & 0x0F) : (lead & 0x07);
        for (size_t k = 1; k < length; ++k) {
            const unsigned byte = static_cast<unsigned char>(text[i + k]);
            if ((byte & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (byte & 0x3F);
        }
        const uint32_t minimum = length == 1 ? 0 : length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000;
        if (cp < minimum || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        code_points.push_back(cp);
        i += length;
    }
    return true;
}

// A backtracking recogniser over the flattened rules: stacks of element positions, copied freely.
class ReferenceRecogniser {
public:
    explicit ReferenceRecogniser(const Grammar& grammar) : g_(grammar) {}

    // Whether `cps` is the start (full: the whole) of a string of the language.
    bool matches(const std::vector<uint32_t>& cps, bool full) const {
        const uint32_t root = g_.rule_start[g_.root];
        for (uint32_t a : alternatives(root))
            if (run({a}, cps, 0, full)) return true;
        return false;
    }

private:
    std::vector<uint32_t> alternatives(uint32_t start) const {
        std::vector<uint32_t> starts{start};
        for (uint32_t i = start; g_.elements[i].op != GrammarOp::End; ++i)
            if (g_.elements[i].op == GrammarOp::Alt) starts.push_back(i + 1);
        return starts;
    }
    bool in_class(uint32_t pos, uint32_t cp, uint32_t& after) const {
        const GrammarOp op = g_.elements[pos].op;
        after = pos + 1;
        if (op == GrammarOp::CharAny) return true;
        bool found = false;
        uint32_t i = pos;
        while (true) {
            const uint32_t lo = g_.elements[i].value;
            const bool ranged = g_.elements[i + 1].op == GrammarOp::CharRangeUpper;
            const uint32_t hi = ranged ? g_.elements[i + 1].value : lo;
            if (cp >= lo && cp <= hi) found = true;
            i += ranged ? 2 : 1;
            if (g_.elements[i].op != GrammarOp::CharAlt) break;
        }
        after = i;
        return op == GrammarOp::CharNot ? !found : found;
    }
    bool run(std::vector<uint32_t> stack, const std::vector<uint32_t>& cps, size_t i, bool full) const {
        if (!full && i == cps.size()) return true;  // every rule can finish (the parser checks)
        if (stack.empty()) return i == cps.size();
        const uint32_t pos = stack.back();
        stack.pop_back();
        const GrammarElement el = g_.elements[pos];
        if (el.op == GrammarOp::End || el.op == GrammarOp::Alt) return run(stack, cps, i, full);
        if (el.op == GrammarOp::RuleRef) {
            stack.push_back(pos + 1);
            for (uint32_t a : alternatives(g_.rule_start[el.value])) {
                std::vector<uint32_t> next = stack;
                next.push_back(a);
                if (run(next, cps, i, full)) return true;
            }
            return false;
        }
        if (i == cps.size()) return false;
        uint32_t after = 0;
        if (!in_class(pos, cps[i], after)) return false;
        stack.push_back(after);
        return run(stack, cps, i + 1, full);
    }

    const Grammar& g_;
};

// Whether `bytes` can be the start of the UTF-8 of a string of the language.
bool grammar_reference_viable(const ReferenceRecogniser& reference, const std::string& bytes) {
    std::vector<uint32_t> cps;
    std::string tail;
    if (!grammar_split_utf8(bytes, cps, tail)) return false;
    if (tail.empty()) return reference.matches(cps, false);
    if (!reference.matches(cps, false)) return false;
    // Every completion of the pending sequence by continuation bytes.
    const unsigned lead = static_cast<unsigned char>(tail[0]);
    const size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    const size_t missing = length - tail.size();
    size_t combinations = 1;
    for (size_t k = 0; k < missing; ++k) combinations *= 64;
    std::vector<uint32_t> one;
    std::string none;
    for (size_t c = 0; c < combinations; ++c) {
        std::string full = tail;
        size_t rest = c;
        for (size_t k = 0; k < missing; ++k, rest /= 64) full.push_back(char(0x80 | (rest % 64)));
        if (!grammar_split_utf8(full, one, none) || one.size() != 1) continue;
        std::vector<uint32_t> extended = cps;
        extended.push_back(one[0]);
        if (reference.matches(extended, false)) return true;
    }
    return false;
}

struct GrammarCase {
    const char* name;
    const char* source;
    const char* alphabet;
};

const GrammarCase kGrammarCases[] = {
    {"yes_no", R"g(root ::= "yes" | "no")g", "yesno"},
    {"arithmetic",
     "root ::= expr\nexpr ::= term ((\"+\" | \"-\") term)*\nterm ::= factor (\"*\" factor)*\n"
     "factor ::= [0-9]+ | \"(\" expr \")\"\n",
     "09+-*()"},
    {"json_ish",
     "root ::= value\nvalue ::= object | array | string | number | \"true\"\n"
     "object ::= \"{\" ( string \":\" value (\",\" string \":\" value)* )? \"}\"\n"
     "array ::= \"[\" ( value (\",\" value)* )? \"]\"\nstring ::= \"\\\"\" [a-c]* \"\\\"\"\nnumber ::= \"-\"? [0-9]+\n",
     "{}[]\":,-0atrue"},
    {"bounded_repetitions", R"g(root ::= "a"{2,4} "b"{3} "c"{1,})g", "abc"},
    {"optional_groups", R"g(root ::= ("ab"){0,3} "c"?)g", "abc"},
    {"classes", R"g(root ::= [a-c]+ [^a-c0-9]? [0-9]{1,2})g", "acd09 "},
    {"negated_with_unicode", R"g(root ::= [^a]* "a")g", "ab"},
    {"unicode_literals", R"g(root ::= "é" [€]? "😀"* [\u00e0-\u00ff])g", "a"},
    {"any_char", R"g(root ::= . . "b")g", "ab"},
    {"nested_recursion", R"g(root ::= "(" root ")" | "x")g", "()x"},
    {"escapes", "root ::= \"\\x41\\n\" [\\t ]*", "A\n\t "},
    {"empty_alternative", R"g(root ::= "" | "a" root)g", "ab"},
    {"ambiguous_star", R"g(root ::= ("a" | "ab")* "b")g", "ab"},
    {"nullable_parts", "root ::= x \"c\"\nx ::= \"a\"? \"b\"?\n", "abc"},
    {"repetition_or_literal", R"g(root ::= [a-b]{0,3} "-" | "--")g", "ab-"},
    {"comments_and_lines", "# a comment\nroot ::= item+ # trailing\nitem ::= (\n  \"a\" |\n  \"bb\"\n)\n", "ab"},
    {"json_string", R"g(root ::= "\"" [^"\\]* "\"")g", "a\"\\"},
    {"astral_class", R"g(root ::= "a" | "é" | [😀-😂] "a")g", "a"},
    {"plus_of_group", R"g(root ::= ("ab" | "c")+ "." )g", "abc."},
    {"exact_count", R"g(root ::= [0-1]{3} | "x" [^x]{2})g", "01x"},
    // A negated class that excludes a whole UTF-8 lead's range: "\xC3" alone must be refused.
    {"negated_block", R"g(root ::= [^\u00c0-\u00ff\u20ac]+ "a")g", "ab"},
};

// Token 0: the end token (special). Then every 1-3 byte string over the alphabet, then pieces.
std::shared_ptr<const GrammarVocabulary> grammar_synthetic_vocabulary(const std::string& alphabet, std::vector<std::string>& bytes) {
    std::set<char> letters(alphabet.begin(), alphabet.end());
    bytes.assign(1, "</s>");
    for (char a : letters) {
        bytes.push_back(std::string(1, a));
        for (char b : letters) {
            bytes.push_back(std::string{a, b});
            for (char c : letters) bytes.push_back(std::string{a, b, c});
        }
    }
    const char* pieces[] = {"é", "€", "😀", "😁", "ÿ", "\xC3", "\xA9", "\xE2", "\xE2\x82", "\x82", "\xAC",
                            "\xF0\x9F", "\x98\x80", "\x98", "\x80", "aé", "é\"", "\xC0\x80", "\xED\xA0\x80", ""};
    for (const char* p : pieces) bytes.push_back(p);
    std::vector<bool> special(bytes.size(), false);
    special[0] = true;
    return std::make_shared<const GrammarVocabulary>(bytes, special);
}

TEST(GrammarMatcher, MasksEqualBruteForceAlongRandomWalks) {
    for (const GrammarCase& c : kGrammarCases) {
        SCOPED_TRACE(c.name);
        auto parsed = parse_grammar(c.source);
        ASSERT_TRUE(parsed) << parsed.error();
        auto grammar = std::make_shared<const Grammar>(std::move(parsed.value()));
        std::vector<std::string> bytes;
        auto vocabulary = grammar_synthetic_vocabulary(c.alphabet, bytes);
        const ReferenceRecogniser reference(*grammar);
        const std::vector<int32_t> end_ids{0};
        for (uint64_t seed = 1; seed <= 3; ++seed) {
            auto matcher = GrammarMatcher::create(grammar, vocabulary);
            ASSERT_TRUE(matcher) << matcher.error();
            std::mt19937_64 rng(seed);
            std::string so_far;
            for (int step = 0; step < 8; ++step) {
                std::vector<uint8_t> allowed;
                auto count = matcher->allowed_tokens(allowed, end_ids);
                ASSERT_TRUE(count) << count.error();
                std::vector<uint32_t> cps;
                std::string tail;
                const bool complete = grammar_split_utf8(so_far, cps, tail) && tail.empty() && reference.matches(cps, true);
                ASSERT_EQ(matcher->is_complete(), complete) << "after '" << so_far << "'";
                ASSERT_EQ(allowed[0], complete ? 1 : 0) << "end token after '" << so_far << "'";
                std::vector<int32_t> text_allowed;
                for (size_t id = 1; id < bytes.size(); ++id) {
                    const bool expected = !bytes[id].empty() && grammar_reference_viable(reference, so_far + bytes[id]);
                    ASSERT_EQ(allowed[id] != 0, expected) << "token '" << bytes[id] << "' after '" << so_far << "'";
                    if (expected) text_allowed.push_back(int32_t(id));
                }
                ASSERT_EQ(*count, text_allowed.size());
                if (text_allowed.empty()) break;
                const int32_t pick = text_allowed[rng() % text_allowed.size()];
                ASSERT_TRUE(matcher->accept_token(pick));
                so_far += bytes[size_t(pick)];
            }
        }
    }
}

TEST(GrammarMatcher, RefusedTokenLeavesStateAndMaskSetsMinusInfinity) {
    auto grammar = std::make_shared<const Grammar>(parse_grammar(R"g(root ::= "ab" "c"*)g").value());
    auto vocabulary = std::make_shared<const GrammarVocabulary>(std::vector<std::string>{"</s>", "a", "b", "ab", "c", "x"},
                                                                std::vector<bool>{true});
    auto matcher = GrammarMatcher::create(grammar, vocabulary);
    ASSERT_TRUE(matcher);
    const Status refused = matcher->accept_token(2);
    EXPECT_FALSE(refused);
    EXPECT_NE(refused.error().find("may not go on"), std::string::npos) << refused.error();
    EXPECT_FALSE(matcher->accept_token(0));  // special
    std::vector<float> logits(7, 1.0f);      // [vocab + 1 padding] f32
    const std::vector<int32_t> end_ids{0};
    auto count = matcher->mask(logits, end_ids);
    ASSERT_TRUE(count);
    EXPECT_EQ(*count, 2u);
    const float ninf = -std::numeric_limits<float>::infinity();
    EXPECT_EQ(logits, (std::vector<float>{ninf, 1.0f, ninf, 1.0f, ninf, ninf, ninf}));
    ASSERT_TRUE(matcher->accept_token(3));
    EXPECT_TRUE(matcher->is_complete());
    std::vector<float> after(6, 0.0f);
    ASSERT_TRUE(matcher->mask(after, end_ids));
    EXPECT_EQ(after, (std::vector<float>{0.0f, ninf, ninf, ninf, 0.0f, ninf}));
}

TEST(GrammarMatcher, StripFirstSpaceMatchesTheDecodersDummyPrefix) {
    auto grammar = std::make_shared<const Grammar>(parse_grammar(R"g(root ::= "yes")g").value());
    auto vocabulary = std::make_shared<const GrammarVocabulary>(std::vector<std::string>{" yes", "yes", " no"},
                                                                std::vector<bool>{});
    auto matcher = GrammarMatcher::create(grammar, vocabulary);
    ASSERT_TRUE(matcher);
    matcher->set_strip_first_space(true);
    std::vector<uint8_t> allowed;
    ASSERT_TRUE(matcher->allowed_tokens(allowed, {}));
    EXPECT_EQ(allowed, (std::vector<uint8_t>{1, 1, 0}));
    ASSERT_TRUE(matcher->accept_token(0));
    EXPECT_TRUE(matcher->is_complete());
}

TEST(GrammarMatcher, LongGenerationsKeepTheArenaBounded) {
    // Nesting pushes a node per "(", so the arena only shrinks through compaction.
    auto grammar = std::make_shared<const Grammar>(parse_grammar("root ::= item*\nitem ::= \"(\" item* \")\" | \"x\"").value());
    auto vocabulary = std::make_shared<const GrammarVocabulary>(std::vector<std::string>{"(", ")", "x"}, std::vector<bool>{});
    auto matcher = GrammarMatcher::create(grammar, vocabulary);
    ASSERT_TRUE(matcher);
    for (int i = 0; i < 3 * 66666; ++i) {
        ASSERT_TRUE(matcher->accept_token(i % 3 == 0 ? 0 : i % 3 == 1 ? 2 : 1));
        std::vector<uint8_t> allowed;
        if (i % 1000 == 0) {
            ASSERT_TRUE(matcher->allowed_tokens(allowed, {}));
        }
    }
    EXPECT_TRUE(matcher->is_complete());
    EXPECT_LE(matcher->stack_count(), 8u);
    EXPECT_LE(matcher->node_count(), size_t(1) << 17);
}

TEST(GrammarMatcher, MasksOfARepeatedParseStateComeFromTheCacheAndEqualAFreshWalk) {
    // Inside the string every letter leaves the parse state as it was: one walk, then hits.
    auto grammar = std::make_shared<const Grammar>(parse_grammar(R"g(root ::= "\"" [a-z\u00e9]* "\"")g").value());
    auto vocabulary = std::make_shared<const GrammarVocabulary>(
        std::vector<std::string>{"</s>", "\"", "a", "bc", " a", "\xC3", "\xA9", "é", "\"a"}, std::vector<bool>{true});
    const std::vector<int32_t> end_ids{0};
    const std::vector<int32_t> fed{1, 2, 3, 2, 5, 6, 7, 3};  // "\"", "a", "bc", "a", "\xC3", "\xA9", "é", "bc"
    auto matcher = GrammarMatcher::create(grammar, vocabulary);
    ASSERT_TRUE(matcher);
    std::vector<int32_t> so_far;
    for (size_t step = 0; step <= fed.size(); ++step) {
        for (const bool strip : {false, true}) {
            matcher->set_strip_first_space(strip);
            std::vector<uint8_t> cached_or_walked;
            ASSERT_TRUE(matcher->allowed_tokens(cached_or_walked, end_ids));
            auto fresh = GrammarMatcher::create(grammar, vocabulary);
            ASSERT_TRUE(fresh);
            for (int32_t id : so_far) ASSERT_TRUE(fresh->accept_token(id));
            fresh->set_strip_first_space(strip);
            std::vector<uint8_t> walked;
            ASSERT_TRUE(fresh->allowed_tokens(walked, end_ids));
            EXPECT_EQ(cached_or_walked, walked) << "step " << step << (strip ? ", first space stripped" : "");
        }
        matcher->set_strip_first_space(false);
        if (step == fed.size()) break;
        ASSERT_TRUE(matcher->accept_token(fed[step]));
        so_far.push_back(fed[step]);
    }
    // Distinct states: before the quote, inside the string, inside "é" after its first byte (each
    // with and without the first-space rule); every other step is a hit.
    EXPECT_GE(matcher->mask_cache_hits(), 2 * (fed.size() + 1) - 6);
}

} // namespace
} // namespace cflow
