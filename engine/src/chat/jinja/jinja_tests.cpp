// Jinja tests (`x is defined`, `n is divisibleby 3`, ...), jinja2 semantics. As in jinja2,
// an Undefined counts as iterable and as a sequence (it iterates as empty).
#include <unordered_map>

#include "chat/jinja/jinja_interpreter.h"

namespace cflow::jinja {

namespace {

const Value& operand(const CallArgs& args, const char* test) {
    const Value* v = args.get(0, "");
    if (!v) fail(std::string("test '") + test + "' needs an argument");
    return *v;
}

bool is_dict(const Value& v) { return v.is_object() && v.obj().flavor == ObjectData::Flavor::Dict; }

bool t_defined(Interpreter&, const Value& v, CallArgs&) { return !v.is_undefined(); }
bool t_undefined(Interpreter&, const Value& v, CallArgs&) { return v.is_undefined(); }
bool t_none(Interpreter&, const Value& v, CallArgs&) { return v.is_none(); }
bool t_string(Interpreter&, const Value& v, CallArgs&) { return v.is_string(); }
bool t_number(Interpreter&, const Value& v, CallArgs&) { return v.is_number(); }
bool t_integer(Interpreter&, const Value& v, CallArgs&) { return v.is_int(); }
bool t_float(Interpreter&, const Value& v, CallArgs&) { return v.is_float(); }
bool t_boolean(Interpreter&, const Value& v, CallArgs&) { return v.is_bool(); }
bool t_true(Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && v.as_bool(); }
bool t_false(Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && !v.as_bool(); }
bool t_mapping(Interpreter&, const Value& v, CallArgs&) { return is_dict(v); }
bool t_iterable(Interpreter&, const Value& v, CallArgs&) {
    return v.is_string() || v.is_array() || is_dict(v) || v.is_undefined();
}
bool t_sequence(Interpreter&, const Value& v, CallArgs&) {
    return v.is_string() || v.is_array() || is_dict(v) || v.is_undefined();
}
bool t_callable(Interpreter&, const Value& v, CallArgs&) { return v.is_callable(); }

int64_t integral(const Value& v, const char* test) {
    if (!v.is_number()) fail(std::string("test '") + test + "' needs a number, not " + type_name(v));
    if (v.is_float()) return static_cast<int64_t>(v.as_double());
    return v.as_int();
}

bool t_even(Interpreter&, const Value& v, CallArgs&) { return integral(v, "even") % 2 == 0; }
bool t_odd(Interpreter&, const Value& v, CallArgs&) { return integral(v, "odd") % 2 != 0; }
bool t_divisibleby(Interpreter&, const Value& v, CallArgs& args) {
    int64_t divisor = integral(operand(args, "divisibleby"), "divisibleby");
    if (divisor == 0) fail("integer division or modulo by zero");
    if (divisor == -1) return true;
    return integral(v, "divisibleby") % divisor == 0;
}

bool t_eq(Interpreter&, const Value& v, CallArgs& args) { return equals(v, operand(args, "eq")); }
bool t_ne(Interpreter&, const Value& v, CallArgs& args) { return !equals(v, operand(args, "ne")); }
bool t_lt(Interpreter&, const Value& v, CallArgs& args) { return compare(v, operand(args, "lt")) < 0; }
bool t_le(Interpreter&, const Value& v, CallArgs& args) { return compare(v, operand(args, "le")) <= 0; }
bool t_gt(Interpreter&, const Value& v, CallArgs& args) { return compare(v, operand(args, "gt")) > 0; }
bool t_ge(Interpreter&, const Value& v, CallArgs& args) { return compare(v, operand(args, "ge")) >= 0; }

bool t_in(Interpreter& in, const Value& v, CallArgs& args) {
    const Value& seq = operand(args, "in");
    if (seq.is_string()) {
        if (!v.is_string()) fail("'in <string>' requires string as left operand, not " + type_name(v));
        return seq.str().find(v.str()) != std::string::npos;
    }
    if (is_dict(seq)) {
        try {
            return seq.obj().find(v) != nullptr;
        } catch (JinjaError&) {
            return false;  // unhashable: cannot be a key
        }
    }
    for (const Value& item : in.iterate(seq))
        if (equals(item, v)) return true;
    return false;
}

bool t_sameas(Interpreter&, const Value& v, CallArgs& args) {
    const Value& other = operand(args, "sameas");
    if (v.kind() != other.kind()) return false;
    if (v.identity() || other.identity()) return v.identity() == other.identity();
    return equals(v, other);  // None/True/False/small values: Python singletons / interned
}

bool t_lower(Interpreter&, const Value& v, CallArgs&) {
    if (!v.is_string()) return false;
    for (char c : v.str())
        if (c >= 'A' && c <= 'Z') return false;
    return true;
}

bool t_upper(Interpreter&, const Value& v, CallArgs&) {
    if (!v.is_string()) return false;
    for (char c : v.str())
        if (c >= 'a' && c <= 'z') return false;
    return true;
}

bool t_escaped(Interpreter&, const Value&, CallArgs&) { return false; }  // no Markup type (autoescape is off)
bool t_filter(Interpreter&, const Value& v, CallArgs&) { return v.is_string() && find_filter(v.str()) != nullptr; }
bool t_test(Interpreter&, const Value& v, CallArgs&) { return v.is_string() && find_test(v.str()) != nullptr; }

const std::unordered_map<std::string_view, TestFn>& test_table() {
    static const std::unordered_map<std::string_view, TestFn> table = {
        {"defined", t_defined},   {"undefined", t_undefined}, {"none", t_none},
        {"string", t_string},     {"number", t_number},       {"integer", t_integer},
        {"float", t_float},       {"boolean", t_boolean},     {"true", t_true},
        {"false", t_false},       {"mapping", t_mapping},     {"iterable", t_iterable},
        {"sequence", t_sequence}, {"callable", t_callable},   {"even", t_even},
        {"odd", t_odd},           {"divisibleby", t_divisibleby},
        {"eq", t_eq},             {"equalto", t_eq},          {"==", t_eq},
        {"ne", t_ne},             {"!=", t_ne},               {"lt", t_lt},
        {"lessthan", t_lt},       {"<", t_lt},                {"le", t_le},
        {"<=", t_le},             {"gt", t_gt},               {"greaterthan", t_gt},
        {">", t_gt},              {"ge", t_ge},               {">=", t_ge},
        {"in", t_in},             {"sameas", t_sameas},       {"lower", t_lower},
        {"upper", t_upper},       {"escaped", t_escaped},     {"filter", t_filter},
        {"test", t_test},
    };
    return table;
}

} // namespace

const TestFn* find_test(std::string_view name) {
    const auto& table = test_table();
    auto it = table.find(name);
    return it == table.end() ? nullptr : &it->second;
}

bool test_exists(std::string_view name) { return find_test(name) != nullptr; }

} // namespace cflow::jinja
