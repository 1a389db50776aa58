// GBNF text -> flattened Grammar, with the checks that keep the matcher finite: every referenced
// rule defined, a root, no left recursion, every rule able to finish, sizes capped.
#include "cflow/engine/generation/grammar.h"

#include <algorithm>
#include <limits>
#include <new>
#include <optional>
#include <unordered_map>

namespace cflow {

bool decode_utf8(std::string_view text, std::vector<uint32_t>& code_points) {
    for (size_t i = 0; i < text.size();) {
        const auto lead = static_cast<unsigned char>(text[i]);
        size_t length = 0;
        uint32_t value = 0, minimum = 0;
        if (lead < 0x80) {
            length = 1, value = lead;
        } else if ((lead >> 5) == 0x6) {
            length = 2, value = lead & 0x1Fu, minimum = 0x80;
        } else if ((lead >> 4) == 0xE) {
            length = 3, value = lead & 0x0Fu, minimum = 0x800;
        } else if ((lead >> 3) == 0x1E) {
            length = 4, value = lead & 0x07u, minimum = 0x10000;
        } else {
            return false;
        }
        if (i + length > text.size()) return false;
        for (size_t k = 1; k < length; ++k) {
            const auto byte = static_cast<unsigned char>(text[i + k]);
            if ((byte & 0xC0) != 0x80) return false;
            value = (value << 6) | (byte & 0x3Fu);
        }
        if (value < minimum || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return false;
        code_points.push_back(value);
        i += length;
    }
    return true;
}

namespace {

constexpr uint32_t kGbnfUnbounded = std::numeric_limits<uint32_t>::max();
constexpr int kGbnfMaxNesting = 256;  // parentheses; the parser recurses once per level

bool gbnf_is_word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

bool gbnf_is_end_of_alternative(GrammarOp op) { return op == GrammarOp::End || op == GrammarOp::Alt; }

class GbnfParser {
public:
    GbnfParser(std::string_view source, const GrammarLimits& limits) : source_(source), limits_(limits) {}

    Result<Grammar> run() {
        if (source_.size() > limits_.max_source_bytes)
            return make_error("grammar: " + std::to_string(source_.size()) + " bytes, over the limit of " +
                              std::to_string(limits_.max_source_bytes));
        skip_space(true);
        while (!failed() && pos_ < source_.size()) {
            parse_rule();
            skip_space(true);
        }
        if (failed()) return *error_;
        for (uint32_t id = 0; id < rules_.size(); ++id)
            if (!defined_[id]) return error_at(used_at_[id], "undefined rule '" + names_[id] + "'");
        const auto root = ids_.find("root");
        if (root == ids_.end() || !defined_[root->second])
            return make_error("grammar:1:1: no rule named 'root' (a grammar starts at root)");
        if (auto checked = check_finite(); !checked) return checked.take_error();

        Grammar grammar;
        grammar.root = root->second;
        grammar.limits = limits_;
        grammar.rule_names = names_;
        for (auto& rule : rules_) {
            grammar.rule_start.push_back(uint32_t(grammar.elements.size()));
            grammar.elements.insert(grammar.elements.end(), rule.begin(), rule.end());
        }
        return grammar;
    }

private:
    bool failed() const { return error_.has_value(); }

    std::string line_column(size_t offset) const {
        size_t line = 1, column = 1;
        for (size_t i = 0; i < offset && i < source_.size(); ++i) {
            if (source_[i] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
        return std::to_string(line) + ":" + std::to_string(column);
    }
    Error error_at(size_t offset, const std::string& what) const {
        return make_error("grammar:" + line_column(offset) + ": " + what);
    }
    void fail(size_t offset, const std::string& what) {
        if (!error_) error_ = error_at(offset, what);
    }

    // Spaces, tabs and comments; newlines too where a rule may go on over lines.
    void skip_space(bool newline_ok) {
        while (pos_ < source_.size()) {
            const char c = source_[pos_];
            if (c == ' ' || c == '\t') {
                ++pos_;
            } else if (c == '#') {
                while (pos_ < source_.size() && source_[pos_] != '\n' && source_[pos_] != '\r') ++pos_;
            } else if (newline_ok && (c == '\n' || c == '\r')) {
                ++pos_;
            } else {
                break;
            }
        }
    }

    std::string_view parse_name() {
        const size_t start = pos_;
        while (pos_ < source_.size() && gbnf_is_word_char(source_[pos_])) ++pos_;
        return source_.substr(start, pos_ - start);
    }

    uint32_t rule_id(std::string_view name, size_t used_at) {
        const auto [it, inserted] = ids_.try_emplace(std::string(name), uint32_t(rules_.size()));
        if (inserted) add_rule_slot(std::string(name), used_at);
        return it->second;
    }
    uint32_t add_rule_slot(std::string name, size_t at) {
        rules_.emplace_back();
        names_.push_back(std::move(name));
        defined_.push_back(false);
        used_at_.push_back(at);
        defined_at_.push_back(at);
        return uint32_t(rules_.size() - 1);
    }
    // A rule for a group or a repetition: named after the rule it appears in, like llama.cpp's.
    uint32_t generated_rule(const std::string& base, size_t at) {
        std::string name;
        do name = base + "_" + std::to_string(++generated_); while (ids_.count(name));
        const uint32_t id = add_rule_slot(name, at);
        ids_.emplace(std::move(name), id);
        defined_[id] = true;
        return id;
    }

    // Counts every element against max_elements before it is stored.
    bool reserve_elements(size_t more, size_t at) {
        if (more > limits_.max_elements || live_elements_ > limits_.max_elements - more) {
            fail(at, "the grammar expands to more than " + std::to_string(limits_.max_elements) +
                         " elements (repetitions multiply); write it with fewer or smaller repetitions");
            return false;
        }
        live_elements_ += more;
        return true;
    }
    void emit(std::vector<GrammarElement>& out, GrammarOp op, uint32_t value, size_t at) {
        if (reserve_elements(1, at)) out.push_back({op, value});
    }

    void parse_rule() {
        const size_t name_at = pos_;
        const std::string_view name = parse_name();
        if (name.empty()) return fail(pos_, std::string("expecting a rule name, found '") + source_[pos_] + "'");
        skip_space(false);
        if (source_.substr(pos_, 3) != "::=") return fail(pos_, "expecting '::=' after the rule name '" + std::string(name) + "'");
        pos_ += 3;
        skip_space(true);
        const uint32_t id = rule_id(name, name_at);
        if (defined_[id] && !failed())
            return fail(name_at, "rule '" + std::string(name) + "' is defined twice (first at " +
                                     line_column(defined_at_[id]) + ")");
        defined_[id] = true;
        defined_at_[id] = name_at;
        const std::string rule_name = names_[id];  // a copy: generated rules grow names_
        parse_alternates(rule_name, id, false, 0);
        if (failed()) return;
        if (pos_ < source_.size()) {
            if (source_[pos_] == '\r' || source_[pos_] == '\n') {
                ++pos_;
            } else {
                fail(pos_, std::string("expecting a newline or the end of the grammar, found '") + source_[pos_] + "'");
            }
        }
    }

    void parse_alternates(const std::string& rule_name, uint32_t id, bool nested, int depth) {
        std::vector<GrammarElement> out;
        parse_sequence(rule_name, out, nested, depth);
        while (!failed() && pos_ < source_.size() && source_[pos_] == '|') {
            emit(out, GrammarOp::Alt, 0, pos_);
            ++pos_;
            skip_space(true);
            parse_sequence(rule_name, out, nested, depth);
        }
        emit(out, GrammarOp::End, 0, pos_);
        rules_[id] = std::move(out);
    }

    // One code point of a literal or a class: an escape or a UTF-8 sequence.
    std::optional<uint32_t> parse_char() {
        const size_t at = pos_;
        if (source_[pos_] == '\\') {
            if (++pos_ >= source_.size()) return fail(at, "unterminated escape"), std::nullopt;
            const char e = source_[pos_++];
            switch (e) {
            case 'n': return 0x0A;
            case 'r': return 0x0D;
            case 't': return 0x09;
            case '\\': case '"': case '[': case ']': case '-': case '/': case '^': case '.': return uint32_t(e);
            case 'x': return parse_hex(at, 2);
            case 'u': return parse_hex(at, 4);
            case 'U': return parse_hex(at, 8);
            default: return fail(at, std::string("unknown escape '\\") + e + "'"), std::nullopt;
            }
        }
        // The longest well-formed UTF-8 sequence starting here (1 to 4 bytes).
        for (size_t length = 1; length <= 4 && pos_ + length <= source_.size(); ++length) {
            std::vector<uint32_t> cps;
            if (decode_utf8(source_.substr(pos_, length), cps) && cps.size() == 1) {
                pos_ += length;
                return cps[0];
            }
        }
        return fail(at, "the grammar is not valid UTF-8 here"), std::nullopt;
    }
    std::optional<uint32_t> parse_hex(size_t at, int digits) {
        uint32_t value = 0;
        for (int i = 0; i < digits; ++i, ++pos_) {
            if (pos_ >= source_.size()) return fail(at, "escape needs " + std::to_string(digits) + " hex digits"), std::nullopt;
            const char c = source_[pos_];
            uint32_t digit = 0;
            if (c >= '0' && c <= '9') digit = uint32_t(c - '0');
            else if (c >= 'a' && c <= 'f') digit = uint32_t(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') digit = uint32_t(c - 'A' + 10);
            else return fail(at, "escape needs " + std::to_string(digits) + " hex digits"), std::nullopt;
            value = value * 16 + digit;
        }
        if (value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF))
            return fail(at, "escape is not a Unicode scalar value (surrogates and values over U+10FFFF are not)"), std::nullopt;
        return value;
    }

    std::optional<uint32_t> parse_bound() {
        const size_t at = pos_;
        if (pos_ >= source_.size() || source_[pos_] < '0' || source_[pos_] > '9')
            return fail(at, "expecting a number in the repetition bounds"), std::nullopt;
        uint64_t value = 0;
        while (pos_ < source_.size() && source_[pos_] >= '0' && source_[pos_] <= '9') {
            value = value * 10 + uint64_t(source_[pos_++] - '0');
            if (value > limits_.max_repetition)
                return fail(at, "repetition bound over the limit of " + std::to_string(limits_.max_repetition)), std::nullopt;
        }
        return uint32_t(value);
    }

    void parse_literal(std::vector<GrammarElement>& out) {
        const size_t start = pos_++;
        while (!failed() && pos_ < source_.size() && source_[pos_] != '"') {
            if (source_[pos_] == '\n' || source_[pos_] == '\r') break;
            if (auto cp = parse_char()) emit(out, GrammarOp::Char, *cp, start);
        }
        if (failed()) return;
        if (pos_ >= source_.size() || source_[pos_] != '"') return fail(start, "unterminated string literal");
        ++pos_;
    }

    void parse_class(std::vector<GrammarElement>& out) {
        const size_t start = pos_++;
        GrammarOp first_op = GrammarOp::Char;
        if (pos_ < source_.size() && source_[pos_] == '^') {
            first_op = GrammarOp::CharNot;
            ++pos_;
        }
        bool first = true;
        while (!failed() && pos_ < source_.size() && source_[pos_] != ']') {
            if (source_[pos_] == '\n' || source_[pos_] == '\r') break;
            const auto lo = parse_char();
            if (!lo) return;
            emit(out, first ? first_op : GrammarOp::CharAlt, *lo, start);
            first = false;
            if (pos_ + 1 < source_.size() && source_[pos_] == '-' && source_[pos_ + 1] != ']') {
                const size_t range_at = pos_++;
                const auto hi = parse_char();
                if (!hi) return;
                if (*hi < *lo) return fail(range_at, "character range ends below its start");
                emit(out, GrammarOp::CharRangeUpper, *hi, start);
            }
        }
        if (failed()) return;
        if (pos_ >= source_.size() || source_[pos_] != ']') return fail(start, "unterminated character class");
        ++pos_;
        if (first) {
            if (first_op == GrammarOp::Char) return fail(start, "empty character class [] matches nothing");
            emit(out, GrammarOp::CharAny, 0, start);  // [^] excludes nothing
        }
    }

    void parse_sequence(const std::string& rule_name, std::vector<GrammarElement>& out, bool nested, int depth) {
        size_t last_symbol = out.size();
        while (!failed() && pos_ < source_.size()) {
            const size_t at = pos_;
            const char c = source_[pos_];
            if (c == '"') {
                last_symbol = out.size();
                parse_literal(out);
            } else if (c == '[') {
                last_symbol = out.size();
                parse_class(out);
            } else if (c == '.') {
                last_symbol = out.size();
                emit(out, GrammarOp::CharAny, 0, at);
                ++pos_;
            } else if (gbnf_is_word_char(c)) {
                last_symbol = out.size();
                const uint32_t ref = rule_id(parse_name(), at);
                emit(out, GrammarOp::RuleRef, ref, at);
            } else if (c == '(') {
                if (depth + 1 > kGbnfMaxNesting)
                    return fail(at, "groups nested deeper than " + std::to_string(kGbnfMaxNesting));
                ++pos_;
                skip_space(true);
                const uint32_t sub = generated_rule(rule_name, at);
                parse_alternates(rule_name, sub, true, depth + 1);
                if (failed()) return;
                if (pos_ >= source_.size() || source_[pos_] != ')') return fail(at, "unclosed '(': expecting ')'");
                ++pos_;
                last_symbol = out.size();
                emit(out, GrammarOp::RuleRef, sub, at);
            } else if (c == '*' || c == '+' || c == '?') {
                ++pos_;
                repeat(rule_name, out, last_symbol, c == '+' ? 1 : 0, c == '?' ? 1 : kGbnfUnbounded, at);
            } else if (c == '{') {
                ++pos_;
                skip_space(nested);
                const auto min_times = parse_bound();
                if (!min_times) return;
                skip_space(nested);
                uint32_t max_times = *min_times;
                if (pos_ < source_.size() && source_[pos_] == ',') {
                    ++pos_;
                    skip_space(nested);
                    max_times = kGbnfUnbounded;
                    if (pos_ < source_.size() && source_[pos_] >= '0' && source_[pos_] <= '9') {
                        const auto bound = parse_bound();
                        if (!bound) return;
                        max_times = *bound;
                    }
                    skip_space(nested);
                }
                if (pos_ >= source_.size() || source_[pos_] != '}') return fail(at, "expecting '}' to close the repetition");
                ++pos_;
                if (max_times < *min_times) return fail(at, "repetition {m,n} with n below m");
                repeat(rule_name, out, last_symbol, *min_times, max_times, at);
            } else {
                break;
            }
            skip_space(nested);
        }
    }

    // llama.cpp's expansion: the item m times, then max-m optional copies as a chain of generated
    // rules (x{2,4} -> x x r2, r2 ::= x r1 | "", r1 ::= x | ""); unbounded: r ::= x r | "".
    void repeat(const std::string& rule_name, std::vector<GrammarElement>& out, size_t last_symbol, uint32_t min_times,
                uint32_t max_times, size_t at) {
        if (failed()) return;
        if (last_symbol == out.size())
            return fail(at, std::string("'") + source_[at] + "' has nothing before it to repeat");
        const std::vector<GrammarElement> item(out.begin() + std::ptrdiff_t(last_symbol), out.end());
        if (min_times == 0) {
            live_elements_ -= item.size();
            out.resize(last_symbol);
        } else if (min_times > 1) {
            if (!reserve_elements(item.size() * (min_times - 1), at)) return;
            for (uint32_t i = 1; i < min_times; ++i) out.insert(out.end(), item.begin(), item.end());
        }
        const uint32_t optional_copies = max_times == kGbnfUnbounded ? 1 : max_times - min_times;
        uint32_t previous = 0;
        for (uint32_t i = 0; i < optional_copies; ++i) {
            if (!reserve_elements(item.size() + 3, at)) return;
            std::vector<GrammarElement> rule = item;
            const uint32_t id = generated_rule(rule_name, at);
            if (i > 0 || max_times == kGbnfUnbounded)
                rule.push_back({GrammarOp::RuleRef, max_times == kGbnfUnbounded ? id : previous});
            rule.push_back({GrammarOp::Alt, 0});
            rule.push_back({GrammarOp::End, 0});
            rules_[id] = std::move(rule);
            previous = id;
        }
        if (optional_copies > 0) emit(out, GrammarOp::RuleRef, previous, at);
    }

    // The alternatives of a rule as [begin, end) element ranges.
    template <class Visit>
    static void for_each_alternative(const std::vector<GrammarElement>& rule, Visit&& visit) {
        size_t begin = 0;
        for (size_t i = 0; i < rule.size(); ++i) {
            if (gbnf_is_end_of_alternative(rule[i].op)) {
                visit(begin, i);
                begin = i + 1;
            }
        }
    }
    static bool is_class_part(GrammarOp op) { return op == GrammarOp::CharAlt || op == GrammarOp::CharRangeUpper; }

    // Refuses grammars the matcher could not run in bounded time or that leave dead ends: a rule that
    // can never finish (every alternative needs itself again), and left recursion (a rule reaching
    // itself before any code point).
    Status check_finite() {
        const size_t n = rules_.size();
        // Productive: some alternative made only of code points and productive rules (a fixed point).
        std::vector<char> productive(n, 0), nullable(n, 0);
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t r = 0; r < n; ++r) {
                for_each_alternative(rules_[r], [&](size_t b, size_t e) {
                    bool all_productive = true, all_nullable = true;
                    for (size_t i = b; i < e; ++i) {
                        const GrammarElement& el = rules_[r][i];
                        if (is_class_part(el.op)) continue;
                        if (el.op == GrammarOp::RuleRef) {
                            all_productive &= productive[el.value] != 0;
                            all_nullable &= nullable[el.value] != 0;
                        } else {
                            all_nullable = false;
                        }
                    }
                    if (all_productive && !productive[r]) productive[r] = 1, changed = true;
                    if (all_nullable && !nullable[r]) nullable[r] = 1, changed = true;
                });
            }
        }
        // Name the rule that loops on itself where there is one (the cause, not a rule using it).
        std::optional<size_t> unfinished;
        std::string needed;
        for (size_t r = 0; r < n; ++r) {
            if (productive[r]) continue;
            std::string first_needed;
            bool self = false;
            for_each_alternative(rules_[r], [&](size_t b, size_t e) {
                for (size_t i = b; i < e; ++i) {
                    const GrammarElement& el = rules_[r][i];
                    if (el.op != GrammarOp::RuleRef || productive[el.value]) continue;
                    if (first_needed.empty()) first_needed = names_[el.value];
                    self |= el.value == r;
                    break;
                }
            });
            if (!unfinished || self) {
                const bool had_self = unfinished && needed == names_[*unfinished];
                if (!had_self) unfinished = r, needed = self ? names_[r] : first_needed;
            }
        }
        if (unfinished)
            return error_at(defined_at_[*unfinished], "rule '" + names_[*unfinished] +
                                                          "' can never finish: every alternative needs a rule that cannot "
                                                          "finish either (" + needed + "), so it matches nothing");
        // Left edges: r -> s where s may start r's alternative (everything before it can be empty).
        std::vector<std::vector<uint32_t>> left(n);
        for (size_t r = 0; r < n; ++r) {
            for_each_alternative(rules_[r], [&](size_t b, size_t e) {
                for (size_t i = b; i < e; ++i) {
                    const GrammarElement& el = rules_[r][i];
                    if (el.op != GrammarOp::RuleRef) break;
                    left[r].push_back(el.value);
                    if (!nullable[el.value]) break;
                }
            });
        }
        // Iterative depth-first search; a grey rule met again closes a cycle.
        std::vector<uint8_t> colour(n, 0);  // 0 white, 1 grey (on the path), 2 black
        std::vector<std::pair<uint32_t, size_t>> path;  // (rule, next edge)
        for (uint32_t start = 0; start < n; ++start) {
            if (colour[start]) continue;
            path.push_back({start, 0});
            colour[start] = 1;
            while (!path.empty()) {
                auto& [rule, edge] = path.back();
                if (edge == left[rule].size()) {
                    colour[rule] = 2;
                    path.pop_back();
                    continue;
                }
                const uint32_t next = left[rule][edge++];
                if (colour[next] == 1) {
                    std::string cycle;
                    size_t first = 0;
                    while (path[first].first != next) ++first;
                    for (size_t i = first; i < path.size(); ++i) cycle += names_[path[i].first] + " -> ";
                    cycle += names_[next];
                    return error_at(defined_at_[next],
                                    "rule '" + names_[next] + "' is left-recursive (" + cycle +
                                        "): it can reach itself without matching a character, which would loop forever; "
                                        "rewrite it right-recursive or with a repetition (a repetition of something that "
                                        "can be empty does this too)");
                }
                if (colour[next] == 0) {
                    colour[next] = 1;
                    path.push_back({next, 0});
                }
            }
        }
        return Status::success();
    }

    std::string_view source_;
    GrammarLimits limits_;
    size_t pos_ = 0;
    std::optional<Error> error_;  // the first error; parsing stops at it
    std::vector<std::vector<GrammarElement>> rules_;  // [rules] each rule's run, End-terminated once parsed
    std::vector<std::string> names_;                  // [rules]
    std::vector<bool> defined_;                       // [rules]
    std::vector<size_t> used_at_;                     // [rules] byte offset of the first reference
    std::vector<size_t> defined_at_;                  // [rules] byte offset of the definition
    std::unordered_map<std::string, uint32_t> ids_;
    size_t live_elements_ = 0;
    uint32_t generated_ = 0;
};

} // namespace

Result<Grammar> parse_grammar(std::string_view source, const GrammarLimits& limits) {
    try {
        return GbnfParser(source, limits).run();
    } catch (const std::bad_alloc&) {
        return out_of_memory_error("grammar");
    }
}

} // namespace cflow
