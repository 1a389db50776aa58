#include "chat/jinja/jinja_interpreter.h"

#include <cmath>
#include <limits>

namespace cflow::jinja {

const Value* Scope::lookup(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent.get()) {
        auto it = s->vars.find(name);
        if (it != s->vars.end()) return &it->second;
    }
    return nullptr;
}

namespace {

[[noreturn]] void fail_undefined(const Value& v) {
    fail(v.undefined_hint().empty() ? std::string("undefined value used in an expression") : v.undefined_hint());
}

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
    int64_t start, stop;
    if (!present(start_v)) {
        start = step < 0 ? length - 1 : 0;
    } else {
        start = as_index(start_v);
        if (start < 0) {
            start += length;
            if (start < 0) start = step < 0 ? -1 : 0;
        } else if (start >= length) {
            start = step < 0 ? length - 1 : length;
        }
    }
    if (!present(stop_v)) {
        stop = step < 0 ? -1 : length;
    } else {
        stop = as_index(stop_v);
        if (stop < 0) {
            stop += length;
            if (stop < 0) stop = step < 0 ? -1 : 0;
        } else if (stop >= length) {
            stop = step < 0 ? length - 1 : length;
        }
    }
    return {start, stop, step};
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Builtin globals

ScopePtr make_builtin_scope() {
    auto scope = std::make_shared<Scope>();
    scope->vars["range"] = Value::callable("range", [](Interpreter& in, CallArgs& args) {
        args.expect_at_most("range", 3, {});
        std::vector<int64_t> n;
        for (const Value& v : args.positional) {
            if (!v.is_integral()) fail("range() expects integer arguments, got " + type_name(v));
            n.push_back(v.as_int());
        }
        if (n.empty()) fail("range expected at least 1 argument, got 0");
        int64_t start = n.size() == 1 ? 0 : n[0];
        int64_t stop = n.size() == 1 ? n[0] : n[1];
        int64_t step = n.size() == 3 ? n[2] : 1;
        if (step == 0) fail("range() arg 3 must not be zero");
        // Size first, so range(100000000) fails on the step budget before allocating.
        long double span = step > 0 ? static_cast<long double>(stop) - start : static_cast<long double>(start) - stop;
        long double count_ld = span <= 0 ? 0 : std::ceil(span / std::fabs(static_cast<long double>(step)));
        uint64_t count = static_cast<uint64_t>(count_ld);
        in.charge(count);
        std::vector<Value> items;
        items.reserve(static_cast<size_t>(count));
        int64_t v = start;
        for (uint64_t i = 0; i < count; ++i) {
            items.emplace_back(v);
            if (i + 1 < count) v += step;  // never steps past the last value, so never overflows
        }
        return Value::array(std::move(items));
    });
    scope->vars["namespace"] = Value::callable("namespace", [](Interpreter&, CallArgs& args) {
        Value ns = Value::namespace_object();
        for (const Value& init : args.positional) {
            if (!init.is_object()) fail("namespace() positional argument must be a mapping");
            for (const auto& [key, value] : init.obj().entries()) ns.obj().set(key, value);
        }
        for (const auto& [key, value] : args.keyword) ns.obj().set(Value(key), value);
        return ns;
    });
    scope->vars["dict"] = Value::callable("dict", [](Interpreter& in, CallArgs& args) {
        Value d = Value::object();
        for (const Value& init : args.positional) {
            if (init.is_object()) {
                for (const auto& [key, value] : init.obj().entries()) d.obj().set(key, value);
            } else {
                for (const Value& pair : in.iterate(init)) {
                    std::vector<Value> kv = in.iterate(pair);
                    if (kv.size() != 2) fail("dictionary update sequence element has length " + std::to_string(kv.size()) + "; 2 is required");
                    d.obj().set(kv[0], kv[1]);
                }
            }
        }
        for (const auto& [key, value] : args.keyword) d.obj().set(Value(key), value);
        return d;
    });
    scope->vars["joiner"] = Value::callable("joiner", [](Interpreter&, CallArgs& args) {
        args.expect_at_most("joiner", 1, {"sep"});
        Value sep = args.get_or(0, "sep", Value(", "));
        auto used = std::make_shared<bool>(false);
        return Value::callable("joiner", [sep, used](Interpreter& in, CallArgs&) {
            if (!*used) {
                *used = true;
                return Value("");
            }
            return Value(in.str(sep));
        });
    });
    return scope;
}

// ---------------------------------------------------------------------------------------------
// Bookkeeping

Interpreter::DepthGuard::DepthGuard(Interpreter& interpreter) : in(interpreter) {
    if (++in.depth_ > in.limits_.max_depth) {
        --in.depth_;
        fail("template nesting/recursion deeper than " + std::to_string(in.limits_.max_depth) + " levels");
    }
}

void Interpreter::step() {
    if (++steps_ > limits_.max_steps) fail("template exceeded " + std::to_string(limits_.max_steps) + " steps");
}

void Interpreter::charge(uint64_t steps) {
    if (steps > limits_.max_steps || steps_ + steps > limits_.max_steps) {
        steps_ = limits_.max_steps;
        fail("template exceeded " + std::to_string(limits_.max_steps) + " steps");
    }
    steps_ += steps;
}

void Interpreter::check_string(const std::string& s) {
    if (s.size() > limits_.max_output_bytes)
        fail("output larger than " + std::to_string(limits_.max_output_bytes) + " bytes");
    charge_bytes(s.size());
}

void Interpreter::write(std::string_view text) {
    std::string& out = out_stack_.back();
    if (text.size() > limits_.max_output_bytes || out.size() > limits_.max_output_bytes - text.size())
        fail("output larger than " + std::to_string(limits_.max_output_bytes) + " bytes");
    out.append(text);
}

std::string Interpreter::render(const Program& program, const ScopePtr& globals) {
    steps_ = 0;
    depth_ = 0;
    out_stack_.clear();
    out_stack_.emplace_back();
    auto root = std::make_shared<Scope>(globals);
    macro_scopes_.clear();
    // Macros capture their defining scope, which holds the macro: clearing those scopes after
    // the render breaks the reference cycles.
    auto release_scopes = [&]() {
        root->vars.clear();
        for (const ScopePtr& s : macro_scopes_) s->vars.clear();
        macro_scopes_.clear();
    };
    try {
        exec_body(program.body, root);
    } catch (...) {
        release_scopes();
        throw;
    }
    release_scopes();
    std::string out = std::move(out_stack_.back());
    out_stack_.clear();
    return out;
}

// ---------------------------------------------------------------------------------------------
// Services

Value Interpreter::call(const Value& callee, CallArgs& args) {
    if (callee.is_callable()) return callee.fn().fn(*this, args);
    if (callee.is_undefined()) fail_undefined(callee);
    fail("'" + type_name(callee) + "' object is not callable");
}

Value Interpreter::apply_filter(const std::string& name, const Value& input, CallArgs& args) {
    const FilterFn* f = find_filter(name);
    if (!f) fail("No filter named '" + name + "'");
    return (*f)(*this, input, args);
}

bool Interpreter::apply_test(const std::string& name, const Value& value, CallArgs& args) {
    const TestFn* t = find_test(name);
    if (!t) fail("No test named '" + name + "'");
    return (*t)(*this, value, args);
}

Value Interpreter::get_attr(const Value& obj, const std::string& name) {
    switch (obj.kind()) {
    case Value::Kind::Object: {
        const ObjectData& o = obj.obj();
        if (o.flavor == ObjectData::Flavor::Dict && has_method(obj, name)) break;
        if (const Value* v = o.find(std::string_view(name))) return *v;
        return Value::undefined("'" + type_name(obj) + " object' has no attribute '" + name + "'");
    }
    case Value::Kind::Array:
    case Value::Kind::String:
        if (has_method(obj, name)) break;
        return Value::undefined("'" + type_name(obj) + " object' has no attribute '" + name + "'");
    case Value::Kind::Undefined:
        // Lenient chaining (like ChainableUndefined): `a.b.c is defined` works when a is missing.
        return Value::undefined(obj.undefined_hint());
    default: return Value::undefined("'" + type_name(obj) + " object' has no attribute '" + name + "'");
    }
    Value self = obj;
    return Value::callable(name, [self, name](Interpreter& in, CallArgs& args) {
        return call_method(in, self, name, args);
    });
}

Value Interpreter::get_item(const Value& obj, const Value& key) {
    switch (obj.kind()) {
    case Value::Kind::Array:
    case Value::Kind::String:
        if (key.is_integral()) {
            int64_t index = key.as_int();
            if (obj.is_array()) {
                const auto& items = obj.arr().items;
                int64_t n = static_cast<int64_t>(items.size());
                if (index < 0) index += n;
                if (index < 0 || index >= n) return Value::undefined("list index out of range");
                return items[static_cast<size_t>(index)];
            }
            std::vector<size_t> offsets = utf8_offsets(obj.str());
            int64_t n = static_cast<int64_t>(offsets.size()) - 1;
            if (index < 0) index += n;
            if (index < 0 || index >= n) return Value::undefined("string index out of range");
            size_t i = static_cast<size_t>(index);
            return Value(obj.str().substr(offsets[i], offsets[i + 1] - offsets[i]));
        }
        if (key.is_string()) return get_attr(obj, key.str());
        return Value::undefined("invalid index of type " + type_name(key));
    case Value::Kind::Object: {
        const Value* v = nullptr;
        if (key.is_string() || key.is_number() || key.is_none() || (key.is_array() && key.arr().is_tuple))
            v = obj.obj().find(key);
        if (v) return *v;
        if (key.is_string() && obj.obj().flavor == ObjectData::Flavor::Dict && has_method(obj, key.str()))
            return get_attr(obj, key.str());
        return Value::undefined("'" + type_name(obj) + " object' has no attribute '" + (key.is_string() ? key.str() : repr(key, 256)) + "'");
    }
    case Value::Kind::Undefined: return Value::undefined(obj.undefined_hint());
    default: return Value::undefined("'" + type_name(obj) + "' object is not subscriptable");
    }
}

Value Interpreter::get_attr_path(const Value& obj, const std::string& path) {
    Value current = obj;
    size_t begin = 0;
    while (true) {
        size_t dot = path.find('.', begin);
        std::string part = path.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
        bool numeric = !part.empty() && part.size() <= 18 && part.find_first_not_of("0123456789") == std::string::npos;
        current = numeric && current.is_array() ? get_item(current, Value(static_cast<int64_t>(std::stoll(part))))
                                                : get_item(current, Value(part));
        if (dot == std::string::npos) return current;
        begin = dot + 1;
    }
}

std::vector<Value> Interpreter::iterate(const Value& v) {
    switch (v.kind()) {
    case Value::Kind::Array:
        charge(v.arr().items.size());
        return v.arr().items;
    case Value::Kind::Object: {
        if (v.obj().flavor != ObjectData::Flavor::Dict) fail("'" + type_name(v) + "' object is not iterable");
        charge(v.obj().size());
        std::vector<Value> keys;
        keys.reserve(v.obj().size());
        for (const auto& entry : v.obj().entries()) keys.push_back(entry.first);
        return keys;
    }
    case Value::Kind::String: {
        std::vector<size_t> offsets = utf8_offsets(v.str());
        charge(offsets.size());
        std::vector<Value> chars;
        chars.reserve(offsets.size());
        for (size_t i = 0; i + 1 < offsets.size(); ++i)
            chars.emplace_back(v.str().substr(offsets[i], offsets[i + 1] - offsets[i]));
        return chars;
    }
    case Value::Kind::Undefined: return {};  // jinja2's Undefined iterates as empty
    default: fail("'" + type_name(v) + "' object is not iterable");
    }
}

// ---------------------------------------------------------------------------------------------
// Expressions

Value Interpreter::eval(const Expr& e, const ScopePtr& scope) {
    try {
        step();
        DepthGuard guard(*this);
        return eval_inner(e, scope);
    } catch (JinjaError& err) {
        if (!err.located) {
            err.message = located(e.pos, err.message);
            err.located = true;
        }
        throw;
    }
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
                fail("output larger than " + std::to_string(limits_.max_output_bytes) + " bytes");
            std::string out = l.str() + r.str();
            charge_bytes(out.size());
            return Value(std::move(out));
        }
        if (l.is_array() && r.is_array() && l.arr().is_tuple == r.arr().is_tuple) {
            charge(l.arr().items.size() + r.arr().items.size());
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
                fail("output larger than " + std::to_string(limits_.max_output_bytes) + " bytes");
            charge_bytes(static_cast<size_t>(total));
            std::string out;
            out.reserve(static_cast<size_t>(total));
            for (int64_t i = 0; i < count; ++i) out += seq->str();
            return Value(std::move(out));
        }
        uint64_t total = static_cast<uint64_t>(count) * seq->arr().items.size();
        if (count != 0 && total / static_cast<uint64_t>(count) != seq->arr().items.size()) total = UINT64_MAX;
        charge(total);
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

// ---------------------------------------------------------------------------------------------
// Statements

Interpreter::Flow Interpreter::exec_body(const Body& body, const ScopePtr& scope) {
    for (const auto& s : body) {
        Flow f = exec(*s, scope);
        if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s, const ScopePtr& scope) {
    try {
        step();
        DepthGuard guard(*this);
        return exec_inner(s, scope);
    } catch (JinjaError& err) {
        if (!err.located) {
            err.message = located(s.pos, err.message);
            err.located = true;
        }
        throw;
    }
}

std::string Interpreter::capture(const Body& body, const ScopePtr& scope) {
    out_stack_.emplace_back();
    try {
        exec_body(body, scope);
    } catch (...) {
        out_stack_.pop_back();
        throw;
    }
    std::string out = std::move(out_stack_.back());
    out_stack_.pop_back();
    return out;
}

void Interpreter::assign(const Target& target, const Value& value, const ScopePtr& scope) {
    if (target.attr_object) {
        Value obj = eval(*target.attr_object, scope);
        if (!obj.is_object() || obj.obj().flavor != ObjectData::Flavor::Namespace)
            fail("cannot assign attribute on non-namespace object");
        obj.obj().set(Value(target.names[0]), value);
        return;
    }
    if (!target.is_tuple) {
        scope->vars[target.names[0]] = value;
        return;
    }
    std::vector<Value> items = iterate(value);
    if (items.size() != target.names.size())
        fail(items.size() > target.names.size()
                 ? "too many values to unpack (expected " + std::to_string(target.names.size()) + ")"
                 : "not enough values to unpack (expected " + std::to_string(target.names.size()) + ", got " +
                       std::to_string(items.size()) + ")");
    for (size_t i = 0; i < items.size(); ++i) scope->vars[target.names[i]] = items[i];
}

void Interpreter::bind_params(const Stmt& s, const std::string& display_name, CallArgs& args, const ScopePtr& scope) {
    const size_t n = s.params.size();
    std::vector<const Value*> bound(n, nullptr);
    for (size_t i = 0; i < args.positional.size() && i < n; ++i) bound[i] = &args.positional[i];
    if (args.positional.size() > n && !s.uses_varargs && s.kind == StmtKind::Macro)
        fail("macro '" + display_name + "' takes not more than " + std::to_string(n) + " argument(s)");
    Value kwargs = Value::object();
    for (const auto& [key, value] : args.keyword) {
        if (key == "caller" && s.kind == StmtKind::Macro) {
            scope->vars["caller"] = value;
            continue;
        }
        size_t index = n;
        for (size_t i = 0; i < n; ++i)
            if (s.params[i].name == key) index = i;
        if (index < n) {
            if (bound[index] && index < args.positional.size())
                fail("macro '" + display_name + "' got multiple values for argument '" + key + "'");
            bound[index] = &value;
        } else if (s.uses_kwargs || s.kind != StmtKind::Macro) {
            kwargs.obj().set(Value(key), value);
        } else {
            fail("macro '" + display_name + "' takes no keyword argument '" + key + "'");
        }
    }
    for (size_t i = 0; i < n; ++i) {
        const MacroParam& p = s.params[i];
        if (bound[i])
            scope->vars[p.name] = *bound[i];
        else if (p.default_value)
            scope->vars[p.name] = eval(*p.default_value, scope);  // fresh per call, sees earlier params
        else
            scope->vars[p.name] = Value::undefined("parameter '" + p.name + "' was not provided");
    }
    std::vector<Value> extra;
    for (size_t i = n; i < args.positional.size(); ++i) extra.push_back(args.positional[i]);
    scope->vars["varargs"] = Value::tuple(std::move(extra));
    scope->vars["kwargs"] = kwargs;
}

Value Interpreter::make_macro(const Stmt& s, const ScopePtr& scope) {
    const Stmt* macro = &s;
    // The closure holds its defining scope; render() clears the root scope afterwards to break
    // the scope -> macro -> scope cycle.
    return Value::callable(s.text, [macro, scope](Interpreter& in, CallArgs& args) {
        DepthGuard guard(in);
        auto call_scope = std::make_shared<Scope>(scope);
        in.bind_params(*macro, macro->text, args, call_scope);
        return Value(in.capture(macro->body, call_scope));
    });
}

Interpreter::Flow Interpreter::exec_inner(const Stmt& s, const ScopePtr& scope) {
    switch (s.kind) {
    case StmtKind::Text: write(s.text); return Flow::Normal;
    case StmtKind::Output: {
        Value v = eval(*s.expr, scope);
        if (v.is_string())
            write(v.str());
        else
            write(str(v));
        return Flow::Normal;
    }
    case StmtKind::If:
        for (const auto& [cond, body] : s.branches)
            if (truthy(eval(*cond, scope))) return exec_body(body, scope);
        return exec_body(s.else_body, scope);
    case StmtKind::For: return exec_for(s, scope);
    case StmtKind::Set: assign(s.target, eval(*s.expr, scope), scope); return Flow::Normal;
    case StmtKind::SetBlock: {
        Value text(capture(s.body, scope));
        if (s.expr) text = eval_filter_chain(*s.expr, scope, &text);
        assign(s.target, text, scope);
        return Flow::Normal;
    }
    case StmtKind::Macro:
        scope->vars[s.text] = make_macro(s, scope);
        macro_scopes_.push_back(scope);
        return Flow::Normal;
    case StmtKind::CallBlock: {
        const Stmt* block = &s;
        Value callee = eval(*s.expr->a, scope);
        CallArgs args = eval_args(*s.expr, scope);
        args.keyword.emplace_back("caller", Value::callable("caller", [block, scope](Interpreter& in, CallArgs& a) {
            DepthGuard guard(in);
            auto caller_scope = std::make_shared<Scope>(scope);
            in.bind_params(*block, "caller", a, caller_scope);
            return Value(in.capture(block->body, caller_scope));
        }));
        Value result = call(callee, args);
        write(str(result));
        return Flow::Normal;
    }
    case StmtKind::FilterBlock: {
        Value text(capture(s.body, scope));
        write(str(eval_filter_chain(*s.expr, scope, &text)));
        return Flow::Normal;
    }
    case StmtKind::Break: return Flow::Break;
    case StmtKind::Continue: return Flow::Continue;
    case StmtKind::With: {
        auto inner = std::make_shared<Scope>(scope);
        for (size_t i = 0; i < s.with_targets.size(); ++i) assign(s.with_targets[i], eval(*s.with_values[i], scope), inner);
        exec_body(s.body, inner);
        return Flow::Normal;
    }
    case StmtKind::Scope: return exec_body(s.body, scope);
    }
    return Flow::Normal;
}

Interpreter::Flow Interpreter::exec_for(const Stmt& s, const ScopePtr& scope) {
    std::vector<Value> items = iterate(eval(*s.expr, scope));
    if (s.cond) {
        // jinja2 filters before counting, so loop.index/length see only the kept items.
        std::vector<Value> kept;
        for (Value& item : items) {
            auto probe = std::make_shared<Scope>(scope);
            assign(s.target, item, probe);
            if (truthy(eval(*s.cond, probe))) kept.push_back(std::move(item));
        }
        items = std::move(kept);
    }
    if (items.empty()) return exec_body(s.else_body, scope);
    const size_t n = items.size();
    const int64_t length = static_cast<int64_t>(n);
    // One loop object per loop, updated in place each iteration (jinja2's LoopContext is
    // likewise a single mutable object).
    enum Slot : size_t { kIndex, kIndex0, kRevindex, kRevindex0, kFirst, kLast, kPrevitem, kNextitem, kSlotCount };
    static const char* const kSlotNames[kSlotCount] = {"index", "index0", "revindex", "revindex0",
                                                       "first", "last",   "previtem", "nextitem"};
    Value loop = Value::attrs_object();
    ObjectData& o = loop.obj();
    for (const char* name : kSlotNames) o.set(Value(name), Value::undefined("'loop' has no attribute '" + std::string(name) + "'"));
    o.set(Value("length"), Value(length));
    o.set(Value("depth"), Value(1));
    o.set(Value("depth0"), Value(0));
    auto position = std::make_shared<size_t>(0);
    o.set(Value("cycle"), Value::callable("cycle", [position](Interpreter&, CallArgs& args) {
        if (args.positional.empty()) fail("no items for cycling given");
        return args.positional[*position % args.positional.size()];
    }));
    for (size_t i = 0; i < n; ++i) {
        auto iter_scope = std::make_shared<Scope>(scope);
        assign(s.target, items[i], iter_scope);
        const int64_t index = static_cast<int64_t>(i);
        *position = i;
        o.value_at(kIndex) = Value(index + 1);
        o.value_at(kIndex0) = Value(index);
        o.value_at(kRevindex) = Value(length - index);
        o.value_at(kRevindex0) = Value(length - index - 1);
        o.value_at(kFirst) = Value(i == 0);
        o.value_at(kLast) = Value(i + 1 == n);
        o.value_at(kPrevitem) = i > 0 ? items[i - 1] : Value::undefined("there is no previous item");
        o.value_at(kNextitem) = i + 1 < n ? items[i + 1] : Value::undefined("there is no next item");
        iter_scope->vars["loop"] = loop;
        if (exec_body(s.body, iter_scope) == Flow::Break) break;
    }
    return Flow::Normal;
}

} // namespace cflow::jinja
