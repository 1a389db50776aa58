#include "chat/jinja/jinja_lexer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "chat/jinja/jinja_value.h"

namespace cflow::jinja {

std::string located(SourcePos pos, std::string_view message) {
    std::string out = "line " + std::to_string(pos.line) + ", column " + std::to_string(pos.column) + ": ";
    out += message;
    return out;
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }
int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// jinja2 normalizes newlines to "\n" and drops one trailing newline (keep_trailing_newline=False).
std::string normalize_source(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

class Lexer {
public:
    Lexer(std::string_view source, const LexerOptions& options) : src_(normalize_source(source)), options_(options) {
        line_starts_.push_back(0);
        for (size_t i = 0; i < src_.size(); ++i)
            if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }

    std::vector<Token> run() {
        size_t pos = 0;
        bool line_starting = true;
        const size_t n = src_.size();
        while (pos < n) {
            size_t p = find_tag_start(pos);
            if (p == std::string::npos) {
                emit_text(src_.substr(pos), pos);
                break;
            }
            char kind = src_[p + 1];
            char modifier = p + 2 < n ? src_[p + 2] : '\0';
            std::string text = src_.substr(pos, p - pos);
            if (modifier == '-') {
                while (!text.empty() && is_space(text.back())) text.pop_back();
            } else if (kind != '{' && options_.lstrip_blocks && modifier != '+') {
                size_t line_begin = text.rfind('\n');
                line_begin = line_begin == std::string::npos ? 0 : line_begin + 1;
                if ((line_begin > 0 || line_starting) && text.find_first_not_of(" \t", line_begin) == std::string::npos)
                    text.resize(line_begin);
            }
            emit_text(text, pos);

            if (kind == '#') {
                size_t end = src_.find("#}", p + 2);
                if (end == std::string::npos) fail(located(pos_of(p), "syntax error: Missing end of comment tag"));
                bool strip = end > p + 2 && src_[end - 1] == '-';
                bool keep = end > p + 2 && src_[end - 1] == '+';
                pos = skip_after_tag(end + 2, strip, !keep && options_.trim_blocks);
            } else if (kind == '%' && lex_raw(p, pos)) {
                // pos advanced past {% endraw %}
            } else {
                Token begin;
                begin.type = kind == '{' ? TokenType::VariableBegin : TokenType::BlockBegin;
                begin.pos = pos_of(p);
                tokens_.push_back(begin);
                size_t inner = p + 2 + ((modifier == '-' || modifier == '+') ? 1 : 0);
                pos = lex_tag(inner, p, kind == '{');
            }
            line_starting = pos > 0 && src_[pos - 1] == '\n';
        }
        Token end;
        end.type = TokenType::End;
        end.pos = pos_of(src_.size());
        tokens_.push_back(end);
        return std::move(tokens_);
    }

private:
    std::string src_;
    LexerOptions options_;
    std::vector<size_t> line_starts_;
    std::vector<Token> tokens_;

    SourcePos pos_of(size_t offset) const {
        auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
        size_t line_index = static_cast<size_t>(it - line_starts_.begin()) - 1;
        SourcePos pos;
        pos.line = static_cast<uint32_t>(line_index + 1);
        pos.column = static_cast<uint32_t>(offset - line_starts_[line_index] + 1);
        return pos;
    }

    size_t find_tag_start(size_t from) const {
        for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
            if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
        }
        return std::string::npos;
    }

    void emit_text(const std::string& text, size_t offset) {
        if (text.empty()) return;
        Token t;
        t.type = TokenType::Text;
        t.text = text;
        t.pos = pos_of(offset);
        tokens_.push_back(std::move(t));
    }

    // After a tag end: `-` strips all following whitespace, trim_blocks removes one newline.
    size_t skip_after_tag(size_t pos, bool strip, bool trim) const {
        if (strip) {
            while (pos < src_.size() && is_space(src_[pos])) ++pos;
        } else if (trim && pos < src_.size() && src_[pos] == '\n') {
            ++pos;
        }
        return pos;
    }

    bool starts_with_at(size_t pos, std::string_view what) const {
        return pos <= src_.size() && src_.compare(pos, what.size(), what) == 0;
    }

    // Matches `{%[-+]? raw [-]?%}` at p; emits the raw content as text and sets pos after endraw.
    bool lex_raw(size_t p, size_t& pos) {
        size_t i = p + 2;
        if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
        while (i < src_.size() && is_space(src_[i])) ++i;
        if (!starts_with_at(i, "raw") || (i + 3 < src_.size() && is_name_char(src_[i + 3]))) return false;
        i += 3;
        while (i < src_.size() && is_space(src_[i])) ++i;
        bool strip = false;
        if (i < src_.size() && src_[i] == '-') {
            strip = true;
            ++i;
        }
        if (!starts_with_at(i, "%}")) return false;
        size_t content_begin = skip_after_tag(i + 2, strip, options_.trim_blocks);
        // Find {%[-+]? endraw [-+]?%}
        for (size_t k = src_.find("{%", content_begin); k != std::string::npos; k = src_.find("{%", k + 1)) {
            size_t j = k + 2;
            char begin_mod = '\0';
            if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) begin_mod = src_[j++];
            while (j < src_.size() && is_space(src_[j])) ++j;
            if (!starts_with_at(j, "endraw")) continue;
            j += 6;
            while (j < src_.size() && is_space(src_[j])) ++j;
            char end_mod = '\0';
            if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) end_mod = src_[j++];
            if (!starts_with_at(j, "%}")) continue;
            std::string content = src_.substr(content_begin, k - content_begin);
            if (begin_mod == '-') {
                while (!content.empty() && is_space(content.back())) content.pop_back();
            } else if (options_.lstrip_blocks && begin_mod != '+') {
                size_t line_begin = content.rfind('\n');
                if (line_begin != std::string::npos &&
                    content.find_first_not_of(" \t", line_begin + 1) == std::string::npos)
                    content.resize(line_begin + 1);
            }
            emit_text(content, content_begin);
            pos = skip_after_tag(j + 2, end_mod == '-', end_mod != '+' && options_.trim_blocks);
            return true;
        }
        fail(located(pos_of(p), "syntax error: Missing end of raw directive"));
    }

    // Tokenizes expressions up to the tag end (only when no bracket is open, like jinja2).
    size_t lex_tag(size_t pos, size_t tag_offset, bool variable) {
        const std::string_view end_delim = variable ? "}}" : "%}";
        std::vector<char> balance;
        const size_t n = src_.size();
        while (true) {
            while (pos < n && is_space(src_[pos])) ++pos;
            if (pos >= n)
                fail(located(pos_of(tag_offset), std::string("syntax error: unexpected end of template, tag opened "
                                                             "here is never closed with '") +
                                                     std::string(end_delim) + "'"));
            if (balance.empty()) {
                bool minus = src_[pos] == '-' && starts_with_at(pos + 1, end_delim);
                bool plus = !variable && src_[pos] == '+' && starts_with_at(pos + 1, end_delim);
                if (minus || plus || starts_with_at(pos, end_delim)) {
                    Token end;
                    end.type = variable ? TokenType::VariableEnd : TokenType::BlockEnd;
                    end.pos = pos_of(pos);
                    tokens_.push_back(end);
                    size_t after = pos + end_delim.size() + ((minus || plus) ? 1 : 0);
                    return skip_after_tag(after, minus, !variable && !plus && options_.trim_blocks);
                }
            }
            const size_t start = pos;
            char c = src_[pos];
            Token t;
            t.pos = pos_of(start);
            if (is_name_start(c)) {
                while (pos < n && is_name_char(src_[pos])) ++pos;
                t.type = TokenType::Name;
                t.text = src_.substr(start, pos - start);
            } else if (is_digit(c)) {
                pos = lex_number(pos, t);
            } else if (c == '\'' || c == '"') {
                pos = lex_string(pos, t);
            } else {
                static const char* const two_char[] = {"//", "**", "==", "!=", "<=", ">="};
                std::string op;
                for (const char* candidate : two_char)
                    if (starts_with_at(pos, candidate)) op = candidate;
                if (op.empty()) {
                    if (std::string_view("+-*/%~<>=()[]{},.:|").find(c) == std::string_view::npos)
                        fail(located(t.pos, std::string("syntax error: unexpected character '") + c + "'"));
                    op = std::string(1, c);
                }
                pos += op.size();
                if (op == "(" || op == "[" || op == "{") {
                    balance.push_back(op == "(" ? ')' : op == "[" ? ']' : '}');
                } else if (op == ")" || op == "]" || op == "}") {
                    if (balance.empty() || balance.back() != op[0])
                        fail(located(t.pos, "syntax error: unexpected '" + op + "'"));
                    balance.pop_back();
                }
                t.type = TokenType::Operator;
                t.text = std::move(op);
            }
            tokens_.push_back(std::move(t));
        }
    }

    size_t lex_number(size_t pos, Token& t) {
        const size_t n = src_.size();
        std::string digits;
        auto read_digits = [&]() {
            while (pos < n && (is_digit(src_[pos]) || (src_[pos] == '_' && pos + 1 < n && is_digit(src_[pos + 1])))) {
                if (src_[pos] != '_') digits += src_[pos];
                ++pos;
            }
        };
        read_digits();
        bool is_float = false;
        if (pos + 1 < n && src_[pos] == '.' && is_digit(src_[pos + 1])) {
            is_float = true;
            digits += '.';
            ++pos;
            read_digits();
        }
        if (pos < n && (src_[pos] == 'e' || src_[pos] == 'E')) {
            size_t save = pos;
            std::string save_digits = digits;
            digits += 'e';
            ++pos;
            if (pos < n && (src_[pos] == '+' || src_[pos] == '-')) digits += src_[pos++];
            if (pos < n && is_digit(src_[pos])) {
                is_float = true;
                read_digits();
            } else {
                pos = save;
                digits = save_digits;
            }
        }
        if (is_float) {
            t.type = TokenType::Float;
            t.float_value = std::strtod(digits.c_str(), nullptr);
        } else {
            t.type = TokenType::Integer;
            errno = 0;
            char* end = nullptr;
            long long v = std::strtoll(digits.c_str(), &end, 10);
            if (errno == ERANGE) fail(located(t.pos, "syntax error: integer literal " + digits + " is too large"));
            t.int_value = static_cast<int64_t>(v);
        }
        t.text = digits;
        return pos;
    }

    // Python string literal with unicode-escape decoding (\n, \t, \xhh, \uXXXX, octal, ...).
    size_t lex_string(size_t pos, Token& t) {
        const size_t n = src_.size();
        const char quote = src_[pos++];
        std::string out;
        while (true) {
            if (pos >= n) fail(located(t.pos, "syntax error: unterminated string literal"));
            char c = src_[pos];
            if (c == quote) {
                ++pos;
                break;
            }
            if (c != '\\' || pos + 1 >= n) {
                out += c;
                ++pos;
                continue;
            }
            char e = src_[pos + 1];
            pos += 2;
            switch (e) {
            case '\n': break;  // line continuation
            case '\\': out += '\\'; break;
            case '\'': out += '\''; break;
            case '"': out += '"'; break;
            case 'a': out += '\a'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'v': out += '\v'; break;
            case 'x':
            case 'u':
            case 'U': {
                size_t count = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                uint32_t cp = 0;
                for (size_t k = 0; k < count; ++k) {
                    int h = pos + k < n ? hex_value(src_[pos + k]) : -1;
                    if (h < 0) fail(located(t.pos, std::string("syntax error: truncated \\") + e + " escape"));
                    cp = cp * 16 + static_cast<uint32_t>(h);
                }
                pos += count;
                append_utf8(out, cp);
                break;
            }
            default:
                if (e >= '0' && e <= '7') {
                    uint32_t cp = static_cast<uint32_t>(e - '0');
                    for (int k = 0; k < 2 && pos < n && src_[pos] >= '0' && src_[pos] <= '7'; ++k)
                        cp = cp * 8 + static_cast<uint32_t>(src_[pos++] - '0');
                    append_utf8(out, cp);
                } else {
                    out += '\\';
                    out += e;
                }
            }
        }
        t.type = TokenType::String;
        t.text = std::move(out);
        return pos;
    }
};

} // namespace

std::vector<Token> tokenize(std::string_view source, const LexerOptions& options) {
    return Lexer(source, options).run();
}

} // namespace cflow::jinja
