#pragma once
// GBNF pieces the JSON Schema converter assembles (json_schema_grammar.cpp): literals, bounded
// integer and decimal ranges, the RFC 3339 / RFC 4122 format grammars, keys outside a set.
// Everything here returns GBNF text; nothing parses it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cflow::json_schema_parts {

// Integers are written with at most this many digits: a model cannot grow a number forever and
// every value stays exact in a double (2^53 ~ 9.0e15 > 10^15).
inline constexpr int kMaxIntegerDigits = 15;
inline constexpr int64_t kMaxIntegerMagnitude = 999999999999999;  // 15 nines
inline constexpr int kMaxFractionDigits = 15;

// A GBNF string literal matching exactly `text` (UTF-8).
std::string gbnf_literal(std::string_view text);

// One code point inside a GBNF character class, escaped.
std::string gbnf_class_char(uint32_t code_point);

// Digit strings of the whole numbers in [lo, hi] (0 <= lo <= hi <= kMaxIntegerMagnitude), no
// leading zeros: a parenthesized GBNF expression.
std::string unsigned_range(int64_t lo, int64_t hi);

// An integer in [lo, hi] (either side absent: unbounded up to kMaxIntegerDigits digits), or a
// decimal (fraction allowed, no exponent) whose bounds are whole numbers. Callers keep lo <= hi
// and both within +-kMaxIntegerMagnitude.
std::string integer_in_range(std::optional<int64_t> lo, std::optional<int64_t> hi);
std::string decimal_in_range(std::optional<int64_t> lo, std::optional<int64_t> hi);

// Whole rule bodies for the formats, given the name prefix for their helper rules; each entry is
// {name suffix, body}. The first entry is the format itself.
struct NamedBody {
    std::string suffix;
    std::string body;
};
std::vector<NamedBody> format_rules(std::string_view format, std::string_view prefix);
bool is_supported_format(std::string_view format);

// The JSON strings (quotes included, raw characters only, no escapes) that are none of `excluded`:
// for the extra keys of an object whose declared keys must not be written twice. Returns rule
// bodies named prefix + suffix; the first one is the entry. tail_max_chars > 0: a key that leaves
// the declared keys' trie goes on for at most that many more characters.
std::vector<NamedBody> key_not_in_rules(const std::vector<std::string>& excluded, std::string_view prefix,
                                        size_t tail_max_chars = 0);

} // namespace cflow::json_schema_parts
