#include "chat/jinja/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "tokenizer/tokenizer_common.h"

namespace cflow::jinja {

void fail(std::string message) { throw JinjaError{std::move(message), false, false}; }
void fail_over_budget(std::string message) { throw JinjaError{std::move(message), false, true}; }
void fail_output_too_large(size_t max_bytes) { fail_over_budget("output larger than " + std::to_string(max_bytes) + " bytes"); }

namespace {

void check_size(const std::string& out, size_t max_bytes) {
    if (out.size() > max_bytes) fail_output_too_large(max_bytes);
}

void check_depth(int depth) {
    if (depth > static_cast<int>(kMaxNesting))
        fail_over_budget("value nesting deeper than " + std::to_string(kMaxNesting) + " levels (self-referencing container?)");
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Value

Value Value::undefined(std::string hint) {
    Value v;
    v.data_ = UndefinedTag{std::move(hint)};
    return v;
}

Value Value::none() {
    Value v;
    v.data_ = NoneTag{};
    return v;
}

Value Value::array(std::vector<Value> items) {
    Value v;
    auto data = std::make_shared<ArrayData>();
    data->items = std::move(items);
    if (ContainerRegistry* registry = ContainerRegistry::current()) registry->add(data);
    v.data_ = std::move(data);
    return v;
}

Value Value::tuple(std::vector<Value> items) {
    Value v = array(std::move(items));
    v.arr().is_tuple = true;
    return v;
}

Value Value::object() {
    Value v;
    auto data = std::make_shared<ObjectData>();
    if (ContainerRegistry* registry = ContainerRegistry::current()) registry->add(data);
    v.data_ = std::move(data);
    return v;
}

Value Value::namespace_object() {
    Value v = object();
    v.obj().flavor = ObjectData::Flavor::Namespace;
    return v;
}

Value Value::attrs_object() {
    Value v = object();
    v.obj().flavor = ObjectData::Flavor::Attrs;
    return v;
}

Value Value::callable(std::string name, NativeFn fn) {
    Value v;
    auto data = std::make_shared<CallableData>();
    data->name = std::move(name);
    data->fn = std::move(fn);
    v.data_ = std::move(data);
    return v;
}

int64_t Value::as_int() const {
    if (is_bool()) return as_bool() ? 1 : 0;
    return std::get<int64_t>(data_);
}

double Value::as_double() const {
    if (is_float()) return std::get<double>(data_);
    return static_cast<double>(as_int());
}

const void* Value::identity() const {
    switch (kind()) {
    case Kind::Array: return std::get<std::shared_ptr<ArrayData>>(data_).get();
    case Kind::Object: return std::get<std::shared_ptr<ObjectData>>(data_).get();
    case Kind::Callable: return std::get<std::shared_ptr<CallableData>>(data_).get();
    default: return nullptr;
    }
}

// ---------------------------------------------------------------------------------------------
// Iterative release of nested containers

namespace {
// Children that hold containers are parked here and destroyed by the outermost release loop,
// so destruction depth stays constant however deep the nesting is.
thread_local std::vector<Value> t_pending_release;
thread_local bool t_releasing = false;

void park(Value& v) {
    if (v.is_array() || v.is_object() || v.is_callable()) t_pending_release.push_back(std::move(v));
}

void drain_pending() {
    if (t_releasing) return;
    t_releasing = true;
    while (!t_pending_release.empty()) {
        Value v = std::move(t_pending_release.back());
        t_pending_release.pop_back();
        // v's destructor may run ~ArrayData/~ObjectData, which park grandchildren and return.
    }
    t_releasing = false;
}
} // namespace

ArrayData::~ArrayData() {
    for (Value& v : items) park(v);
    items.clear();
    drain_pending();
}

ObjectData::~ObjectData() {
    for (auto& [key, value] : entries_) {
        park(key);
        park(value);
    }
    entries_.clear();
    drain_pending();
}

void ObjectData::clear() {
    for (auto& [key, value] : entries_) {
        park(key);
        park(value);
    }
    entries_.clear();
    index_.clear();
    drain_pending();
}

// ---------------------------------------------------------------------------------------------
// ContainerRegistry

namespace {
thread_local ContainerRegistry* t_registry = nullptr;
}

ContainerRegistry::ContainerRegistry() : previous_(t_registry) { t_registry = this; }

ContainerRegistry::~ContainerRegistry() {
    t_registry = previous_;
    // Lock everything first: emptying one container may release others mid-loop.
    std::vector<std::shared_ptr<ArrayData>> arrays;
    std::vector<std::shared_ptr<ObjectData>> objects;
    for (auto& w : arrays_)
        if (auto a = w.lock()) arrays.push_back(std::move(a));
    for (auto& w : objects_)
        if (auto o = w.lock()) objects.push_back(std::move(o));
    for (auto& a : arrays) {
        for (Value& v : a->items) park(v);
        a->items.clear();
        drain_pending();
    }
    for (auto& o : objects) o->clear();
}

ContainerRegistry* ContainerRegistry::current() { return t_registry; }

void ContainerRegistry::add(const std::shared_ptr<ArrayData>& a) {
    arrays_.push_back(a);
    if (arrays_.size() + objects_.size() >= compact_at_) compact();
}

void ContainerRegistry::add(const std::shared_ptr<ObjectData>& o) {
    objects_.push_back(o);
    if (arrays_.size() + objects_.size() >= compact_at_) compact();
}

void ContainerRegistry::compact() {
    auto expired = [](const auto& w) { return w.expired(); };
    arrays_.erase(std::remove_if(arrays_.begin(), arrays_.end(), expired), arrays_.end());
    objects_.erase(std::remove_if(objects_.begin(), objects_.end(), expired), objects_.end());
    compact_at_ = std::max<size_t>(4096, 2 * (arrays_.size() + objects_.size()));
}

// ---------------------------------------------------------------------------------------------
// ObjectData

namespace {
// (Built by append: GCC 12 reports a false -Wrestrict for "x" + std::string at -O3.)
std::string prefixed(char tag, std::string_view text) {
    std::string out;
    out.reserve(text.size() + 1);
    out += tag;
    out.append(text.data(), text.size());
    return out;
}
} // namespace

std::string key_code(const Value& key) {
    switch (key.kind()) {
    case Value::Kind::Bool:
    case Value::Kind::Int: return prefixed('i', std::to_string(key.as_int()));
    case Value::Kind::Float: {
        double d = key.as_double();
        // 1.0 and 1 are the same dict key in Python.
        if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18)
            return prefixed('i', std::to_string(static_cast<int64_t>(d)));
        return prefixed('f', format_float(d));
    }
    case Value::Kind::String: return prefixed('s', key.str());
    case Value::Kind::None: return "n";
    case Value::Kind::Array:
        if (key.arr().is_tuple) {
            std::string code = "t";
            for (const Value& item : key.arr().items) {
                std::string part = key_code(item);
                code += std::to_string(part.size()) + ":" + part;
            }
            return code;
        }
        break;
    default: break;
    }
    fail("unhashable type: '" + type_name(key) + "'");
}

const Value* ObjectData::find(const Value& key) const {
    auto it = index_.find(key_code(key));
    return it == index_.end() ? nullptr : &entries_[it->second].second;
}

Value* ObjectData::find(const Value& key) {
    auto it = index_.find(key_code(key));
    return it == index_.end() ? nullptr : &entries_[it->second].second;
}

const Value* ObjectData::find(std::string_view key) const {
    std::string code;
    code.reserve(key.size() + 1);
    code += 's';
    code += key;
    auto it = index_.find(code);
    return it == index_.end() ? nullptr : &entries_[it->second].second;
}

void ObjectData::set(const Value& key, Value value) {
    std::string code = key_code(key);
    auto it = index_.find(code);
    if (it != index_.end()) {
        entries_[it->second].second = std::move(value);
        return;
    }
    index_.emplace(std::move(code), entries_.size());
    entries_.emplace_back(key, std::move(value));
}

bool ObjectData::erase(const Value& key) {
    auto it = index_.find(key_code(key));
    if (it == index_.end()) return false;
    size_t position = it->second;
    index_.erase(it);
    entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(position));
    for (auto& [code, index] : index_)
        if (index > position) --index;
    return true;
}

// ---------------------------------------------------------------------------------------------
// CallArgs

const Value* CallArgs::find_keyword(std::string_view name) const {
    for (const auto& [key, value] : keyword)
        if (key == name) return &value;
    return nullptr;
}

const Value* CallArgs::get(size_t index, std::string_view name) const {
    if (index < positional.size()) return &positional[index];
    return name.empty() ? nullptr : find_keyword(name);
}

Value CallArgs::get_or(size_t index, std::string_view name, Value fallback) const {
    const Value* v = get(index, name);
    return v ? *v : std::move(fallback);
}

void CallArgs::expect_at_most(std::string_view fn_name, size_t max_positional,
                              std::initializer_list<std::string_view> keywords) const {
    if (positional.size() > max_positional)
        fail(std::string(fn_name) + "() takes at most " + std::to_string(max_positional) + " positional arguments (" +
             std::to_string(positional.size()) + " given)");
    for (const auto& [key, value] : keyword) {
        if (std::find(keywords.begin(), keywords.end(), key) == keywords.end())
            fail(std::string(fn_name) + "() got an unexpected keyword argument '" + key + "'");
    }
}

// ---------------------------------------------------------------------------------------------
// Conversions

bool truthy(const Value& v) {
    switch (v.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return false;
    case Value::Kind::Bool: return v.as_bool();
    case Value::Kind::Int: return v.as_int() != 0;
    case Value::Kind::Float: return v.as_double() != 0.0;
    case Value::Kind::String: return !v.str().empty();
    case Value::Kind::Array: return !v.arr().items.empty();
    case Value::Kind::Object: return v.obj().flavor != ObjectData::Flavor::Dict || v.obj().size() != 0;
    case Value::Kind::Callable: return true;
    }
    return false;
}

std::string type_name(const Value& v) {
    switch (v.kind()) {
    case Value::Kind::Undefined: return "undefined";
    case Value::Kind::None: return "NoneType";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "str";
    case Value::Kind::Array: return v.arr().is_tuple ? "tuple" : "list";
    case Value::Kind::Object:
        switch (v.obj().flavor) {
        case ObjectData::Flavor::Dict: return "dict";
        case ObjectData::Flavor::Namespace: return "Namespace";
        case ObjectData::Flavor::Attrs: return "object";
        }
        return "dict";
    case Value::Kind::Callable: return "function";
    }
    return "object";
}

std::string format_float(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
    if (value == 0.0) return std::signbit(value) ? "-0.0" : "0.0";
    // Shortest round-trip digits, then Python's repr layout: fixed notation for exponents in
    // [-4, 16), scientific otherwise ("1e+16", "1.5e-05").
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    bool negative = sci[0] == '-';
    if (negative) sci.erase(0, 1);
    size_t e_pos = sci.find('e');
    std::string mantissa = sci.substr(0, e_pos);
    int exponent = std::atoi(sci.c_str() + e_pos + 1);
    std::string digits;
    for (char c : mantissa)
        if (c != '.') digits += c;
    while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
    std::string out = negative ? "-" : "";
    if (exponent >= -4 && exponent < 16) {
        if (exponent < 0) {
            out += "0.";
            out.append(static_cast<size_t>(-exponent - 1), '0');
            out += digits;
        } else {
            size_t int_digits = static_cast<size_t>(exponent) + 1;
            if (digits.size() <= int_digits) {
                out += digits;
                out.append(int_digits - digits.size(), '0');
                out += ".0";
            } else {
                out += digits.substr(0, int_digits);
                out += '.';
                out += digits.substr(int_digits);
            }
        }
    } else {
        out += digits[0];
        if (digits.size() > 1) {
            out += '.';
            out += digits.substr(1);
        }
        char exp_buf[16];
        std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        out += exp_buf;
    }
    return out;
}

namespace {

// Python's str.isprintable() for one code point: not Cc, Cf, Cs, Co, Zl, Zp, nor Zs other than
// the space. (Python also escapes unassigned code points, Cn, which the tables here do not list.)
bool is_py_printable(uint32_t cp) {
    if (cp == ' ') return true;
    if (tok::is_control_char(cp) || tok::is_space_separator(cp)) return false;  // Cc, Cf; Zs
    if (cp == 0x2028 || cp == 0x2029) return false;                              // Zl, Zp
    if ((cp >= 0xD800 && cp <= 0xDFFF) || (cp >= 0xE000 && cp <= 0xF8FF) || cp >= 0xF0000) return false;  // Cs, Co
    return true;
}

// Python repr(str): the quote chosen as Python chooses it; \\, \n, \r, \t; other characters
// that are not printable as \xNN, \uNNNN or \UNNNNNNNN.
void repr_string(std::string& out, const std::string& s) {
    char quote = '\'';
    if (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) quote = '"';
    out += quote;
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        uint32_t cp = 0;
        const size_t n = c < 0x80 ? 0 : decode_utf8_at(s, i, cp);
        if (c >= 0x80) {
            if (!n) {  // an ill-formed byte (Python strings have none): kept as it is
                out += static_cast<char>(c);
                ++i;
                continue;
            }
            if (is_py_printable(cp)) {
                out.append(s, i, n);
            } else {
                char buf[16];
                if (cp <= 0xFF) std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(cp));
                else if (cp <= 0xFFFF) std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
                else std::snprintf(buf, sizeof(buf), "\\U%08x", static_cast<unsigned>(cp));
                out += buf;
            }
            i += n;
            continue;
        }
        ++i;
        if (c == static_cast<unsigned char>(quote) || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\x%02x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    out += quote;
}

void repr_into(std::string& out, const Value& v, size_t max_bytes, int depth);

void str_into(std::string& out, const Value& v, size_t max_bytes, int depth) {
    switch (v.kind()) {
    case Value::Kind::Undefined: break;
    case Value::Kind::None: out += "None"; break;
    case Value::Kind::Bool: out += v.as_bool() ? "True" : "False"; break;
    case Value::Kind::Int: out += std::to_string(v.as_int()); break;
    case Value::Kind::Float: out += format_float(v.as_double()); break;
    case Value::Kind::String: out += v.str(); break;
    default: repr_into(out, v, max_bytes, depth); break;
    }
    check_size(out, max_bytes);
}

void repr_into(std::string& out, const Value& v, size_t max_bytes, int depth) {
    check_depth(depth);
    switch (v.kind()) {
    case Value::Kind::Undefined: out += "Undefined"; break;
    case Value::Kind::String: repr_string(out, v.str()); break;
    case Value::Kind::Array: {
        const ArrayData& a = v.arr();
        out += a.is_tuple ? '(' : '[';
        for (size_t i = 0; i < a.items.size(); ++i) {
            if (i) out += ", ";
            repr_into(out, a.items[i], max_bytes, depth + 1);
        }
        if (a.is_tuple && a.items.size() == 1) out += ',';
        out += a.is_tuple ? ')' : ']';
        break;
    }
    case Value::Kind::Object: {
        const ObjectData& o = v.obj();
        if (o.flavor == ObjectData::Flavor::Namespace) out += "<Namespace ";
        if (o.flavor == ObjectData::Flavor::Attrs) {
            out += "<object>";
            break;
        }
        out += '{';
        bool first = true;
        for (const auto& [key, value] : o.entries()) {
            if (!first) out += ", ";
            first = false;
            repr_into(out, key, max_bytes, depth + 1);
            out += ": ";
            repr_into(out, value, max_bytes, depth + 1);
        }
        out += '}';
        if (o.flavor == ObjectData::Flavor::Namespace) out += '>';
        break;
    }
    case Value::Kind::Callable: out += "<function " + v.fn().name + ">"; break;
    default: str_into(out, v, max_bytes, depth); break;
    }
    check_size(out, max_bytes);
}

bool equals_depth(const Value& a, const Value& b, int depth) {
    check_depth(depth);
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::String: return a.str() == b.str();
    case Value::Kind::Array: {
        const ArrayData& x = a.arr();
        const ArrayData& y = b.arr();
        if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
        for (size_t i = 0; i < x.items.size(); ++i)
            if (!equals_depth(x.items[i], y.items[i], depth + 1)) return false;
        return true;
    }
    case Value::Kind::Object: {
        const ObjectData& x = a.obj();
        const ObjectData& y = b.obj();
        if (x.flavor != ObjectData::Flavor::Dict || y.flavor != ObjectData::Flavor::Dict) return &x == &y;
        if (x.size() != y.size()) return false;
        for (const auto& [key, value] : x.entries()) {
            const Value* other = y.find(key);
            if (!other || !equals_depth(value, *other, depth + 1)) return false;
        }
        return true;
    }
    case Value::Kind::Callable: return a.identity() == b.identity();
    default: return false;
    }
}

int compare_depth(const Value& a, const Value& b, int depth) {
    check_depth(depth);
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) {
            double x = a.as_double(), y = b.as_double();
            return x < y ? -1 : (x > y ? 1 : 0);
        }
        int64_t x = a.as_int(), y = b.as_int();
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (a.is_string() && b.is_string()) {
        int c = a.str().compare(b.str());  // bytewise order of UTF-8 = code point order
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    if (a.is_array() && b.is_array() && a.arr().is_tuple == b.arr().is_tuple) {
        const auto& x = a.arr().items;
        const auto& y = b.arr().items;
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (equals_depth(x[i], y[i], depth + 1)) continue;
            return compare_depth(x[i], y[i], depth + 1);
        }
        return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
    }
    fail("'<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

void json_escape_byte(std::string& out, unsigned char c) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    default:
        if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\u%04x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
}

void json_string(std::string& out, std::string_view s, bool ensure_ascii) {
    out += '"';
    if (!ensure_ascii) {
        for (unsigned char c : s) json_escape_byte(out, c);
    } else {
        std::vector<size_t> offsets = utf8_offsets(s);
        for (size_t i = 0; i + 1 < offsets.size(); ++i) {
            std::string_view unit = s.substr(offsets[i], offsets[i + 1] - offsets[i]);
            unsigned char c0 = static_cast<unsigned char>(unit[0]);
            if (c0 < 0x80) {
                json_escape_byte(out, c0);
                continue;
            }
            uint32_t cp = 0xFFFD;  // a stray byte of invalid UTF-8
            if (unit.size() > 1) {
                cp = c0 & (unit.size() == 2 ? 0x1Fu : unit.size() == 3 ? 0x0Fu : 0x07u);
                for (size_t k = 1; k < unit.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(unit[k]) & 0x3Fu);
            }
            char buf[16];
            if (cp >= 0x10000) {
                uint32_t v = cp - 0x10000;
                std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
            } else {
                std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
            }
            out += buf;
        }
    }
    out += '"';
}

std::string json_key(const Value& key) {
    switch (key.kind()) {
    case Value::Kind::String: return key.str();
    case Value::Kind::Bool: return key.as_bool() ? "true" : "false";
    case Value::Kind::Int: return std::to_string(key.as_int());
    case Value::Kind::Float: return format_float(key.as_double());
    case Value::Kind::None: return "null";
    default: fail("keys must be str, int, float, bool or None, not " + type_name(key));
    }
}

void json_newline(std::string& out, const JsonOptions& o, int level) {
    out += '\n';
    for (int i = 0; i < level; ++i) {
        if (!o.indent_string.empty())
            out += o.indent_string;
        else
            out.append(static_cast<size_t>(o.indent), ' ');
    }
}

void json_into(std::string& out, const Value& v, const JsonOptions& o, const std::string& item_sep, int level,
               size_t max_bytes) {
    check_depth(level);
    bool pretty = o.indent >= 0 || !o.indent_string.empty();
    switch (v.kind()) {
    case Value::Kind::None: out += "null"; break;
    case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; break;
    case Value::Kind::Int: out += std::to_string(v.as_int()); break;
    case Value::Kind::Float: {
        double d = v.as_double();
        if (std::isnan(d))
            out += "NaN";
        else if (std::isinf(d))
            out += d < 0 ? "-Infinity" : "Infinity";
        else
            out += format_float(d);
        break;
    }
    case Value::Kind::String: json_string(out, v.str(), o.ensure_ascii); break;
    case Value::Kind::Array: {
        const auto& items = v.arr().items;
        if (items.empty()) {
            out += "[]";
            break;
        }
        out += '[';
        for (size_t i = 0; i < items.size(); ++i) {
            if (i) out += item_sep;
            if (pretty) json_newline(out, o, level + 1);
            json_into(out, items[i], o, item_sep, level + 1, max_bytes);
        }
        if (pretty) json_newline(out, o, level);
        out += ']';
        break;
    }
    case Value::Kind::Object: {
        if (v.obj().flavor != ObjectData::Flavor::Dict) fail("Object of type " + type_name(v) + " is not JSON serializable");
        std::vector<std::pair<std::string, const Value*>> entries;
        for (const auto& [key, value] : v.obj().entries()) entries.emplace_back(json_key(key), &value);
        if (o.sort_keys)
            std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        if (entries.empty()) {
            out += "{}";
            break;
        }
        out += '{';
        for (size_t i = 0; i < entries.size(); ++i) {
            if (i) out += item_sep;
            if (pretty) json_newline(out, o, level + 1);
            json_string(out, entries[i].first, o.ensure_ascii);
            out += o.key_separator;
            json_into(out, *entries[i].second, o, item_sep, level + 1, max_bytes);
        }
        if (pretty) json_newline(out, o, level);
        out += '}';
        break;
    }
    case Value::Kind::Undefined: fail("Object of type Undefined is not JSON serializable");
    case Value::Kind::Callable: fail("Object of type function is not JSON serializable");
    }
    check_size(out, max_bytes);
}

} // namespace

std::string to_str(const Value& value, size_t max_bytes) {
    if (value.is_string()) {
        if (value.str().size() > max_bytes) fail_output_too_large(max_bytes);
        return value.str();
    }
    std::string out;
    str_into(out, value, max_bytes, 0);
    return out;
}

std::string repr(const Value& value, size_t max_bytes) {
    std::string out;
    repr_into(out, value, max_bytes, 0);
    return out;
}

bool equals(const Value& a, const Value& b) { return equals_depth(a, b, 0); }
int compare(const Value& a, const Value& b) { return compare_depth(a, b, 0); }

std::string to_json(const Value& value, const JsonOptions& options, size_t max_bytes) {
    bool pretty = options.indent >= 0 || !options.indent_string.empty();
    std::string item_sep = options.has_item_separator ? options.item_separator : (pretty ? "," : ", ");
    std::string out;
    json_into(out, value, options, item_sep, 0, max_bytes);
    return out;
}

// ---------------------------------------------------------------------------------------------
// UTF-8

size_t utf8_length(std::string_view s) {
    size_t count = 0;
    for (size_t i = 0; i < s.size(); i += utf8_char_length(s, i)) ++count;
    return count;
}

bool is_py_whitespace(uint32_t cp) {
    if (cp < 0x80) return cp == ' ' || (cp >= '\t' && cp <= '\r') || (cp >= 0x1c && cp <= 0x1f);
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

size_t py_whitespace_at(std::string_view s, size_t pos) {
    if (pos >= s.size()) return 0;
    uint32_t cp = 0;
    const size_t n = decode_utf8_at(s, pos, cp);
    return n && is_py_whitespace(cp) ? n : 0;
}

std::vector<size_t> utf8_offsets(std::string_view s) {
    std::vector<size_t> offsets;
    offsets.reserve(s.size() + 1);
    for (size_t i = 0; i < s.size(); i += utf8_char_length(s, i)) offsets.push_back(i);
    offsets.push_back(s.size());
    return offsets;
}

} // namespace cflow::jinja
