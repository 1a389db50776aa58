#pragma once
// GBNF grammars (llama.cpp's grammar syntax) for constrained sampling.
//
// Syntax: rules `name ::= alternatives`, alternatives separated by `|`, sequences of items, groups
// `( ... )`, postfix `*` `+` `?` `{m}` `{m,}` `{m,n}`, string literals "..." with escapes \n \r \t
// \" \\ \[ \] \- \xHH \uHHHH \UHHHHHHHH, character classes [a-z] / negated [^...], `.` (any code
// point), comments `#` to the end of the line, rule references. The grammar starts at `root`.
// As in llama.cpp a newline ends a rule except after `::=`, after `|` and inside parentheses.
//
// A parsed grammar is flattened the way llama.cpp's llama_grammar is: every rule is one run of
// elements, alternatives separated by Alt, the run closed by End; repetitions and groups become
// generated rules. Parsing refuses (with line:column) what the matcher could not run in bounded
// time: undefined rules, a missing root, left recursion (a rule reaching itself without consuming
// a code point), repetition bounds over GrammarLimits::max_repetition, sources and expansions over
// the size caps.
//
// Thread safety: a Grammar is an immutable value after parsing; share it freely.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cflow/base/result.h"

namespace cflow {

enum class GrammarOp : uint8_t {
    End,             // closes a rule
    Alt,             // starts another alternative of the rule
    RuleRef,         // value: the referenced rule's index
    Char,            // value: a code point, or the lower bound of a range; starts a character class
    CharNot,         // as Char, for a negated class: matches a code point outside every range of the class
    CharRangeUpper,  // value: inclusive upper bound of the range whose lower bound is the previous element
    CharAlt,         // value: another code point (or range lower bound) of the same class
    CharAny,         // any code point
};

struct GrammarElement {
    GrammarOp op = GrammarOp::End;
    uint32_t value = 0;
};

struct GrammarLimits {
    size_t max_source_bytes = size_t(1) << 20;  // a grammar's text
    uint32_t max_repetition = 10000;            // m and n of {m,n}
    size_t max_elements = size_t(1) << 20;      // elements after expanding repetitions (8 bytes each)
    size_t max_stacks = 4096;                   // parse stacks alive at once in a matcher (ambiguity)
    size_t max_expansion_steps = size_t(1) << 20;  // stack nodes one code point may create
    // Stack comparisons and visits one mask() or accept_bytes() may spend (about 0.3 s): many
    // parses alive at once make every trie node's step quadratic in them.
    size_t max_step_work = size_t(1) << 27;
};

struct Grammar {
    std::vector<GrammarElement> elements;  // [total elements] every rule's run, each ending with End
    std::vector<uint32_t> rule_start;      // [rules] index of each rule's first element in `elements`
    std::vector<std::string> rule_names;   // [rules] as written, generated rules as name_N
    uint32_t root = 0;                     // index of the rule named root
    GrammarLimits limits;                  // the limits it was parsed under; the matcher keeps them too
};

// Errors (ErrorKind::InvalidInput) read "grammar:LINE:COLUMN: what" (1-based, columns in bytes).
Result<Grammar> parse_grammar(std::string_view source, const GrammarLimits& limits = {});

// Appends the code points of well-formed UTF-8 `text` (shortest forms only, no surrogates, at most
// U+10FFFF) to `code_points`; false, with `code_points` partly filled, when `text` is not well formed.
bool decode_utf8(std::string_view text, std::vector<uint32_t>& code_points);

} // namespace cflow
