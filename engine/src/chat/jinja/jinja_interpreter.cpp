// The Jinja interpreter's sandbox bookkeeping (steps, depth, output caps), its services to
// filters, tests and methods (calls, attribute and item access, iteration), the builtin globals
// and the statements. Expressions are evaluated in jinja_expressions.cpp.
#include "chat/jinja/jinja_interpreter.h"

#include <cmath>

namespace cflow::jinja {

const Value* Scope::lookup(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent.get()) {
        auto it = s->vars.find(name);
        if (it != s->vars.end()) return &it->second;
    }
    return nullptr;
}

void fail_undefined(const Value& v) {
    fail(v.undefined_hint().empty() ? std::string("undefined value used in an expression") : v.undefined_hint());
}

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
        fail_over_budget("template nesting/recursion deeper than " + std::to_string(in.limits_.max_depth) + " levels");
    }
}

namespace {

// Reading the clock costs ~20 ns; a step ~10-100 ns: every 4096 steps keeps it under 1%.
constexpr uint64_t kStepsPerClockCheck = 4096;

std::string mib_text(uint64_t bytes) {
    return bytes % (1u << 20) == 0 ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + " bytes";
}

} // namespace

void Interpreter::step() {
    if (++steps_ > limits_.max_steps) fail_over_budget("template exceeded " + std::to_string(limits_.max_steps) + " steps");
    if (steps_ >= next_clock_check_) check_clock();
}

void Interpreter::charge(uint64_t steps) {
    if (steps > limits_.max_steps || steps_ + steps > limits_.max_steps) {
        steps_ = limits_.max_steps;
        fail_over_budget("template exceeded " + std::to_string(limits_.max_steps) + " steps");
    }
    steps_ += steps;
    if (steps_ >= next_clock_check_) check_clock();
}

void Interpreter::check_clock() {
    next_clock_check_ = steps_ + kStepsPerClockCheck;
    if (limits_.max_wall_ms != 0 && std::chrono::steady_clock::now() > deadline_)
        fail_over_budget("template ran longer than " + std::to_string(limits_.max_wall_ms) + " ms");
}

void Interpreter::charge_allocation(uint64_t bytes) {
    if (bytes > limits_.max_allocated_bytes || allocated_bytes_ + bytes > limits_.max_allocated_bytes) {
        allocated_bytes_ = limits_.max_allocated_bytes;
        fail_over_budget("template built or copied more than " + mib_text(limits_.max_allocated_bytes) +
                         " of strings, lists and dicts");
    }
    allocated_bytes_ += bytes;
    charge(bytes / 1024);
}

uint64_t copy_bytes(const Value& v) {
    auto direct_bytes = [](const Value& item) -> uint64_t { return item.is_string() ? item.str().size() : 0; };
    uint64_t bytes = 0;
    switch (v.kind()) {
    case Value::Kind::String: return v.str().size();
    case Value::Kind::Array:
        bytes = v.arr().items.size() * sizeof(Value);
        for (const Value& item : v.arr().items) bytes += direct_bytes(item);
        return bytes;
    case Value::Kind::Object:
        bytes = v.obj().size() * 2 * sizeof(Value);
        for (const auto& [key, value] : v.obj().entries()) bytes += direct_bytes(key) + direct_bytes(value);
        return bytes;
    default: return 0;
    }
}

void Interpreter::charge_copy(const Value& v) { charge_allocation(copy_bytes(v)); }

void Interpreter::check_string(const std::string& s) {
    if (s.size() > limits_.max_output_bytes)
        fail_output_too_large(limits_.max_output_bytes);
    charge_bytes(s.size());
}

void Interpreter::write(std::string_view text) {
    std::string& out = out_stack_.back();
    if (text.size() > limits_.max_output_bytes || out.size() > limits_.max_output_bytes - text.size())
        fail_output_too_large(limits_.max_output_bytes);
    out.append(text);
}

std::string Interpreter::render(const Program& program, const ScopePtr& globals) {
    steps_ = 0;
    allocated_bytes_ = 0;
    next_clock_check_ = 0;
    deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(limits_.max_wall_ms);
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

namespace {

// A container a call or filter hands back that it was given is shared, not a new allocation.
bool is_one_of(const Value& result, const Value* input, const CallArgs& args) {
    const void* id = result.identity();
    if (!id) return false;
    if (input && input->identity() == id) return true;
    for (const Value& v : args.positional)
        if (v.identity() == id) return true;
    for (const auto& kv : args.keyword)
        if (kv.second.identity() == id) return true;
    return false;
}

} // namespace

Value Interpreter::call(const Value& callee, CallArgs& args) {
    if (callee.is_undefined()) fail_undefined(callee);
    if (!callee.is_callable()) fail("'" + type_name(callee) + "' object is not callable");
    Value result = callee.fn().fn(*this, args);
    // Strings are counted where every expression's value is (eval); containers here, since
    // dict(d, **x), items() and friends copy theirs.
    if (!result.is_string() && !is_one_of(result, nullptr, args)) charge_copy(result);
    return result;
}

Value Interpreter::apply_filter(const std::string& name, const Value& input, CallArgs& args) {
    const FilterFn* f = find_filter(name);
    if (!f) fail("No filter named '" + name + "'");
    Value result = (*f)(*this, input, args);
    if (!result.is_string() && !is_one_of(result, &input, args)) charge_copy(result);
    return result;
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
    if (limits_.immutable && modifies_container(obj, name))
        return Value::undefined("access to attribute '" + name + "' of '" + type_name(obj) + "' object is unsafe.");
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
        charge_copy(v);
        return v.arr().items;
    case Value::Kind::Object: {
        if (v.obj().flavor != ObjectData::Flavor::Dict) fail("'" + type_name(v) + "' object is not iterable");
        charge(v.obj().size());
        std::vector<Value> keys;
        keys.reserve(v.obj().size());
        for (const auto& entry : v.obj().entries()) keys.push_back(entry.first);
        charge_allocation(keys.size() * sizeof(Value));
        for (const Value& key : keys) charge_copy(key);
        return keys;
    }
    case Value::Kind::String: {
        std::vector<size_t> offsets = utf8_offsets(v.str());
        charge(offsets.size());
        charge_allocation(offsets.size() * (sizeof(Value) + sizeof(size_t)) + v.str().size());
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
// Statements

Interpreter::Flow Interpreter::exec_body(const Body& body, const ScopePtr& scope) {
    for (const auto& s : body) {
        Flow f = exec(*s, scope);
        if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s, const ScopePtr& scope) {
    return in_frame(s.pos, [&] { return exec_inner(s, scope); });
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
    charge_allocation(out.size());
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
