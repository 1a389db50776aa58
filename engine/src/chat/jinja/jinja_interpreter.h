#pragma once
// Tree-walking interpreter for the Jinja AST with a sandbox: every evaluated node and statement
// costs a step, bulk operations (range, list concatenation, long strings) cost proportionally,
// every string, list and dict the render builds or copies counts against an allocation budget
// (a step budget alone lets `dict(d, **x)` in a loop go quadratic, and a list of 4 MB strings
// reach gigabytes), each output buffer and string value is capped, the evaluation depth (macro
// recursion, nested expressions) is bounded, and an optional wall-clock limit backs them all, so
// hostile templates fail with an error instead of hanging, swapping or overflowing the stack.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "chat/jinja/jinja_parser.h"
#include "chat/jinja/jinja_value.h"

namespace cflow::jinja {

struct Limits {
    uint64_t max_steps = 5'000'000;
    size_t max_output_bytes = 4u << 20;
    int max_depth = 200;  // nested evaluation frames (expressions, statements, macro calls)
    // Bytes of the strings, list slots and dict entries the render creates or copies, summed over
    // the whole render (not only what is alive at once, which this bounds from above).
    uint64_t max_allocated_bytes = 256ull << 20;
    uint32_t max_wall_ms = 0;  // 0: no time limit
    // jinja2's ImmutableSandboxedEnvironment (transformers): the list and dict methods that modify
    // their object are unsafe attributes, undefined, and calling one fails. false: a plain
    // jinja2 Environment (and llama.cpp's minja), where they work.
    bool immutable = true;
};

struct Scope {
    std::shared_ptr<Scope> parent;
    std::unordered_map<std::string, Value> vars;

    explicit Scope(std::shared_ptr<Scope> parent_scope = nullptr) : parent(std::move(parent_scope)) {}
    const Value* lookup(const std::string& name) const;
};
using ScopePtr = std::shared_ptr<Scope>;

// Bytes a copy of v allocates: a string's bytes, or a container's slots plus the bytes of the
// strings directly in it (nested containers are shared by reference, not copied).
uint64_t copy_bytes(const Value& v);

// A scope holding jinja2's builtin globals: range, namespace, dict, joiner.
ScopePtr make_builtin_scope();

using FilterFn = Value (*)(Interpreter&, const Value& input, CallArgs& args);
using TestFn = bool (*)(Interpreter&, const Value& value, CallArgs& args);
const FilterFn* find_filter(std::string_view name);  // jinja_filters.cpp
const TestFn* find_test(std::string_view name);      // jinja_tests.cpp
// Python methods of str / list / dict (jinja_methods.cpp).
bool has_method(const Value& self, std::string_view name);
// jinja2's modifies_known_mutable() (3.1.5 and later): list append/clear/extend/insert/pop/
// remove/reverse/sort, dict clear/pop/popitem/setdefault/update.
bool modifies_container(const Value& self, std::string_view name);
Value call_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args);

// Fails with the undefined value's hint (which name was missing), or a generic message without one.
[[noreturn]] void fail_undefined(const Value& v);

// Python's `str % args` (printf-style; args is a tuple, a mapping or a single value).
std::string percent_format(Interpreter& in, const std::string& format, const Value& args);
// JSON text -> Value (dict order kept); fails with "invalid JSON: ..." (jinja_filters.cpp).
Value parse_json_value(std::string_view text);

class Interpreter {
public:
    explicit Interpreter(const Limits& limits) : limits_(limits) {}

    // Renders the program with `globals` as the outermost scope. Throws JinjaError.
    std::string render(const Program& program, const ScopePtr& globals);

    // ---- services for filters, tests, methods and globals ----
    void charge(uint64_t steps);
    void charge_bytes(size_t bytes) { charge(bytes / 1024); }
    // Counts `bytes` newly allocated against the allocation budget (and bytes / 1024 steps).
    void charge_allocation(uint64_t bytes);
    // Counts a fresh copy of v (copy_bytes) against the allocation budget.
    void charge_copy(const Value& v);
    size_t max_bytes() const { return limits_.max_output_bytes; }
    std::string str(const Value& v) const { return to_str(v, limits_.max_output_bytes); }
    // Fails when a produced string is over the size limit; charges its length.
    void check_string(const std::string& s);
    Value call(const Value& callee, CallArgs& args);
    Value apply_filter(const std::string& name, const Value& input, CallArgs& args);
    bool apply_test(const std::string& name, const Value& value, CallArgs& args);
    Value get_attr(const Value& obj, const std::string& name);
    Value get_item(const Value& obj, const Value& key);
    // Dotted attribute path ("function.name") as the attribute= argument of filters uses it.
    Value get_attr_path(const Value& obj, const std::string& path);
    // Items of an iterable (list, tuple, dict keys, string code points; undefined -> empty).
    std::vector<Value> iterate(const Value& v);

private:
    enum class Flow { Normal, Break, Continue };

    Limits limits_;
    uint64_t steps_ = 0;
    uint64_t next_clock_check_ = 0;  // steps_ at which the wall clock is read next
    uint64_t allocated_bytes_ = 0;
    std::chrono::steady_clock::time_point deadline_;
    int depth_ = 0;
    std::vector<std::string> out_stack_;
    std::vector<ScopePtr> macro_scopes_;

    struct DepthGuard {
        Interpreter& in;
        explicit DepthGuard(Interpreter& interpreter);
        ~DepthGuard() { --in.depth_; }
    };

    void step();
    void check_clock();
    // One evaluation frame of an expression or statement at pos: a step, a depth level, and an
    // error that does not say where yet is located at pos.
    template <class Body>
    auto in_frame(SourcePos pos, Body&& body) -> decltype(body()) {
        try {
            step();
            DepthGuard guard(*this);
            return body();
        } catch (JinjaError& err) {
            if (!err.located) {
                err.message = located(pos, err.message);
                err.located = true;
            }
            throw;
        }
    }
    void write(std::string_view text);
    Value eval(const Expr& e, const ScopePtr& scope);
    Value eval_inner(const Expr& e, const ScopePtr& scope);
    Value eval_call(const Expr& e, const ScopePtr& scope);
    CallArgs eval_args(const Expr& e, const ScopePtr& scope);
    Value eval_filter_chain(const Expr& e, const ScopePtr& scope, const Value* block_input);
    Value eval_slice(const Expr& e, const ScopePtr& scope);
    Value binary_op(const std::string& op, const Value& l, const Value& r);
    bool compare_op(const std::string& op, const Value& l, const Value& r);
    bool contains(const Value& container, const Value& item);

    Flow exec(const Stmt& s, const ScopePtr& scope);
    Flow exec_inner(const Stmt& s, const ScopePtr& scope);
    Flow exec_body(const Body& body, const ScopePtr& scope);
    Flow exec_for(const Stmt& s, const ScopePtr& scope);
    std::string capture(const Body& body, const ScopePtr& scope);
    void assign(const Target& target, const Value& value, const ScopePtr& scope);
    Value make_macro(const Stmt& s, const ScopePtr& scope);
    void bind_params(const Stmt& s, const std::string& display_name, CallArgs& args, const ScopePtr& scope);
};

} // namespace cflow::jinja
