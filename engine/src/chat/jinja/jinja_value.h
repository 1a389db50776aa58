#pragma once
// Value model of the sandboxed Jinja interpreter. Python semantics (the reference is jinja2
// under transformers): dicts keep insertion order, bool is an int, ints and floats compare
// equal across kinds, lists/dicts have reference semantics (append/pop mutate the shared
// object, as in Python). Deliberately not nlohmann::json: its ordering, int/float equality
// and repr() differ from Python.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "cflow/base/utf8.h"

namespace cflow::jinja {

// Internal error type: thrown inside the lexer/parser/interpreter only and converted to
// cflow::Error at the ChatTemplate boundary. `located` is set once a source position has
// been prefixed, so the innermost node names the line and column.
struct JinjaError {
    std::string message;
    bool located = false;
    // The render ran out of its budget (steps, memory, time, output size, nesting) rather than
    // failing in the template's own logic: a load-time probe refuses such a template.
    bool over_budget = false;
};
[[noreturn]] void fail(std::string message);
[[noreturn]] void fail_over_budget(std::string message);
[[noreturn]] void fail_output_too_large(size_t max_bytes);

class Value;
class Interpreter;
struct CallArgs;
struct ArrayData;
class ObjectData;
struct CallableData;

using NativeFn = std::function<Value(Interpreter&, CallArgs&)>;

class Value {
public:
    enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, Array, Object, Callable };

    Value() : data_(UndefinedTag{}) {}
    Value(bool b) : data_(b) {}
    template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
    Value(T i) : data_(static_cast<int64_t>(i)) {}
    Value(double d) : data_(d) {}
    Value(std::string s) : data_(std::move(s)) {}
    Value(std::string_view s) : data_(std::string(s)) {}
    Value(const char* s) : data_(std::string(s)) {}

    // hint: why it is undefined, e.g. "'foo' is undefined"; used when it is called or used in math.
    static Value undefined(std::string hint = {});
    static Value none();
    static Value array(std::vector<Value> items = {});
    static Value tuple(std::vector<Value> items);
    static Value object();
    static Value namespace_object();
    // Attribute-only object (loop, cycler): no dict methods, attribute access only.
    static Value attrs_object();
    static Value callable(std::string name, NativeFn fn);

    Kind kind() const { return static_cast<Kind>(data_.index()); }
    bool is_undefined() const { return kind() == Kind::Undefined; }
    bool is_none() const { return kind() == Kind::None; }
    bool is_bool() const { return kind() == Kind::Bool; }
    bool is_int() const { return kind() == Kind::Int; }
    bool is_float() const { return kind() == Kind::Float; }
    // Python numbers: bool counts as int.
    bool is_integral() const { return is_int() || is_bool(); }
    bool is_number() const { return is_int() || is_bool() || is_float(); }
    bool is_string() const { return kind() == Kind::String; }
    bool is_array() const { return kind() == Kind::Array; }
    bool is_object() const { return kind() == Kind::Object; }
    bool is_callable() const { return kind() == Kind::Callable; }

    bool as_bool() const { return std::get<bool>(data_); }
    int64_t as_int() const;  // Int or Bool
    double as_double() const;  // any number
    const std::string& str() const { return std::get<std::string>(data_); }
    const std::string& undefined_hint() const { return std::get<UndefinedTag>(data_).hint; }
    ArrayData& arr() const { return *std::get<std::shared_ptr<ArrayData>>(data_); }
    ObjectData& obj() const { return *std::get<std::shared_ptr<ObjectData>>(data_); }
    CallableData& fn() const { return *std::get<std::shared_ptr<CallableData>>(data_); }
    // Identity of a container (for `is sameas`); null for scalars.
    const void* identity() const;

private:
    struct UndefinedTag {
        std::string hint;
    };
    struct NoneTag {};
    std::variant<UndefinedTag, NoneTag, bool, int64_t, double, std::string, std::shared_ptr<ArrayData>,
                 std::shared_ptr<ObjectData>, std::shared_ptr<CallableData>>
        data_;
};

// Containers release their children iteratively (park/drain_pending in jinja_value.cpp): a
// template can build a list nested a million levels deep, whose recursive destruction would
// overflow the stack.
struct ArrayData {
    ArrayData() = default;
    ArrayData(const ArrayData&) = default;
    ArrayData& operator=(const ArrayData&) = default;
    ~ArrayData();
    std::vector<Value> items;
    bool is_tuple = false;  // only changes repr(): (1, 2) instead of [1, 2]
};

// Insertion-ordered mapping with Python key equality (1, 1.0 and True are the same key).
class ObjectData {
public:
    ObjectData() = default;
    ObjectData(const ObjectData&) = default;
    ObjectData& operator=(const ObjectData&) = default;
    ~ObjectData();
    enum class Flavor : uint8_t { Dict, Namespace, Attrs };
    Flavor flavor = Flavor::Dict;

    const Value* find(const Value& key) const;
    Value* find(const Value& key);
    const Value* find(std::string_view key) const;
    void set(const Value& key, Value value);
    bool erase(const Value& key);
    size_t size() const { return entries_.size(); }
    void clear();
    // Direct access to the value of entry `index` (entries keep their insertion position).
    Value& value_at(size_t index) { return entries_[index].second; }
    const std::vector<std::pair<Value, Value>>& entries() const { return entries_; }

private:
    std::vector<std::pair<Value, Value>> entries_;
    std::unordered_map<std::string, size_t> index_;  // key_code(key) -> position in entries_
};

struct CallableData {
    std::string name;
    NativeFn fn;
};

struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;

    const Value* find_keyword(std::string_view name) const;
    // Positional argument `index`, else keyword `name`, else nullptr.
    const Value* get(size_t index, std::string_view name) const;
    Value get_or(size_t index, std::string_view name, Value fallback) const;
    // Fails with "<fn>() takes at most N arguments" / "unexpected keyword argument" messages.
    void expect_at_most(std::string_view fn_name, size_t max_positional,
                        std::initializer_list<std::string_view> keywords) const;
};

// While one is alive (on this thread), every list/dict created is recorded; its destructor
// empties the containers that are still alive, which can only be those kept alive by
// reference cycles (`l.append(l)`), so a hostile template cannot leak memory per render.
// Create it before any Value of the render so it is destroyed after them.
class ContainerRegistry {
public:
    ContainerRegistry();
    ~ContainerRegistry();
    ContainerRegistry(const ContainerRegistry&) = delete;
    ContainerRegistry& operator=(const ContainerRegistry&) = delete;

    void add(const std::shared_ptr<ArrayData>& a);
    void add(const std::shared_ptr<ObjectData>& o);
    static ContainerRegistry* current();

private:
    void compact();
    ContainerRegistry* previous_;
    std::vector<std::weak_ptr<ArrayData>> arrays_;
    std::vector<std::weak_ptr<ObjectData>> objects_;
    size_t compact_at_ = 4096;
};

// Hash key of a dict key (Python semantics); fails for unhashable values (lists, dicts).
std::string key_code(const Value& key);

// Python truthiness (Undefined is falsy, like jinja2's Undefined).
bool truthy(const Value& value);
// Python type name for messages: "str", "int", "list", "dict", "NoneType", "undefined", ...
std::string type_name(const Value& value);

// Python str() / repr(). Fail when the result would exceed max_bytes or the nesting is deeper
// than kMaxNesting (a self-containing list would otherwise recurse forever).
inline constexpr size_t kMaxNesting = 200;
std::string to_str(const Value& value, size_t max_bytes);
std::string repr(const Value& value, size_t max_bytes);
std::string format_float(double value);  // Python repr(float)

// Python ==, and ordering (<0, 0, >0) for <, >, sorting; fails with a TypeError-like message
// for unorderable pairs ("'<' not supported between instances of 'int' and 'str'").
bool equals(const Value& a, const Value& b);
int compare(const Value& a, const Value& b);

struct JsonOptions {
    int indent = -1;  // <0: single line
    std::string indent_string;  // used when non-empty (indent given as a string)
    bool has_item_separator = false;  // else ", " single-line, "," when indented (json.dumps)
    std::string item_separator;
    std::string key_separator = ": ";
    bool sort_keys = false;
    bool ensure_ascii = false;
};
// Python json.dumps(value, ...) as transformers' tojson filter calls it.
std::string to_json(const Value& value, const JsonOptions& options, size_t max_bytes);

// UTF-8 helpers: Python indexes strings by code point. Invalid bytes count as one code point each.
size_t utf8_length(std::string_view s);
// Byte offsets of every code point start, plus s.size() at the end.
std::vector<size_t> utf8_offsets(std::string_view s);

// Python's whitespace (str.isspace(); what str.strip(), str.split() and the trim filter remove):
// \t-\r, \x1c-\x1f, space, U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F,
// U+205F, U+3000.
bool is_py_whitespace(uint32_t cp);
// Byte length of the Python whitespace character starting at s[pos]; 0 when there is none.
size_t py_whitespace_at(std::string_view s, size_t pos);

} // namespace cflow::jinja
