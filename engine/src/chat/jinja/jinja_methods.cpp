// Python methods of str, list and dict as templates call them (`'a b'.split()`,
// `messages.append(x)`, `message.get('content')`), plus str % args and str.format.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "chat/jinja/jinja_interpreter.h"

namespace cflow::jinja {

namespace {

bool is_lower(unsigned char c) { return c >= 'a' && c <= 'z'; }
bool is_upper(unsigned char c) { return c >= 'A' && c <= 'Z'; }
bool is_alpha(unsigned char c) { return is_lower(c) || is_upper(c); }
bool is_ascii_digit(unsigned char c) { return c >= '0' && c <= '9'; }
char to_upper(char c) { return is_lower(static_cast<unsigned char>(c)) ? static_cast<char>(c - 32) : c; }
char to_lower(char c) { return is_upper(static_cast<unsigned char>(c)) ? static_cast<char>(c + 32) : c; }

const std::string& arg_string(const Value* v, const char* what) {
    if (!v || !v->is_string()) fail(std::string(what) + " must be a string, not " + (v ? type_name(*v) : "missing"));
    return v->str();
}

int64_t arg_int(const Value* v, const char* what) {
    if (!v || !v->is_integral()) fail(std::string(what) + " must be an integer, not " + (v ? type_name(*v) : "missing"));
    return v->as_int();
}

bool present(const Value* v) { return v && !v->is_none() && !v->is_undefined(); }

// Strips code points in `chars` (whitespace when null) from the chosen ends.
std::string strip_chars(const std::string& s, const Value* chars, bool left, bool right) {
    std::vector<size_t> offsets = utf8_offsets(s);
    std::vector<std::string> set;
    if (present(chars)) {
        const std::string& c = arg_string(chars, "strip chars");
        std::vector<size_t> co = utf8_offsets(c);
        for (size_t i = 0; i + 1 < co.size(); ++i) set.push_back(c.substr(co[i], co[i + 1] - co[i]));
    }
    auto strip_unit = [&](size_t i) {
        std::string_view unit(s.data() + offsets[i], offsets[i + 1] - offsets[i]);
        if (!present(chars)) return py_whitespace_at(unit, 0) == unit.size();
        return std::find(set.begin(), set.end(), unit) != set.end();
    };
    size_t n = offsets.size() - 1;
    size_t begin = 0, end = n;
    if (left)
        while (begin < end && strip_unit(begin)) ++begin;
    if (right)
        while (end > begin && strip_unit(end - 1)) --end;
    return s.substr(offsets[begin], offsets[end] - offsets[begin]);
}

Value split_string(Interpreter& in, const std::string& s, const Value* sep, int64_t maxsplit, bool from_right) {
    std::vector<std::string> parts;
    if (!present(sep)) {
        // Runs of whitespace separate; leading/trailing whitespace yields no empty parts.
        std::vector<std::pair<size_t, size_t>> words;
        size_t i = 0;
        while (i < s.size()) {
            while (size_t n = py_whitespace_at(s, i)) i += n;
            if (i >= s.size()) break;
            size_t j = i;
            while (j < s.size() && !py_whitespace_at(s, j)) j += utf8_char_length(s, j);
            words.emplace_back(i, j);
            i = j;
        }
        // Past maxsplit words the rest is one part, from the next word to the end (split) or from
        // the start to the word before the kept ones (rsplit), its outer whitespace kept (CPython).
        if (maxsplit >= 0 && static_cast<int64_t>(words.size()) > maxsplit) {
            size_t keep = static_cast<size_t>(maxsplit);
            if (!from_right) {
                for (size_t k = 0; k < keep; ++k) parts.push_back(s.substr(words[k].first, words[k].second - words[k].first));
                parts.push_back(s.substr(words[keep].first));
            } else {
                size_t first_kept = words.size() - keep;
                parts.push_back(s.substr(0, words[first_kept - 1].second));
                for (size_t k = first_kept; k < words.size(); ++k)
                    parts.push_back(s.substr(words[k].first, words[k].second - words[k].first));
            }
        } else {
            for (const auto& [b, e] : words) parts.push_back(s.substr(b, e - b));
        }
    } else {
        const std::string& d = arg_string(sep, "separator");
        if (d.empty()) fail("empty separator");
        if (!from_right) {
            size_t begin = 0;
            int64_t splits = 0;
            while (maxsplit < 0 || splits < maxsplit) {
                size_t hit = s.find(d, begin);
                if (hit == std::string::npos) break;
                parts.push_back(s.substr(begin, hit - begin));
                begin = hit + d.size();
                ++splits;
            }
            parts.push_back(s.substr(begin));
        } else {
            size_t end = s.size();
            int64_t splits = 0;
            std::vector<std::string> reversed;
            while (maxsplit < 0 || splits < maxsplit) {
                if (end < d.size()) break;
                size_t hit = s.rfind(d, end - d.size());
                if (hit == std::string::npos) break;
                reversed.push_back(s.substr(hit + d.size(), end - hit - d.size()));
                end = hit;
                ++splits;
            }
            reversed.push_back(s.substr(0, end));
            parts.assign(reversed.rbegin(), reversed.rend());
        }
    }
    in.charge(parts.size());
    std::vector<Value> items;
    items.reserve(parts.size());
    for (auto& p : parts) items.emplace_back(std::move(p));
    return Value::array(std::move(items));
}

std::string python_title(const std::string& s) {
    std::string out = s;
    bool previous_cased = false;
    for (char& c : out) {
        unsigned char u = static_cast<unsigned char>(c);
        if (is_alpha(u)) {
            c = previous_cased ? to_lower(c) : to_upper(c);
            previous_cased = true;
        } else {
            previous_cased = u >= 0x80;  // bytes of non-ASCII letters continue a word
        }
    }
    return out;
}

bool affix_match(const std::string& s, const Value& affix, bool prefix) {
    auto one = [&](const Value& a) {
        const std::string& x = arg_string(&a, prefix ? "startswith argument" : "endswith argument");
        if (x.size() > s.size()) return false;
        return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
    };
    if (affix.is_array()) {
        for (const Value& a : affix.arr().items)
            if (one(a)) return true;
        return false;
    }
    return one(affix);
}

// Python str.find-style optional [start, end] in code points, translated to a byte window.
std::pair<size_t, size_t> byte_window(const std::string& s, const CallArgs& args, size_t first_index) {
    std::vector<size_t> offsets = utf8_offsets(s);
    int64_t n = static_cast<int64_t>(offsets.size()) - 1;
    auto clamp = [&](const Value* v, int64_t fallback) {
        if (!present(v)) return fallback;
        int64_t i = arg_int(v, "index");
        if (i < 0) i += n;
        return std::clamp<int64_t>(i, 0, n);
    };
    int64_t b = clamp(args.get(first_index, ""), 0);
    int64_t e = clamp(args.get(first_index + 1, ""), n);
    if (e < b) e = b;
    return {offsets[static_cast<size_t>(b)], offsets[static_cast<size_t>(e)]};
}

int64_t code_point_index(const std::string& s, size_t byte_offset) {
    return static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, byte_offset)));
}

// ---- str.format ------------------------------------------------------------------------

std::string apply_format_spec(Interpreter& in, const Value& v, const std::string& spec) {
    // [[fill]align][sign][#][0][width][,][.precision][type]
    size_t i = 0;
    char fill = ' ', align = '\0', sign = '-';
    auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
    if (spec.size() >= 2 && is_align(spec[1])) {
        fill = spec[0];
        align = spec[1];
        i = 2;
    } else if (!spec.empty() && is_align(spec[0])) {
        align = spec[0];
        i = 1;
    }
    if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) sign = spec[i++];
    if (i < spec.size() && spec[i] == '#') ++i;
    if (i < spec.size() && spec[i] == '0') {
        if (!align) {
            fill = '0';
            align = '=';
        }
        ++i;
    }
    size_t width = 0;
    while (i < spec.size() && is_ascii_digit(static_cast<unsigned char>(spec[i]))) width = width * 10 + static_cast<size_t>(spec[i++] - '0');
    if (width > in.max_bytes()) fail("format width too large");
    if (i < spec.size() && (spec[i] == ',' || spec[i] == '_')) ++i;
    int precision = -1;
    if (i < spec.size() && spec[i] == '.') {
        ++i;
        precision = 0;
        while (i < spec.size() && is_ascii_digit(static_cast<unsigned char>(spec[i])) && precision < 1000)
            precision = precision * 10 + (spec[i++] - '0');
    }
    char type = i < spec.size() ? spec[i++] : '\0';
    if (i != spec.size()) fail("invalid format specifier '" + spec + "'");

    std::string body;
    if (v.is_number() && type != 's') {
        char buf[512];
        double d = v.as_double();
        switch (type) {
        case 'd':
            if (!v.is_integral()) fail("unknown format code 'd' for object of type 'float'");
            body = std::to_string(v.as_int());
            break;
        case 'x':
            if (!v.is_integral()) fail("unknown format code 'x' for object of type 'float'");
            std::snprintf(buf, sizeof(buf), "%llx", static_cast<long long>(v.as_int()));
            body = buf;
            break;
        case 'f':
        case 'F':
        case 'e':
        case 'g':
        case '%': {
            if (type == '%') d *= 100;
            char fmt[16];
            std::snprintf(fmt, sizeof(fmt), "%%.%d%c", precision < 0 ? 6 : precision, type == '%' ? 'f' : type);
            std::snprintf(buf, sizeof(buf), fmt, d);
            body = buf;
            if (type == '%') body += '%';
            break;
        }
        case '\0':
            if (precision >= 0 && v.is_float()) {
                std::snprintf(buf, sizeof(buf), "%.*g", precision, d);
                body = buf;
            } else {
                body = in.str(v);
            }
            break;
        default: fail(std::string("unknown format code '") + type + "' for a number");
        }
        if (sign != '-' && body[0] != '-') body.insert(body.begin(), sign);
        if (!align) align = '>';
    } else {
        body = in.str(v);
        if (precision >= 0) {
            std::vector<size_t> offsets = utf8_offsets(body);
            if (static_cast<size_t>(precision) + 1 < offsets.size()) body.resize(offsets[static_cast<size_t>(precision)]);
        }
        if (!align) align = '<';
    }
    size_t length = utf8_length(body);
    if (length >= width) return body;
    size_t pad = width - length;
    switch (align) {
    case '<': return body + std::string(pad, fill);
    case '^': return std::string(pad / 2, fill) + body + std::string(pad - pad / 2, fill);
    case '=': {
        size_t sign_len = !body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ') ? 1 : 0;
        return body.substr(0, sign_len) + std::string(pad, fill) + body.substr(sign_len);
    }
    default: return std::string(pad, fill) + body;
    }
}

std::string python_format(Interpreter& in, const std::string& fmt, CallArgs& args) {
    std::string out;
    size_t auto_index = 0;
    size_t i = 0;
    while (i < fmt.size()) {
        char c = fmt[i];
        if (c == '}') {
            if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
                out += '}';
                i += 2;
                continue;
            }
            fail("Single '}' encountered in format string");
        }
        if (c != '{') {
            out += c;
            ++i;
            continue;
        }
        if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
            out += '{';
            i += 2;
            continue;
        }
        size_t close = fmt.find('}', i + 1);
        if (close == std::string::npos) fail("Single '{' encountered in format string");
        std::string field = fmt.substr(i + 1, close - i - 1);
        i = close + 1;
        std::string spec, conversion;
        size_t colon = field.find(':');
        if (colon != std::string::npos) {
            spec = field.substr(colon + 1);
            field.resize(colon);
        }
        size_t bang = field.find('!');
        if (bang != std::string::npos) {
            conversion = field.substr(bang + 1);
            field.resize(bang);
        }
        size_t name_end = field.find_first_of(".[");
        std::string name = field.substr(0, name_end);
        Value v;
        if (name.empty()) {
            if (auto_index >= args.positional.size()) fail("Replacement index " + std::to_string(auto_index) + " out of range for positional args tuple");
            v = args.positional[auto_index++];
        } else if (name.find_first_not_of("0123456789") == std::string::npos) {
            size_t index = static_cast<size_t>(std::stoull(name.substr(0, 9)));
            if (index >= args.positional.size()) fail("Replacement index " + name + " out of range for positional args tuple");
            v = args.positional[index];
        } else {
            const Value* kw = args.find_keyword(name);
            if (!kw) fail("KeyError: '" + name + "'");
            v = *kw;
        }
        size_t p = name_end;
        while (p != std::string::npos && p < field.size()) {
            if (field[p] == '.') {
                size_t next = field.find_first_of(".[", p + 1);
                v = in.get_attr(v, field.substr(p + 1, next == std::string::npos ? std::string::npos : next - p - 1));
                p = next;
            } else {
                size_t end = field.find(']', p);
                if (end == std::string::npos) fail("Missing ']' in format string");
                std::string key = field.substr(p + 1, end - p - 1);
                bool numeric = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
                v = in.get_item(v, numeric ? Value(static_cast<int64_t>(std::stoll(key.substr(0, 18)))) : Value(key));
                p = end + 1;
            }
        }
        if (conversion == "r")
            v = Value(repr(v, in.max_bytes()));
        else if (conversion == "s")
            v = Value(in.str(v));
        out += apply_format_spec(in, v, spec);
        if (out.size() > in.max_bytes()) fail_output_too_large(in.max_bytes());
    }
    in.check_string(out);
    return out;
}

// ---- methods by type --------------------------------------------------------------------

Value string_method(Interpreter& in, const std::string& s, const std::string& name, CallArgs& args) {
    const Value* a0 = args.get(0, "");
    if (name == "strip" || name == "lstrip" || name == "rstrip")
        return Value(strip_chars(s, a0, name != "rstrip", name != "lstrip"));
    if (name == "split" || name == "rsplit") {
        const Value* maxsplit = args.get(1, "maxsplit");
        return split_string(in, s, args.get(0, "sep"), present(maxsplit) ? arg_int(maxsplit, "maxsplit") : -1,
                            name == "rsplit");
    }
    if (name == "splitlines") {
        bool keepends = truthy(args.get_or(0, "keepends", Value(false)));
        std::vector<Value> lines;
        size_t begin = 0;
        size_t i = 0;
        while (i < s.size()) {
            // Python's line boundaries: \n, \r, \r\n, \v, \f, \x1c-\x1e, U+0085, U+2028, U+2029.
            uint32_t cp = 0;
            const size_t n = decode_utf8_at(s, i, cp);
            if (!n || !(cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f' || (cp >= 0x1c && cp <= 0x1e) || cp == 0x85 ||
                        cp == 0x2028 || cp == 0x2029)) {
                i += utf8_char_length(s, i);
                continue;
            }
            size_t end = i + n;  // past the boundary
            if (cp == '\r' && end < s.size() && s[end] == '\n') ++end;
            lines.emplace_back(s.substr(begin, (keepends ? end : i) - begin));
            begin = i = end;
        }
        if (begin < s.size()) lines.emplace_back(s.substr(begin));
        in.charge(lines.size());
        return Value::array(std::move(lines));
    }
    if (name == "startswith" || name == "endswith") {
        if (!a0) fail(name + "() takes at least 1 argument");
        auto [b, e] = byte_window(s, args, 1);
        return Value(affix_match(s.substr(b, e - b), *a0, name == "startswith"));
    }
    if (name == "replace") {
        const std::string& from = arg_string(a0, "replace() argument 1");
        const std::string& to = arg_string(args.get(1, ""), "replace() argument 2");
        const Value* count_v = args.get(2, "count");
        int64_t count = present(count_v) ? arg_int(count_v, "count") : -1;
        std::string out;
        int64_t done = 0;
        if (from.empty()) {
            std::vector<size_t> offsets = utf8_offsets(s);
            for (size_t i = 0; i + 1 < offsets.size(); ++i) {
                if (count < 0 || done < count) {
                    out += to;
                    ++done;
                }
                out.append(s, offsets[i], offsets[i + 1] - offsets[i]);
                if (out.size() > in.max_bytes()) break;
            }
            if (count < 0 || done < count) out += to;
        } else {
            size_t begin = 0;
            while (count < 0 || done < count) {
                size_t hit = s.find(from, begin);
                if (hit == std::string::npos) break;
                out.append(s, begin, hit - begin);
                out += to;
                begin = hit + from.size();
                ++done;
                if (out.size() > in.max_bytes()) break;
            }
            if (out.size() <= in.max_bytes()) out.append(s, begin, std::string::npos);
        }
        in.check_string(out);
        return Value(std::move(out));
    }
    if (name == "upper" || name == "lower" || name == "casefold" || name == "swapcase") {
        std::string out = s;
        for (char& c : out) {
            if (name == "upper")
                c = to_upper(c);
            else if (name == "swapcase")
                c = is_upper(static_cast<unsigned char>(c)) ? to_lower(c) : to_upper(c);
            else
                c = to_lower(c);
        }
        return Value(std::move(out));
    }
    if (name == "title") return Value(python_title(s));
    if (name == "capitalize") {
        std::string out = s;
        for (size_t i = 0; i < out.size(); ++i) out[i] = i == 0 ? to_upper(out[i]) : to_lower(out[i]);
        return Value(std::move(out));
    }
    if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
        const std::string& sub = arg_string(a0, (name + "() argument").c_str());
        auto [b, e] = byte_window(s, args, 1);
        std::string_view window(s.data() + b, e - b);
        if (name == "count") {
            if (sub.empty()) return Value(static_cast<int64_t>(utf8_length(window) + 1));
            int64_t n = 0;
            for (size_t p = window.find(sub); p != std::string_view::npos; p = window.find(sub, p + sub.size())) ++n;
            return Value(n);
        }
        size_t hit = name[0] == 'r' ? window.rfind(sub) : window.find(sub);
        if (hit == std::string_view::npos) {
            if (name == "index" || name == "rindex") fail("substring not found");
            return Value(static_cast<int64_t>(-1));
        }
        return Value(code_point_index(s, b + hit));
    }
    if (name == "format") return Value(python_format(in, s, args));
    if (name == "join") {
        if (!a0) fail("join() takes exactly one argument");
        std::string out;
        bool first = true;
        for (const Value& item : in.iterate(*a0)) {
            if (!item.is_string()) fail("sequence item: expected str instance, " + type_name(item) + " found");
            if (!first) out += s;
            first = false;
            out += item.str();
            if (out.size() > in.max_bytes()) break;
        }
        in.check_string(out);
        return Value(std::move(out));
    }
    if (name == "isdigit" || name == "isnumeric" || name == "isdecimal" || name == "isalpha" || name == "isalnum" ||
        name == "isspace" || name == "isupper" || name == "islower") {
        if (s.empty()) return Value(false);
        if (name == "isspace") {
            for (size_t i = 0; i < s.size(); i += utf8_char_length(s, i))
                if (!py_whitespace_at(s, i)) return Value(false);
            return Value(true);
        }
        bool has_cased = false;
        for (unsigned char c : s) {
            bool ok = true;
            if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") ok = is_ascii_digit(c);
            else if (name == "isalpha") ok = is_alpha(c);
            else if (name == "isalnum") ok = is_alpha(c) || is_ascii_digit(c);
            else if (name == "isupper") { ok = !is_lower(c); has_cased |= is_upper(c); }
            else { ok = !is_upper(c); has_cased |= is_lower(c); }
            if (!ok) return Value(false);
        }
        return Value(name == "isupper" || name == "islower" ? has_cased : true);
    }
    if (name == "center" || name == "ljust" || name == "rjust" || name == "zfill") {
        int64_t width = arg_int(a0, "width");
        if (width > static_cast<int64_t>(in.max_bytes())) fail_output_too_large(in.max_bytes());
        std::string fill = name == "zfill" ? "0" : in.str(args.get_or(1, "fillchar", Value(" ")));
        int64_t length = static_cast<int64_t>(utf8_length(s));
        if (width <= length) return Value(s);
        size_t pad = static_cast<size_t>(width - length);
        auto repeat = [&](size_t k) {
            std::string r;
            for (size_t i = 0; i < k; ++i) r += fill;
            return r;
        };
        if (name == "ljust") return Value(s + repeat(pad));
        if (name == "rjust") return Value(repeat(pad) + s);
        if (name == "zfill") {
            if (!s.empty() && (s[0] == '-' || s[0] == '+')) return Value(s.substr(0, 1) + repeat(pad) + s.substr(1));
            return Value(repeat(pad) + s);
        }
        size_t left = pad / 2 + (pad & static_cast<size_t>(width) & 1);
        return Value(repeat(left) + s + repeat(pad - left));
    }
    if (name == "partition" || name == "rpartition") {
        const std::string& sep = arg_string(a0, "separator");
        if (sep.empty()) fail("empty separator");
        size_t hit = name == "partition" ? s.find(sep) : s.rfind(sep);
        if (hit == std::string::npos)
            return name == "partition" ? Value::tuple({Value(s), Value(""), Value("")})
                                       : Value::tuple({Value(""), Value(""), Value(s)});
        return Value::tuple({Value(s.substr(0, hit)), Value(sep), Value(s.substr(hit + sep.size()))});
    }
    if (name == "removeprefix" || name == "removesuffix") {
        const std::string& affix = arg_string(a0, "affix");
        if (name == "removeprefix" && s.compare(0, affix.size(), affix) == 0) return Value(s.substr(affix.size()));
        if (name == "removesuffix" && affix.size() <= s.size() && s.compare(s.size() - affix.size(), affix.size(), affix) == 0)
            return Value(s.substr(0, s.size() - affix.size()));
        return Value(s);
    }
    fail("'str object' has no attribute '" + name + "'");
}

Value list_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args) {
    ArrayData& a = self.arr();
    auto& items = a.items;
    const Value* a0 = args.get(0, "");
    auto normalize = [&](int64_t i, bool for_insert) {
        int64_t n = static_cast<int64_t>(items.size());
        if (i < 0) i += n;
        if (for_insert) return static_cast<size_t>(std::clamp<int64_t>(i, 0, n));
        if (i < 0 || i >= n) fail("pop index out of range");
        return static_cast<size_t>(i);
    };
    if (name == "index" || name == "count") {
        if (!a0) fail(name + "() takes at least 1 argument");
        in.charge(items.size());
        int64_t count = 0;
        for (size_t i = 0; i < items.size(); ++i) {
            if (!equals(items[i], *a0)) continue;
            if (name == "index") return Value(static_cast<int64_t>(i));
            ++count;
        }
        if (name == "index") fail("value is not in list");
        return Value(count);
    }
    if (name == "copy") return Value::array(items);
    if (a.is_tuple) fail("'tuple' object has no attribute '" + name + "'");
    if (name == "append") {
        if (!a0) fail("append() takes exactly one argument (0 given)");
        in.charge(1);
        items.push_back(*a0);
        return Value::none();
    }
    if (name == "extend") {
        if (!a0) fail("extend() takes exactly one argument (0 given)");
        for (Value& v : in.iterate(*a0)) items.push_back(std::move(v));
        return Value::none();
    }
    if (name == "insert") {
        size_t at = normalize(arg_int(a0, "insert index"), true);
        const Value* v = args.get(1, "");
        if (!v) fail("insert expected 2 arguments");
        in.charge(items.size());
        items.insert(items.begin() + static_cast<std::ptrdiff_t>(at), *v);
        return Value::none();
    }
    if (name == "pop") {
        if (items.empty()) fail("pop from empty list");
        size_t at = present(a0) ? normalize(arg_int(a0, "pop index"), false) : items.size() - 1;
        Value out = items[at];
        items.erase(items.begin() + static_cast<std::ptrdiff_t>(at));
        return out;
    }
    if (name == "remove") {
        if (!a0) fail("remove() takes exactly one argument");
        for (size_t i = 0; i < items.size(); ++i)
            if (equals(items[i], *a0)) {
                items.erase(items.begin() + static_cast<std::ptrdiff_t>(i));
                return Value::none();
            }
        fail("list.remove(x): x not in list");
    }
    if (name == "reverse") {
        std::reverse(items.begin(), items.end());
        return Value::none();
    }
    if (name == "clear") {
        items.clear();
        return Value::none();
    }
    if (name == "sort") {
        bool reverse = truthy(args.get_or(0, "reverse", Value(false)));
        in.charge(items.size() * 8);
        std::stable_sort(items.begin(), items.end(),
                         [&](const Value& x, const Value& y) { return reverse ? compare(y, x) < 0 : compare(x, y) < 0; });
        return Value::none();
    }
    fail("'list object' has no attribute '" + name + "'");
}

Value dict_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args) {
    ObjectData& o = self.obj();
    const Value* a0 = args.get(0, "");
    if (name == "get") {
        if (!a0) fail("get expected at least 1 argument, got 0");
        const Value* v = nullptr;
        try {
            v = o.find(*a0);
        } catch (JinjaError&) {
            v = nullptr;  // unhashable key: not present
        }
        return v ? *v : args.get_or(1, "default", Value::none());
    }
    if (name == "items" || name == "keys" || name == "values") {
        in.charge(o.size());
        std::vector<Value> out;
        out.reserve(o.size());
        for (const auto& [key, value] : o.entries()) {
            if (name == "items") {
                out.push_back(Value::tuple({key, value}));
                in.charge_copy(out.back());  // the pair copies its strings; the list itself is counted by the call
            } else
                out.push_back(name == "keys" ? key : value);
        }
        return Value::array(std::move(out));
    }
    if (name == "pop") {
        if (!a0) fail("pop expected at least 1 argument, got 0");
        if (Value* v = o.find(*a0)) {
            Value out = *v;
            o.erase(*a0);
            return out;
        }
        if (const Value* fallback = args.get(1, "")) return *fallback;
        fail("KeyError: " + repr(*a0, 256));
    }
    if (name == "setdefault") {
        if (!a0) fail("setdefault expected at least 1 argument, got 0");
        if (const Value* v = o.find(*a0)) return *v;
        Value fallback = args.get_or(1, "", Value::none());
        o.set(*a0, fallback);
        return fallback;
    }
    if (name == "update") {
        if (a0) {
            if (!a0->is_object()) fail("dict.update() argument must be a mapping");
            in.charge(a0->obj().size());
            auto entries = a0->obj().entries();
            for (const auto& [key, value] : entries) o.set(key, value);
        }
        for (const auto& [key, value] : args.keyword) o.set(Value(key), value);
        return Value::none();
    }
    if (name == "copy") {
        in.charge(o.size());
        Value out = Value::object();
        for (const auto& [key, value] : o.entries()) out.obj().set(key, value);
        return out;
    }
    if (name == "clear") {
        Value keys = dict_method(in, self, "keys", args);
        for (const Value& k : keys.arr().items) o.erase(k);
        return Value::none();
    }
    fail("'dict object' has no attribute '" + name + "'");
}

constexpr std::string_view kStringMethods[] = {
    "strip",    "lstrip",  "rstrip",   "split",      "rsplit",    "splitlines", "startswith", "endswith",
    "replace",  "upper",   "lower",    "casefold",   "swapcase",  "title",      "capitalize", "find",
    "rfind",    "index",   "rindex",   "count",      "format",    "join",       "isdigit",    "isnumeric",
    "isdecimal", "isalpha", "isalnum", "isspace",    "isupper",   "islower",    "center",     "ljust",
    "rjust",    "zfill",   "partition", "rpartition", "removeprefix", "removesuffix"};
constexpr std::string_view kListMethods[] = {"append", "extend", "insert", "pop",  "remove", "reverse",
                                             "clear",  "sort",   "index",  "count", "copy"};
constexpr std::string_view kDictMethods[] = {"get", "items", "keys", "values", "pop", "setdefault", "update", "copy", "clear"};

template <size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
    return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

} // namespace

bool has_method(const Value& self, std::string_view name) {
    switch (self.kind()) {
    case Value::Kind::String: return listed(kStringMethods, name);
    case Value::Kind::Array: return listed(kListMethods, name);
    case Value::Kind::Object: return self.obj().flavor == ObjectData::Flavor::Dict && listed(kDictMethods, name);
    default: return false;
    }
}

bool modifies_container(const Value& self, std::string_view name) {
    static constexpr std::string_view kListModifiers[] = {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"};
    static constexpr std::string_view kDictModifiers[] = {"clear", "pop", "popitem", "setdefault", "update"};
    if (self.is_array()) return !self.arr().is_tuple && listed(kListModifiers, name);
    if (self.is_object()) return self.obj().flavor == ObjectData::Flavor::Dict && listed(kDictModifiers, name);
    return false;
}

Value call_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args) {
    switch (self.kind()) {
    case Value::Kind::String: return string_method(in, self.str(), name, args);
    case Value::Kind::Array: return list_method(in, self, name, args);
    case Value::Kind::Object: return dict_method(in, self, name, args);
    default: fail("'" + type_name(self) + "' object has no attribute '" + name + "'");
    }
}

// Python printf-style formatting: "%s and %d" % (a, b), "%(name)s" % mapping.
std::string percent_format(Interpreter& in, const std::string& format, const Value& args) {
    std::vector<Value> positional;
    if (args.is_array() && args.arr().is_tuple)
        positional = args.arr().items;
    else
        positional.push_back(args);
    size_t next = 0;
    std::string out;
    for (size_t i = 0; i < format.size(); ++i) {
        if (format[i] != '%') {
            out += format[i];
            continue;
        }
        if (++i >= format.size()) fail("incomplete format");
        Value v;
        bool have_value = false;
        if (format[i] == '(') {
            size_t close = format.find(')', i);
            if (close == std::string::npos || !args.is_object()) fail("format requires a mapping");
            v = in.get_item(args, Value(format.substr(i + 1, close - i - 1)));
            have_value = true;
            i = close + 1;
        }
        std::string flags;
        while (i < format.size() && std::string_view("-+ #0").find(format[i]) != std::string_view::npos) flags += format[i++];
        std::string width, precision;
        while (i < format.size() && is_ascii_digit(static_cast<unsigned char>(format[i]))) width += format[i++];
        if (i < format.size() && format[i] == '.') {
            ++i;
            while (i < format.size() && is_ascii_digit(static_cast<unsigned char>(format[i]))) precision += format[i++];
        }
        if (i >= format.size()) fail("incomplete format");
        char type = format[i];
        if (type == '%') {
            out += '%';
            continue;
        }
        if (!have_value) {
            if (next >= positional.size()) fail("not enough arguments for format string");
            v = positional[next++];
        }
        if (width.size() > 6 || precision.size() > 3) fail("format width too large");
        std::string spec = "%" + flags + width + (precision.empty() ? "" : "." + precision);
        char buf[2048];
        switch (type) {
        case 's':
        case 'r': {
            std::string text = type == 's' ? in.str(v) : repr(v, in.max_bytes());
            size_t w = width.empty() ? 0 : static_cast<size_t>(std::stoul(width));
            if (!precision.empty()) text = text.substr(0, static_cast<size_t>(std::stoul(precision)));
            size_t len = utf8_length(text);
            if (len < w) text = flags.find('-') != std::string::npos ? text + std::string(w - len, ' ') : std::string(w - len, ' ') + text;
            out += text;
            break;
        }
        case 'd':
        case 'i':
        case 'x':
        case 'X':
        case 'o':
            if (!v.is_number()) fail("%" + std::string(1, type) + " format: a number is required, not " + type_name(v));
        {
            if (v.is_float() && !(std::fabs(v.as_double()) < 9.2e18)) fail("%d format: number out of range");
            long long iv = v.is_float() ? static_cast<long long>(std::trunc(v.as_double())) : static_cast<long long>(v.as_int());
            std::snprintf(buf, sizeof(buf), (spec + "ll" + (type == 'i' ? 'd' : type)).c_str(), iv);
            out += buf;
            break;
        }
        case 'f':
        case 'F':
        case 'e':
        case 'E':
        case 'g':
        case 'G':
            if (!v.is_number()) fail("must be real number, not " + type_name(v));
            std::snprintf(buf, sizeof(buf), (spec + type).c_str(), v.as_double());
            out += buf;
            break;
        case 'c':
            if (v.is_integral()) append_utf8(out, static_cast<uint32_t>(v.as_int()));
            else out += in.str(v);
            break;
        default: fail(std::string("unsupported format character '") + type + "'");
        }
        if (out.size() > in.max_bytes()) fail_output_too_large(in.max_bytes());
    }
    if (next < positional.size() && !args.is_object()) fail("not all arguments converted during string formatting");
    in.check_string(out);
    return out;
}

} // namespace cflow::jinja
