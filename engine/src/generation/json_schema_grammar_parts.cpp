#include "json_schema_grammar_parts.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include "cflow/engine/generation/grammar.h"

namespace cflow::json_schema_parts {
namespace {

std::string schema_parts_digit_class(char lo, char hi) {
    if (lo == hi) return std::string("\"") + lo + "\"";
    return std::string("[") + lo + "-" + hi + "]";
}

std::string schema_parts_any_digits(size_t count) {
    if (count == 0) return "";
    if (count == 1) return "[0-9]";
    return "[0-9]{" + std::to_string(count) + "}";
}

std::string schema_parts_join(const std::string& a, const std::string& b) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    return a + " " + b;
}

// Equal-length digit strings lo <= hi: the classic split on the first differing digit.
std::string schema_parts_digits_between(std::string_view lo, std::string_view hi) {
    if (lo.empty()) return "";
    const size_t rest = lo.size() - 1;
    if (lo[0] == hi[0])
        return schema_parts_join(schema_parts_digit_class(lo[0], lo[0]),
                                 schema_parts_digits_between(lo.substr(1), hi.substr(1)));
    const bool low_tail_zero = lo.find_first_not_of('0', 1) == std::string_view::npos;
    const bool high_tail_nine = hi.find_first_not_of('9', 1) == std::string_view::npos;
    if (low_tail_zero && high_tail_nine)
        return schema_parts_join(schema_parts_digit_class(lo[0], hi[0]), schema_parts_any_digits(rest));
    std::vector<std::string> alternatives;
    alternatives.push_back(schema_parts_join(schema_parts_digit_class(lo[0], lo[0]),
                                             schema_parts_digits_between(lo.substr(1), std::string(rest, '9'))));
    if (hi[0] - lo[0] > 1)
        alternatives.push_back(schema_parts_join(schema_parts_digit_class(char(lo[0] + 1), char(hi[0] - 1)),
                                                 schema_parts_any_digits(rest)));
    alternatives.push_back(schema_parts_join(schema_parts_digit_class(hi[0], hi[0]),
                                             schema_parts_digits_between(std::string(rest, '0'), hi.substr(1))));
    std::string out = "(";
    for (size_t i = 0; i < alternatives.size(); ++i) out += (i ? " | " : "") + alternatives[i];
    return out + ")";
}

std::string schema_parts_fraction() { return "(\".\" [0-9]{1," + std::to_string(kMaxFractionDigits) + "})?"; }
std::string schema_parts_zero_fraction() { return "(\".\" \"0\"{1," + std::to_string(kMaxFractionDigits) + "})?"; }

// Magnitudes in [lo, hi] (0 <= lo <= hi) as a decimal: whole part below hi with any fraction, or
// hi itself with only zeros after the point.
std::string schema_parts_decimal_magnitude(int64_t lo, int64_t hi, bool hi_unbounded) {
    if (hi_unbounded) return "(" + unsigned_range(lo, kMaxIntegerMagnitude) + " " + schema_parts_fraction() + ")";
    if (lo == hi) return "(" + unsigned_range(hi, hi) + " " + schema_parts_zero_fraction() + ")";
    return "(" + unsigned_range(lo, hi - 1) + " " + schema_parts_fraction() + " | " + unsigned_range(hi, hi) + " " +
           schema_parts_zero_fraction() + ")";
}

std::string schema_parts_signed_range(std::optional<int64_t> lo, std::optional<int64_t> hi, bool decimal) {
    const int64_t low = lo ? *lo : -kMaxIntegerMagnitude;
    const int64_t high = hi ? *hi : kMaxIntegerMagnitude;
    std::vector<std::string> parts;
    if (high >= 0) {
        const int64_t from = std::max<int64_t>(low, 0);
        parts.push_back(decimal ? schema_parts_decimal_magnitude(from, high, !hi) : unsigned_range(from, high));
    }
    if (low < 0) {
        // -0 and -0.5 are values >= low too when high >= 0; integers skip the odd "-0".
        const int64_t from = high < 0 ? -high : (decimal ? 0 : 1);
        if (from <= -low)
            parts.push_back("\"-\" " + (decimal ? schema_parts_decimal_magnitude(from, -low, !lo) : unsigned_range(from, -low)));
    }
    std::string out = "(";
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? " | " : "") + parts[i];
    return out + ")";
}

std::string schema_parts_hex_code(uint32_t code_point) {
    char buffer[16];
    if (code_point <= 0xFFFF)
        std::snprintf(buffer, sizeof buffer, "\\u%04X", code_point);
    else
        std::snprintf(buffer, sizeof buffer, "\\U%08X", code_point);
    return buffer;
}

struct KeyTrieNode {
    bool terminal = false;
    std::map<uint32_t, std::unique_ptr<KeyTrieNode>> children;
};

// A name a raw key can spell: valid UTF-8 without '"', '\' or control characters.
bool schema_parts_raw_spellable(const std::vector<uint32_t>& code_points) {
    for (uint32_t c : code_points)
        if (c < 0x20 || c == '"' || c == '\\') return false;
    return true;
}

} // namespace

std::string gbnf_literal(std::string_view text) {
    std::string out = "\"";
    for (unsigned char c : text) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
            if (c < 0x20 || c == 0x7F) {
                char buffer[8];
                std::snprintf(buffer, sizeof buffer, "\\x%02X", c);
                out += buffer;
            } else {
                out += char(c);
            }
        }
    }
    return out + "\"";
}

std::string gbnf_class_char(uint32_t code_point) { return schema_parts_hex_code(code_point); }

std::string unsigned_range(int64_t lo, int64_t hi) {
    const std::string low = std::to_string(lo), high = std::to_string(hi);
    std::vector<std::string> alternatives;
    for (size_t length = low.size(); length <= high.size(); ++length) {
        const std::string from = length == low.size() ? low : "1" + std::string(length - 1, '0');
        const std::string to = length == high.size() ? high : std::string(length, '9');
        alternatives.push_back(schema_parts_digits_between(from, to));
    }
    std::string out = "(";
    for (size_t i = 0; i < alternatives.size(); ++i) out += (i ? " | " : "") + alternatives[i];
    return out + ")";
}

std::string integer_in_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
    return schema_parts_signed_range(lo, hi, false);
}

std::string decimal_in_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
    return schema_parts_signed_range(lo, hi, true);
}

bool is_supported_format(std::string_view format) {
    return format == "date" || format == "time" || format == "date-time" || format == "uuid";
}

// RFC 3339 full-date with the days of each month (29 February in leap years only: divisible by
// 4 and not by 100, or by 400), partial-time with a required offset, RFC 4122 uuid in hex.
std::vector<NamedBody> format_rules(std::string_view format, std::string_view prefix) {
    const std::string p(prefix);
    const std::string d28 = "(\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8])";
    const std::vector<NamedBody> date = {
        {"date", "\"\\\"\" " + p + "date-body \"\\\"\""},
        {"date-body", p + "year \"-\" ( (\"01\" | \"03\" | \"05\" | \"07\" | \"08\" | \"10\" | \"12\") \"-\" ( " + d28 +
                          " | \"29\" | \"30\" | \"31\" ) | (\"04\" | \"06\" | \"09\" | \"11\") \"-\" ( " + d28 +
                          " | \"29\" | \"30\" ) | \"02-\" " + d28 + " ) | " + p + "leap-year \"-02-29\""},
        {"year", "[0-9]{4}"},
        {"leap-year", "[0-9] [0-9] ( [02468] [48] | [13579] [26] | [2468] \"0\" ) | ( [02468] [048] | [13579] [26] ) \"00\""},
    };
    const std::vector<NamedBody> time = {
        {"time", "\"\\\"\" " + p + "time-body \"\\\"\""},
        {"time-body", "( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{1,9} )? "
                      "( \"Z\" | [+-] ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )"},
    };
    if (format == "date") return date;
    if (format == "time") return time;
    if (format == "date-time") {
        std::vector<NamedBody> rules = {{"date-time", "\"\\\"\" " + p + "date-body \"T\" " + p + "time-body \"\\\"\""}};
        rules.insert(rules.end(), date.begin() + 1, date.end());
        rules.push_back(time[1]);
        return rules;
    }
    if (format == "uuid")
        return {{"uuid", "\"\\\"\" [0-9a-f]{8} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{12} \"\\\"\""}};
    return {};
}

std::vector<NamedBody> key_not_in_rules(const std::vector<std::string>& excluded, std::string_view prefix,
                                        size_t tail_max_chars) {
    const std::string p(prefix);
    KeyTrieNode root;
    for (const std::string& name : excluded) {
        std::vector<uint32_t> code_points;
        if (!decode_utf8(name, code_points) || !schema_parts_raw_spellable(code_points)) continue;
        KeyTrieNode* node = &root;
        for (uint32_t c : code_points) {
            auto& child = node->children[c];
            if (!child) child = std::make_unique<KeyTrieNode>();
            node = child.get();
        }
        node->terminal = true;
    }
    const std::string raw_class = "[^\"\\\\\\x00-\\x1F";
    std::vector<NamedBody> rules = {{"", "\"\\\"\" " + p + "-n0"}, {"-raw", raw_class + "]"}};
    // Breadth-first over the trie: node k is rule -nk; at each node the key may end (unless a
    // declared key ends there), leave the trie with a character no declared key continues with,
    // or follow one that some key does.
    std::vector<const KeyTrieNode*> queue = {&root};
    for (size_t k = 0; k < queue.size(); ++k) {
        const KeyTrieNode* node = queue[k];
        std::string body;
        if (!node->terminal) body = "\"\\\"\"";
        std::string leave = raw_class;
        for (const auto& [c, child] : node->children) leave += schema_parts_hex_code(c);
        leave += "] " + p + "-raw" + (tail_max_chars > 0 ? "{0," + std::to_string(tail_max_chars) + "}" : "*") + " \"\\\"\"";
        body += (body.empty() ? "" : " | ") + leave;
        for (const auto& [c, child] : node->children) {
            body += " | [" + schema_parts_hex_code(c) + "] " + p + "-n" + std::to_string(queue.size());
            queue.push_back(child.get());
        }
        rules.push_back({"-n" + std::to_string(k), body});
    }
    return rules;
}

} // namespace cflow::json_schema_parts
