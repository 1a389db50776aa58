// The Jinja interpreter's expression evaluation (jinja_interpreter.h): the expression tree, call
// arguments and filter chains, slices, and Python's operator semantics (checked 64-bit integer
// arithmetic, floor division and modulo, comparisons, `in`). The statements, the sandbox
// bookkeeping and the services (calls, attribute and item access) are in jinja_interpreter.cpp.
#include <cmath>
#include <limits>

#include "chat/jinja/jinja_interpreter.h"

namespace cflow::jinja {
namespace {

[[noreturn]] void fail_overflow() { fail("integer overflow (values beyond 64 bits are not supported)"); }

int64_t add_int(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) fail_overflow();
    return r;
}

int64_t sub_int(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) fail_overflow();
    return r;
}

int64_t mul_int(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) fail_overflow();
    return r;
}

int64_t int_pow(int64_t base, int64_t exponent) {
    int64_t result = 1;
    while (exponent > 0) {
        if (exponent & 1) result = mul_int(result, base);
        exponent >>= 1;
        if (exponent > 0) base = mul_int(base, base);
    }
    return result;
}

// A slice bound that was given: a negative index counts from the end; one still outside
// [0, length) clamps to the end the step walks from or towards.
int64_t adjust_bound(int64_t index, int64_t length, int64_t step) {
    if (index < 0) {
        index += length;
        if (index < 0) index = step < 0 ? -1 : 0;
    } else if (index >= length) {
        index = step < 0 ? length - 1 : length;
    }
    return index;
}

// Python slice index normalization (PySlice_AdjustIndices).
struct SliceRange {
    int64_t start, stop, step;
};

SliceRange adjust_slice(int64_t length, const Value& start_v, const Value& stop_v, const Value& step_v) {
    auto present = [](const Value& v) { return !v.is_undefined() && !v.is_none(); };
    auto as_index = [](const Value& v) {
        if (!v.is_integral()) fail("slice indices must be integers or None, not " + type_name(v));
        return v.as_int();
    };
    int64_t step = present(step_v) ? as_index(step_v) : 1;
    if (step == 0) fail("slice step cannot be zero");
    const int64_t start = present(start_v) ? adjust_bound(as_index(start_v), length, step) : (step < 0 ? length - 1 : 0);
    const int64_t stop = present(stop_v) ? adjust_bound(as_index(stop_v), length, step) : (step < 0 ? -1 : length);
    return {start, stop, step};
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Expressions

Value Interpreter::eval(const Expr& e, const ScopePtr& scope) {
    return in_frame(e.pos, [&] {
        Value v = eval_inner(e, scope);
        // A string Value is held by value: every expression that yields one (a name, an
        // attribute, a concatenation) made a copy, and a loop of them is what goes quadratic.
        if (v.is_string()) charge_copy(v);
        return v;
    });
}

Value Interpreter::eval_inner(const Expr& e, const ScopePtr& scope) {
    switch (e.kind) {
    case ExprKind::Literal: return e.literal;
    case ExprKind::Name: {
        if (const Value* v = scope->lookup(e.name)) return *v;
        return Value::undefined("'" + e.name + "' is undefined");
    }
    case ExprKind::List:
    case ExprKind::Tuple: {
        std::vector<Value> items;
        items.reserve(e.items.size());
        for (const auto& item : e.items) items.push_back(eval(*item, scope));
        return e.kind == ExprKind::List ? Value::array(std::move(items)) : Value::tuple(std::move(items));
    }
    case ExprKind::Dict: {
        Value d = Value::object();
        for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
            Value key = eval(*e.items[i], scope);
            d.obj().set(key, eval(*e.items[i + 1], scope));
        }
        return d;
    }
    case ExprKind::GetAttr: return get_attr(eval(*e.a, scope), e.name);
    case ExprKind::GetItem: {
        Value obj = eval(*e.a, scope);
        return get_item(obj, eval(*e.b, scope));
    }
    case ExprKind::Slice: return eval_slice(e, scope);
    case ExprKind::Call: return eval_call(e, scope);
    case ExprKind::Filter: return eval_filter_chain(e, scope, nullptr);
    case ExprKind::Test: {
        Value v = eval(*e.a, scope);
        CallArgs args = eval_args(e, scope);
        return Value(apply_test(e.name, v, args) != e.negated);
    }
    case ExprKind::Unary: {
        Value v = eval(*e.a, scope);
        if (e.name == "not") return Value(!truthy(v));
        if (v.is_undefined()) fail_undefined(v);
        if (!v.is_number()) fail("bad operand type for unary " + e.name + ": '" + type_name(v) + "'");
        if (e.name == "+") return v.is_float() ? v : Value(v.as_int());
        if (v.is_float()) return Value(-v.as_double());
        if (v.as_int() == std::numeric_limits<int64_t>::min()) fail("integer overflow");
        return Value(-v.as_int());
    }
    case ExprKind::Binary: {
        Value l = eval(*e.a, scope);
        Value r = eval(*e.b, scope);
        return binary_op(e.name, l, r);
    }
    case ExprKind::And: {
        Value l = eval(*e.a, scope);
        if (!truthy(l)) return l;
        return eval(*e.b, scope);
    }
    case ExprKind::Or: {
        Value l = eval(*e.a, scope);
        if (truthy(l)) return l;
        return eval(*e.b, scope);
    }
    case ExprKind::Compare: {
        Value left = eval(*e.a, scope);
        for (size_t i = 0; i < e.ops.size(); ++i) {
            Value right = eval(*e.items[i], scope);
            if (!compare_op(e.ops[i], left, right)) return Value(false);
            left = std::move(right);
        }
        return Value(true);
    }
    case ExprKind::CondExpr:
        if (truthy(eval(*e.a, scope))) return eval(*e.b, scope);
        if (e.c) return eval(*e.c, scope);
        return Value::undefined("the conditional expression had no else branch");
    }
    fail("unknown expression kind");
}

CallArgs Interpreter::eval_args(const Expr& e, const ScopePtr& scope) {
    CallArgs args;
    for (const auto& item : e.items) args.positional.push_back(eval(*item, scope));
    if (e.star_args) {
        Value extra = eval(*e.star_args, scope);
        for (Value& v : iterate(extra)) args.positional.push_back(std::move(v));
    }
    for (const auto& [key, value] : e.kwargs) args.keyword.emplace_back(key, eval(*value, scope));
    if (e.star_kwargs) {
        Value extra = eval(*e.star_kwargs, scope);
        if (!extra.is_object()) fail("argument after ** must be a mapping, not " + type_name(extra));
        for (const auto& [key, value] : extra.obj().entries()) {
            if (!key.is_string()) fail("keywords must be strings");
            args.keyword.emplace_back(key.str(), value);
        }
    }
    return args;
}

Value Interpreter::eval_call(const Expr& e, const ScopePtr& scope) {
    Value callee = eval(*e.a, scope);
    CallArgs args = eval_args(e, scope);
    return call(callee, args);
}

Value Interpreter::eval_filter_chain(const Expr& e, const ScopePtr& scope, const Value* block_input) {
    Value input;
    if (e.a)
        input = e.a->kind == ExprKind::Filter && block_input ? eval_filter_chain(*e.a, scope, block_input)
                                                             : eval(*e.a, scope);
    else if (block_input)
        input = *block_input;
    CallArgs args = eval_args(e, scope);
    return apply_filter(e.name, input, args);
}

Value Interpreter::eval_slice(const Expr& e, const ScopePtr& scope) {
    Value obj = eval(*e.a, scope);
    Value bounds[3];
    for (size_t i = 0; i < 3; ++i)
        if (e.items[i]) bounds[i] = eval(*e.items[i], scope);
    if (obj.is_undefined()) return obj;
    if (obj.is_array()) {
        const auto& items = obj.arr().items;
        SliceRange r = adjust_slice(static_cast<int64_t>(items.size()), bounds[0], bounds[1], bounds[2]);
        std::vector<Value> out;
        for (int64_t i = r.start; r.step > 0 ? i < r.stop : i > r.stop; i += r.step)
            out.push_back(items[static_cast<size_t>(i)]);
        charge(out.size());
        Value result = Value::array(std::move(out));
        result.arr().is_tuple = obj.arr().is_tuple;
        charge_copy(result);
        return result;
    }
    if (obj.is_string()) {
        const std::string& s = obj.str();
        std::vector<size_t> offsets = utf8_offsets(s);
        SliceRange r = adjust_slice(static_cast<int64_t>(offsets.size()) - 1, bounds[0], bounds[1], bounds[2]);
        std::string out;
        if (r.step == 1) {
            if (r.start < r.stop)
                out = s.substr(offsets[static_cast<size_t>(r.start)],
                               offsets[static_cast<size_t>(r.stop)] - offsets[static_cast<size_t>(r.start)]);
        } else {
            for (int64_t i = r.start; r.step > 0 ? i < r.stop : i > r.stop; i += r.step) {
                size_t k = static_cast<size_t>(i);
                out.append(s, offsets[k], offsets[k + 1] - offsets[k]);
            }
        }
        charge_bytes(out.size());
        return Value(std::move(out));
    }
    fail("'" + type_name(obj) + "' object is not subscriptable");
}

Value Interpreter::binary_op(const std::string& op, const Value& l, const Value& r) {
    if (op == "~") {
        std::string out = str(l);
        out += str(r);
        check_string(out);
        return Value(std::move(out));
    }
    if (l.is_undefined()) fail_undefined(l);
    if (r.is_undefined()) fail_undefined(r);
    auto type_error = [&]() -> Value {
        fail("unsupported operand type(s) for " + op + ": '" + type_name(l) + "' and '" + type_name(r) + "'");
    };
    bool numbers = l.is_number() && r.is_number();
    bool floats = numbers && (l.is_float() || r.is_float());
    if (op == "+") {
        if (numbers) {
            if (floats) return Value(l.as_double() + r.as_double());
            return Value(add_int(l.as_int(), r.as_int()));
        }
        if (l.is_string() && r.is_string()) {
            if (l.str().size() + r.str().size() > limits_.max_output_bytes)
                fail_output_too_large(limits_.max_output_bytes);
            std::string out = l.str() + r.str();
            charge_bytes(out.size());
            return Value(std::move(out));
        }
        if (l.is_array() && r.is_array() && l.arr().is_tuple == r.arr().is_tuple) {
            charge(l.arr().items.size() + r.arr().items.size());
            charge_allocation(copy_bytes(l) + copy_bytes(r));  // before copying, not after
            std::vector<Value> items = l.arr().items;
            items.insert(items.end(), r.arr().items.begin(), r.arr().items.end());
            Value out = Value::array(std::move(items));
            out.arr().is_tuple = l.arr().is_tuple;
            return out;
        }
        return type_error();
    }
    if (op == "-") {
        if (!numbers) return type_error();
        if (floats) return Value(l.as_double() - r.as_double());
        return Value(sub_int(l.as_int(), r.as_int()));
    }
    if (op == "*") {
        if (numbers) {
            if (floats) return Value(l.as_double() * r.as_double());
            return Value(mul_int(l.as_int(), r.as_int()));
        }
        const Value* seq = l.is_integral() ? &r : &l;
        const Value* count_v = l.is_integral() ? &l : &r;
        if (!count_v->is_integral() || !(seq->is_string() || seq->is_array())) return type_error();
        int64_t count = std::max<int64_t>(0, count_v->as_int());
        if (seq->is_string()) {
            uint64_t total = static_cast<uint64_t>(count) * seq->str().size();
            if (count != 0 && total / static_cast<uint64_t>(count) != seq->str().size()) total = UINT64_MAX;
            if (total > limits_.max_output_bytes)
                fail_output_too_large(limits_.max_output_bytes);
            charge_bytes(static_cast<size_t>(total));
            std::string out;
            out.reserve(static_cast<size_t>(total));
            for (int64_t i = 0; i < count; ++i) out += seq->str();
            return Value(std::move(out));
        }
        uint64_t total = static_cast<uint64_t>(count) * seq->arr().items.size();
        if (count != 0 && total / static_cast<uint64_t>(count) != seq->arr().items.size()) total = UINT64_MAX;
        charge(total);
        // Counted before the copies are made: [four_mb_string] * 1000 would be 4 GB.
        const uint64_t one_copy = copy_bytes(*seq);
        charge_allocation(count != 0 && one_copy > UINT64_MAX / static_cast<uint64_t>(count)
                              ? UINT64_MAX
                              : one_copy * static_cast<uint64_t>(count));
        std::vector<Value> items;
        items.reserve(static_cast<size_t>(total));
        for (int64_t i = 0; i < count; ++i) items.insert(items.end(), seq->arr().items.begin(), seq->arr().items.end());
        Value out = Value::array(std::move(items));
        out.arr().is_tuple = seq->arr().is_tuple;
        return out;
    }
    if (op == "/") {
        if (!numbers) return type_error();
        if (r.as_double() == 0.0) fail("division by zero");
        return Value(l.as_double() / r.as_double());
    }
    if (op == "//" || op == "%") {
        if (op == "%" && l.is_string()) return Value(percent_format(*this, l.str(), r));
        if (!numbers) return type_error();
        if (r.as_double() == 0.0) fail(floats ? "float division by zero" : "integer division or modulo by zero");
        if (floats) {
            double a = l.as_double(), b = r.as_double();
            if (op == "//") return Value(std::floor(a / b));
            double m = std::fmod(a, b);
            if (m != 0.0 && ((m < 0) != (b < 0))) m += b;
            return Value(m);
        }
        int64_t a = l.as_int(), b = r.as_int();
        if (a == std::numeric_limits<int64_t>::min() && b == -1) {
            if (op == "%") return Value(static_cast<int64_t>(0));
            fail("integer overflow");
        }
        int64_t q = a / b, m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) {
            --q;
            m += b;
        }
        return op == "//" ? Value(q) : Value(m);
    }
    if (op == "**") {
        if (!numbers) return type_error();
        if (!floats && r.as_int() >= 0) return Value(int_pow(l.as_int(), r.as_int()));
        if (l.as_double() == 0.0 && r.as_double() < 0) fail("0.0 cannot be raised to a negative power");
        return Value(std::pow(l.as_double(), r.as_double()));
    }
    fail("unknown operator " + op);
}

bool Interpreter::contains(const Value& container, const Value& item) {
    switch (container.kind()) {
    case Value::Kind::String:
        if (!item.is_string()) fail("'in <string>' requires string as left operand, not " + type_name(item));
        charge_bytes(container.str().size());
        return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::Array:
        charge(container.arr().items.size());
        for (const Value& v : container.arr().items)
            if (equals(v, item)) return true;
        return false;
    case Value::Kind::Object:
        if (item.is_string() || item.is_number() || item.is_none() || (item.is_array() && item.arr().is_tuple))
            return container.obj().find(item) != nullptr;
        fail("unhashable type: '" + type_name(item) + "'");
    case Value::Kind::Undefined: return false;  // jinja2: Undefined iterates as empty, so `x in undefined` is False
    default: fail("argument of type '" + type_name(container) + "' is not iterable");
    }
}

bool Interpreter::compare_op(const std::string& op, const Value& l, const Value& r) {
    if (op == "==") return equals(l, r);
    if (op == "!=") return !equals(l, r);
    if (op == "in") return contains(r, l);
    if (op == "notin") return !contains(r, l);
    if (l.is_undefined()) fail_undefined(l);
    if (r.is_undefined()) fail_undefined(r);
    int c;
    try {
        c = compare(l, r);
    } catch (JinjaError& err) {
        if (err.message.rfind("'<'", 0) == 0) err.message.replace(1, 1, op);  // the generic message names '<'
        throw;
    }
    if (op == "<") return c < 0;
    if (op == ">") return c > 0;
    if (op == "<=") return c <= 0;
    return c >= 0;
}

} // namespace cflow::jinja
