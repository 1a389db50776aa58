// Jinja filters with jinja2 semantics; `tojson` is transformers' override (json.dumps with
// ensure_ascii=False, key order kept, optional indent/separators/sort_keys), not jinja2's
// HTML-escaping, key-sorting builtin. `from_json` is not in jinja2; some DeepSeek templates
// use it, so it is provided.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cfenv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "cflow/formats/json_depth.h"
#include "chat/jinja/jinja_interpreter.h"

namespace cflow::jinja {

namespace {

using json = nlohmann::ordered_json;

Value from_json_node(const json& j, int depth) {
    if (depth > static_cast<int>(kMaxNesting)) fail("JSON nested deeper than " + std::to_string(kMaxNesting) + " levels");
    switch (j.type()) {
    case json::value_t::null: return Value::none();
    case json::value_t::boolean: return Value(j.get<bool>());
    case json::value_t::number_integer: return Value(j.get<int64_t>());
    case json::value_t::number_unsigned: {
        uint64_t u = j.get<uint64_t>();
        if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
        return Value(static_cast<int64_t>(u));
    }
    case json::value_t::number_float: return Value(j.get<double>());
    case json::value_t::string: return Value(j.get_ref<const std::string&>());
    case json::value_t::array: {
        std::vector<Value> items;
        items.reserve(j.size());
        for (const json& item : j) items.push_back(from_json_node(item, depth + 1));
        return Value::array(std::move(items));
    }
    case json::value_t::object: {
        Value o = Value::object();
        for (auto it = j.begin(); it != j.end(); ++it) o.obj().set(Value(it.key()), from_json_node(it.value(), depth + 1));
        return o;
    }
    default: fail("unsupported JSON value");
    }
}

std::string lower_ascii(std::string s) {
    for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    return s;
}

// jinja2's ignore_case: strings compare lower-cased unless case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
    if (!case_sensitive && v.is_string()) return Value(lower_ascii(v.str()));
    return v;
}

bool flag(const CallArgs& args, size_t index, std::string_view name, bool fallback) {
    const Value* v = args.get(index, name);
    return v ? truthy(*v) : fallback;
}

CallArgs rest_args(const CallArgs& args, size_t from) {
    CallArgs rest;
    for (size_t i = from; i < args.positional.size(); ++i) rest.positional.push_back(args.positional[i]);
    rest.keyword = args.keyword;
    return rest;
}

std::string html_escape(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&#34;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
        }
    }
    return out;
}

// Python int(str): optional sign and surrounding whitespace, underscores between digits.
bool parse_int(std::string s, int base, int64_t& out) {
    size_t b = s.find_first_not_of(" \t\n\r\f\v"), e = s.find_last_not_of(" \t\n\r\f\v");
    if (b == std::string::npos) return false;
    s = s.substr(b, e - b + 1);
    s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
    if (s.empty()) return false;
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, base);
    if (errno == ERANGE || end != s.c_str() + s.size() || !(s[0] == '-' || s[0] == '+' || std::isxdigit(static_cast<unsigned char>(s[0]))))
        return false;
    out = static_cast<int64_t>(v);
    return true;
}

bool parse_float(const std::string& text, double& out) {
    size_t b = text.find_first_not_of(" \t\n\r\f\v"), e = text.find_last_not_of(" \t\n\r\f\v");
    if (b == std::string::npos) return false;
    std::string s = text.substr(b, e - b + 1);
    char* end = nullptr;
    out = std::strtod(s.c_str(), &end);
    return end == s.c_str() + s.size();
}

Value f_trim(Interpreter& in, const Value& v, CallArgs& args) {
    args.expect_at_most("trim", 1, {"chars"});
    CallArgs strip_args;
    if (const Value* chars = args.get(0, "chars")) strip_args.positional.push_back(*chars);
    return call_method(in, Value(in.str(v)), "strip", strip_args);
}

Value f_tojson(Interpreter& in, const Value& v, CallArgs& args) {
    args.expect_at_most("tojson", 1, {"indent", "ensure_ascii", "separators", "sort_keys"});
    JsonOptions o;
    if (const Value* indent = args.get(0, "indent"); indent && !indent->is_none()) {
        if (indent->is_string())
            o.indent_string = indent->str();
        else if (indent->is_integral())
            o.indent = static_cast<int>(std::clamp<int64_t>(indent->as_int(), 0, 64));
        else
            fail("tojson indent must be an integer or a string");
        if (o.indent_string.empty() && o.indent < 0) o.indent = 0;
    }
    o.ensure_ascii = flag(args, 99, "ensure_ascii", false);
    o.sort_keys = flag(args, 99, "sort_keys", false);
    if (const Value* sep = args.find_keyword("separators"); sep && !sep->is_none()) {
        if (!sep->is_array() || sep->arr().items.size() != 2) fail("tojson separators must be a pair (item, key)");
        o.has_item_separator = true;
        o.item_separator = in.str(sep->arr().items[0]);
        o.key_separator = in.str(sep->arr().items[1]);
    }
    std::string out = to_json(v, o, in.max_bytes());
    in.check_string(out);
    return Value(std::move(out));
}

Value f_join(Interpreter& in, const Value& v, CallArgs& args) {
    args.expect_at_most("join", 2, {"d", "attribute"});
    std::string sep = in.str(args.get_or(0, "d", Value("")));
    const Value* attribute = args.get(1, "attribute");
    std::string out;
    bool first = true;
    for (const Value& item : in.iterate(v)) {
        if (!first) out += sep;
        first = false;
        out += in.str(attribute && !attribute->is_none() ? in.get_attr_path(item, in.str(*attribute)) : item);
        if (out.size() > in.max_bytes()) break;
    }
    in.check_string(out);
    return Value(std::move(out));
}

Value f_length(Interpreter&, const Value& v, CallArgs& args) {
    args.expect_at_most("length", 0, {});
    switch (v.kind()) {
    case Value::Kind::String: return Value(static_cast<int64_t>(utf8_length(v.str())));
    case Value::Kind::Array: return Value(static_cast<int64_t>(v.arr().items.size()));
    case Value::Kind::Object: return Value(static_cast<int64_t>(v.obj().size()));
    case Value::Kind::Undefined: return Value(static_cast<int64_t>(0));
    default: fail("object of type '" + type_name(v) + "' has no len()");
    }
}

Value f_map(Interpreter& in, const Value& v, CallArgs& args) {
    std::vector<Value> out;
    if (const Value* attribute = args.find_keyword("attribute")) {
        const Value* fallback = args.find_keyword("default");
        std::string path = in.str(*attribute);
        for (const Value& item : in.iterate(v)) {
            Value x = in.get_attr_path(item, path);
            out.push_back(x.is_undefined() && fallback ? *fallback : x);
        }
    } else {
        if (args.positional.empty()) fail("map requires a filter name or attribute=");
        std::string filter = in.str(args.positional[0]);
        for (const Value& item : in.iterate(v)) {
            CallArgs rest = rest_args(args, 1);
            out.push_back(in.apply_filter(filter, item, rest));
        }
    }
    return Value::array(std::move(out));
}

Value select_impl(Interpreter& in, const Value& v, CallArgs& args, bool by_attribute, bool keep_matches) {
    std::string attribute;
    size_t test_index = 0;
    if (by_attribute) {
        if (args.positional.empty()) fail("selectattr/rejectattr need an attribute name");
        attribute = in.str(args.positional[0]);
        test_index = 1;
    }
    std::string test;
    if (args.positional.size() > test_index) test = in.str(args.positional[test_index]);
    std::vector<Value> out;
    if (v.is_none()) return Value::array();
    for (const Value& item : in.iterate(v)) {
        Value subject = by_attribute ? in.get_attr_path(item, attribute) : item;
        bool match;
        if (test.empty()) {
            match = truthy(subject);
        } else {
            CallArgs rest = rest_args(args, test_index + 1);
            match = in.apply_test(test, subject, rest);
        }
        if (match == keep_matches) out.push_back(item);
    }
    return Value::array(std::move(out));
}

Value f_select(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, false, true); }
Value f_reject(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, false, false); }
Value f_selectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, true, true); }
Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, true, false); }

Value f_items(Interpreter& in, const Value& v, CallArgs& args) {
    args.expect_at_most("items", 0, {});
    if (v.is_undefined()) return Value::array();
    if (!v.is_object() || v.obj().flavor != ObjectData::Flavor::Dict) fail("Can only get item pairs from a mapping.");
    CallArgs none;
    return call_method(in, v, "items", none);
}

Value f_list(Interpreter& in, const Value& v, CallArgs& args) {
    args.expect_at_most("list", 0, {});
    return Value::array(in.iterate(v));
}

Value f_first(Interpreter& in, const Value& v, CallArgs&) {
    if (v.is_array()) return v.arr().items.empty() ? Value::undefined("No first item, sequence was empty.") : v.arr().items[0];
    std::vector<Value> items = in.iterate(v);
    return items.empty() ? Value::undefined("No first item, sequence was empty.") : items[0];
}

Value f_last(Interpreter& in, const Value& v, CallArgs&) {
    if (v.is_array()) return v.arr().items.empty() ? Value::undefined("No last item, sequence was empty.") : v.arr().items.back();
    std::vector<Value> items = in.iterate(v);
    return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value string_method_filter(Interpreter& in, const Value& v, const char* method) {
    CallArgs none;
    return call_method(in, Value(in.str(v)), method, none);
}

Value f_upper(Interpreter& in, const Value& v, CallArgs&) { return string_method_filter(in, v, "upper"); }
Value f_lower(Interpreter& in, const Value& v, CallArgs&) { return string_method_filter(in, v, "lower"); }
Value f_capitalize(Interpreter& in, const Value& v, CallArgs&) { return string_method_filter(in, v, "capitalize"); }

// jinja2's title filter capitalizes after whitespace and opening brackets only ("they're" -> "They're").
Value f_title(Interpreter& in, const Value& v, CallArgs&) {
    std::string s = in.str(v);
    bool word_start = true;
    for (char& c : s) {
        bool boundary = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '-' ||
                        c == '(' || c == '{' || c == '[' || c == '<';
        if (boundary) {
            word_start = true;
            continue;
        }
        if (word_start)
            c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
        else
            c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
        word_start = false;
    }
    return Value(std::move(s));
}

Value f_replace(Interpreter& in, const Value& v, CallArgs& args) {
    args.expect_at_most("replace", 3, {"old", "new", "count"});
    CallArgs method_args;
    method_args.positional.push_back(Value(in.str(args.get_or(0, "old", Value("")))));
    method_args.positional.push_back(Value(in.str(args.get_or(1, "new", Value("")))));
    if (const Value* count = args.get(2, "count")) method_args.positional.push_back(*count);
    return call_method(in, Value(in.str(v)), "replace", method_args);
}

Value f_default(Interpreter&, const Value& v, CallArgs& args) {
    args.expect_at_most("default", 2, {"default_value", "boolean"});
    Value fallback = args.get_or(0, "default_value", Value(""));
    bool boolean = flag(args, 1, "boolean", false);
    if (v.is_undefined() || (boolean && !truthy(v))) return fallback;
    return v;
}

Value f_string(Interpreter& in, const Value& v, CallArgs&) { return Value(in.str(v)); }

Value f_int(Interpreter&, const Value& v, CallArgs& args) {
    args.expect_at_most("int", 2, {"default", "base"});
    Value fallback = args.get_or(0, "default", Value(static_cast<int64_t>(0)));
    Value base_v = args.get_or(1, "base", Value(static_cast<int64_t>(10)));
    int base = base_v.is_integral() ? static_cast<int>(std::clamp<int64_t>(base_v.as_int(), 2, 36)) : 10;
    if (v.is_integral()) return Value(v.as_int());
    if (v.is_float()) {
        double d = v.as_double();
        if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return fallback;
        return Value(static_cast<int64_t>(std::trunc(d)));
    }
    if (v.is_string()) {
        int64_t i;
        if (parse_int(v.str(), base, i)) return Value(i);
        double d;
        if (parse_float(v.str(), d) && std::isfinite(d) && std::fabs(d) < 9.2e18) return Value(static_cast<int64_t>(std::trunc(d)));
    }
    return fallback;
}

Value f_float(Interpreter&, const Value& v, CallArgs& args) {
    args.expect_at_most("float", 1, {"default"});
    Value fallback = args.get_or(0, "default", Value(0.0));
    if (v.is_number()) return Value(v.as_double());
    double d;
    if (v.is_string() && parse_float(v.str(), d)) return Value(d);
    return fallback;
}

Value f_abs(Interpreter&, const Value& v, CallArgs&) {
    if (v.is_float()) return Value(std::fabs(v.as_double()));
    if (v.is_integral()) {
        if (v.as_int() == INT64_MIN) fail("integer overflow");
        return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    }
    fail("bad operand type for abs(): '" + type_name(v) + "'");
}

Value f_round(Interpreter& in, const Value& v, CallArgs& args) {
    args.expect_at_most("round", 2, {"precision", "method"});
    Value precision_v = args.get_or(0, "precision", Value(static_cast<int64_t>(0)));
    if (!precision_v.is_integral()) fail("round() precision must be an integer, not " + type_name(precision_v));
    int64_t precision = precision_v.as_int();
    std::string method = in.str(args.get_or(1, "method", Value("common")));
    if (!v.is_number()) fail("round() needs a number, not " + type_name(v));
    precision = std::clamp<int64_t>(precision, -300, 300);
    double scale = std::pow(10.0, static_cast<double>(precision));
    double x = v.as_double() * scale;
    if (method == "common") {
        if (v.is_integral() && precision >= 0) return Value(v.as_int());  // Python round(int) stays int
        if (precision >= 0 && std::isfinite(v.as_double())) {
            // Python rounds the exact binary value half-to-even (round(2.675, 2) == 2.67);
            // printf's correctly rounded %.Nf gives the same digits.
            char buf[512];
            std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(std::min<int64_t>(precision, 60)), v.as_double());
            return Value(std::strtod(buf, nullptr));
        }
        int saved = std::fegetround();
        std::fesetround(FE_TONEAREST);
        double r = std::nearbyint(x);
        std::fesetround(saved);
        return Value(r / scale);
    }
    if (method == "floor") return Value(std::floor(x) / scale);
    if (method == "ceil") return Value(std::ceil(x) / scale);
    fail("method must be 'common', 'ceil' or 'floor'");
}

Value f_safe(Interpreter&, const Value& v, CallArgs&) { return v; }

Value f_escape(Interpreter& in, const Value& v, CallArgs&) {
    std::string out = html_escape(in.str(v));
    in.check_string(out);
    return Value(std::move(out));
}

Value f_indent(Interpreter& in, const Value& v, CallArgs& args) {
    args.expect_at_most("indent", 3, {"width", "first", "blank"});
    Value width = args.get_or(0, "width", Value(static_cast<int64_t>(4)));
    if (!width.is_string() && !width.is_integral()) fail("indent width must be an integer or a string");
    std::string pad = width.is_string() ? width.str() : std::string(static_cast<size_t>(std::clamp<int64_t>(width.as_int(), 0, 1024)), ' ');
    bool first = flag(args, 1, "first", false);
    bool blank = flag(args, 2, "blank", false);
    std::string s = in.str(v) + "\n";  // jinja2 appends a newline so splitlines() keeps a trailing empty line
    CallArgs none;
    Value lines = call_method(in, Value(s), "splitlines", none);
    const auto& items = lines.arr().items;
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
        const std::string& line = items[i].str();
        if (i > 0) {
            out += '\n';
            if (blank || !line.empty()) out += pad;
        }
        out += line;
        if (out.size() > in.max_bytes()) break;
    }
    if (first) out = pad + out;
    in.check_string(out);
    return Value(std::move(out));
}

Value f_dictsort(Interpreter& in, const Value& v, CallArgs& args) {
    args.expect_at_most("dictsort", 3, {"case_sensitive", "by", "reverse"});
    if (!v.is_object()) fail("dictsort expects a mapping, not " + type_name(v));
    bool case_sensitive = flag(args, 0, "case_sensitive", false);
    std::string by = in.str(args.get_or(1, "by", Value("key")));
    bool reverse = flag(args, 2, "reverse", false);
    size_t index = by == "value" ? 1 : 0;
    if (by != "key" && by != "value") fail("You can only sort by either \"key\" or \"value\"");
    std::vector<Value> pairs;
    for (const auto& [key, value] : v.obj().entries()) {
        pairs.push_back(Value::tuple({key, value}));
        in.charge_copy(pairs.back());
    }
    in.charge(pairs.size() * 8);
    std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& a, const Value& b) {
        int c = compare(sort_key(a.arr().items[index], case_sensitive), sort_key(b.arr().items[index], case_sensitive));
        return reverse ? c > 0 : c < 0;
    });
    return Value::array(std::move(pairs));
}

Value f_unique(Interpreter& in, const Value& v, CallArgs& args) {
    args.expect_at_most("unique", 2, {"case_sensitive", "attribute"});
    bool case_sensitive = flag(args, 0, "case_sensitive", false);
    const Value* attribute = args.get(1, "attribute");
    std::vector<Value> out;
    std::vector<std::string> seen;
    std::unordered_map<std::string, bool> seen_set;
    for (const Value& item : in.iterate(v)) {
        Value key = attribute && !attribute->is_none() ? in.get_attr_path(item, in.str(*attribute)) : item;
        std::string code = key_code(sort_key(key, case_sensitive));
        if (seen_set.emplace(code, true).second) out.push_back(item);
    }
    return Value::array(std::move(out));
}

Value f_sum(Interpreter& in, const Value& v, CallArgs& args) {
    args.expect_at_most("sum", 2, {"attribute", "start"});
    const Value* attribute = args.get(0, "attribute");
    Value total = args.get_or(1, "start", Value(static_cast<int64_t>(0)));
    for (const Value& item : in.iterate(v)) {
        Value x = attribute && !attribute->is_none() ? in.get_attr_path(item, in.str(*attribute)) : item;
        if (!x.is_number() || !total.is_number()) fail("sum() supports numbers only, got " + type_name(x));
        if (x.is_float() || total.is_float()) {
            total = Value(total.as_double() + x.as_double());
        } else {
            int64_t r;
            if (__builtin_add_overflow(total.as_int(), x.as_int(), &r)) fail("integer overflow");
            total = Value(r);
        }
    }
    return total;
}

Value min_max(Interpreter& in, const Value& v, CallArgs& args, bool want_max) {
    args.expect_at_most(want_max ? "max" : "min", 2, {"case_sensitive", "attribute"});
    bool case_sensitive = flag(args, 0, "case_sensitive", false);
    const Value* attribute = args.get(1, "attribute");
    std::vector<Value> items = in.iterate(v);
    if (items.empty()) return Value::undefined(std::string("No aggregated item, sequence was empty."));
    auto key = [&](const Value& item) {
        return sort_key(attribute && !attribute->is_none() ? in.get_attr_path(item, in.str(*attribute)) : item, case_sensitive);
    };
    size_t best = 0;
    for (size_t i = 1; i < items.size(); ++i) {
        int c = compare(key(items[i]), key(items[best]));
        if (want_max ? c > 0 : c < 0) best = i;
    }
    return items[best];
}

Value f_min(Interpreter& in, const Value& v, CallArgs& args) { return min_max(in, v, args, false); }
Value f_max(Interpreter& in, const Value& v, CallArgs& args) { return min_max(in, v, args, true); }

Value f_batch(Interpreter& in, const Value& v, CallArgs& args) {
    args.expect_at_most("batch", 2, {"linecount", "fill_with"});
    const Value* count_v = args.get(0, "linecount");
    if (!count_v || !count_v->is_integral() || count_v->as_int() <= 0) fail("batch linecount must be a positive integer");
    size_t count = static_cast<size_t>(count_v->as_int());
    const Value* fill = args.get(1, "fill_with");
    std::vector<Value> out, current;
    for (const Value& item : in.iterate(v)) {
        current.push_back(item);
        if (current.size() == count) {
            out.push_back(Value::array(std::move(current)));
            in.charge_copy(out.back());
            current.clear();
        }
    }
    if (!current.empty()) {
        if (fill && !fill->is_none()) {
            in.charge(count);
            while (current.size() < count) current.push_back(*fill);
        }
        out.push_back(Value::array(std::move(current)));
        in.charge_copy(out.back());
    }
    return Value::array(std::move(out));
}

Value f_wordcount(Interpreter& in, const Value& v, CallArgs&) {
    std::string s = in.str(v);
    int64_t words = 0;
    bool in_word = false;
    for (unsigned char c : s) {
        bool word_char = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
        if (word_char && !in_word) ++words;
        in_word = word_char;
    }
    return Value(words);
}

Value f_reverse(Interpreter& in, const Value& v, CallArgs&) {
    if (v.is_string()) {
        std::vector<size_t> offsets = utf8_offsets(v.str());
        std::string out;
        for (size_t i = offsets.size() - 1; i > 0; --i) out.append(v.str(), offsets[i - 1], offsets[i] - offsets[i - 1]);
        return Value(std::move(out));
    }
    std::vector<Value> items = in.iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::array(std::move(items));
}

Value f_sort(Interpreter& in, const Value& v, CallArgs& args) {
    args.expect_at_most("sort", 3, {"reverse", "case_sensitive", "attribute"});
    bool reverse = flag(args, 0, "reverse", false);
    bool case_sensitive = flag(args, 1, "case_sensitive", false);
    const Value* attribute = args.get(2, "attribute");
    std::vector<Value> items = in.iterate(v);
    in.charge(items.size() * 8);
    auto key = [&](const Value& item) {
        return sort_key(attribute && !attribute->is_none() ? in.get_attr_path(item, in.str(*attribute)) : item, case_sensitive);
    };
    std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
        int c = compare(key(a), key(b));
        return reverse ? c > 0 : c < 0;
    });
    return Value::array(std::move(items));
}

Value f_center(Interpreter& in, const Value& v, CallArgs& args) {
    CallArgs method_args;
    method_args.positional.push_back(args.get_or(0, "width", Value(static_cast<int64_t>(80))));
    return call_method(in, Value(in.str(v)), "center", method_args);
}

Value f_attr(Interpreter& in, const Value& v, CallArgs& args) {
    const Value* name = args.get(0, "name");
    if (!name) fail("attr filter needs an attribute name");
    return in.get_attr(v, in.str(*name));
}

Value f_from_json(Interpreter& in, const Value& v, CallArgs&) {
    if (!v.is_string()) fail("from_json expects a string, not " + type_name(v));
    in.charge_bytes(v.str().size());
    return parse_json_value(v.str());
}

Value f_format(Interpreter& in, const Value& v, CallArgs& args) {
    if (!args.positional.empty() && !args.keyword.empty()) fail("can't handle positional and keyword arguments at the same time");
    Value params;
    if (!args.keyword.empty()) {
        params = Value::object();
        for (const auto& [key, value] : args.keyword) params.obj().set(Value(key), value);
    } else {
        params = Value::tuple(args.positional);
    }
    return Value(percent_format(in, in.str(v), params));
}

Value f_pprint(Interpreter& in, const Value& v, CallArgs&) { return Value(repr(v, in.max_bytes())); }

const std::unordered_map<std::string_view, FilterFn>& filter_table() {
    static const std::unordered_map<std::string_view, FilterFn> table = {
        {"trim", f_trim},
        {"tojson", f_tojson},
        {"join", f_join},
        {"length", f_length},
        {"count", f_length},
        {"map", f_map},
        {"select", f_select},
        {"reject", f_reject},
        {"selectattr", f_selectattr},
        {"rejectattr", f_rejectattr},
        {"items", f_items},
        {"list", f_list},
        {"first", f_first},
        {"last", f_last},
        {"upper", f_upper},
        {"lower", f_lower},
        {"capitalize", f_capitalize},
        {"title", f_title},
        {"replace", f_replace},
        {"default", f_default},
        {"d", f_default},
        {"string", f_string},
        {"int", f_int},
        {"float", f_float},
        {"abs", f_abs},
        {"round", f_round},
        {"safe", f_safe},
        {"escape", f_escape},
        {"e", f_escape},
        {"forceescape", f_escape},
        {"indent", f_indent},
        {"dictsort", f_dictsort},
        {"unique", f_unique},
        {"sum", f_sum},
        {"min", f_min},
        {"max", f_max},
        {"batch", f_batch},
        {"wordcount", f_wordcount},
        {"reverse", f_reverse},
        {"sort", f_sort},
        {"center", f_center},
        {"attr", f_attr},
        {"from_json", f_from_json},
        {"format", f_format},
        {"pprint", f_pprint},
    };
    return table;
}

} // namespace

Value parse_json_value(std::string_view text) {
    json j;
    if (json_nesting_depth(text) > kMaxJsonDepth)
        fail("invalid JSON: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    try {
        j = json::parse(text.begin(), text.end());
    } catch (const std::exception& e) {
        fail(std::string("invalid JSON: ") + e.what());
    }
    return from_json_node(j, 0);
}

const FilterFn* find_filter(std::string_view name) {
    const auto& table = filter_table();
    auto it = table.find(name);
    return it == table.end() ? nullptr : &it->second;
}

bool filter_exists(std::string_view name) { return find_filter(name) != nullptr; }

} // namespace cflow::jinja
