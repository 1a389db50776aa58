#pragma once
// Jinja parser: tokens -> AST. Operator precedence follows jinja2's parser (condexpr < or < and
// < not < compare < +,- < ~ < *,/,//,% < ** < unary; filters and `is` tests bind to the
// unary operand), so `'a' + x | length | string` filters x alone.
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/jinja/jinja_lexer.h"
#include "chat/jinja/jinja_value.h"

namespace cflow::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind : uint8_t {
    Literal,    // literal
    Name,       // name
    List,       // items
    Tuple,      // items
    Dict,       // items: key, value, key, value, ...
    GetAttr,    // a.name
    GetItem,    // a[b]
    Slice,      // a[b:c:d] (b, c, d may be null)
    Call,       // a(args)
    Filter,     // a | name(args)   (a is null inside {% filter %} blocks)
    Test,       // a is [not] name(args)
    Unary,      // name in {"not", "-", "+"}; a
    Binary,     // name is the operator; a, b
    And,        // a and b
    Or,         // a or b
    Compare,    // a, then items[i] compared with ops[i] (chained: a < b < c)
    CondExpr,   // b if a else c  (a = condition, b = then, c = else or null)
};

struct Expr {
    ExprKind kind = ExprKind::Literal;
    SourcePos pos;
    std::string name;
    Value literal;
    ExprPtr a, b, c;
    std::vector<ExprPtr> items;                           // positional call args / list items
    std::vector<std::pair<std::string, ExprPtr>> kwargs;  // keyword call args
    ExprPtr star_args, star_kwargs;                       // *args, **kwargs
    std::vector<std::string> ops;                         // Compare operators
    bool negated = false;                                 // Test: `is not`
};

// Assignment target of for/set/with: one name, a tuple of names, or `ns.attr`.
struct Target {
    std::vector<std::string> names;
    bool is_tuple = false;
    ExprPtr attr_object;  // `set ns.attr = ...`: the object expression; names[0] is the attribute
};

struct MacroParam {
    std::string name;
    ExprPtr default_value;  // null: required
};

enum class StmtKind : uint8_t {
    Text,         // text
    Output,       // expr
    If,           // branches (+ else_body)
    For,          // target in expr [if cond]: body, else_body
    Set,          // target = expr
    SetBlock,     // target: body, then the filter chain `expr` (Filter exprs with null innermost operand)
    Macro,        // name(params): body
    CallBlock,    // expr (a Call): body becomes `caller`, params are the caller's params
    FilterBlock,  // expr (Filter chain applied to the body's output)
    Break,
    Continue,
    With,         // assignments (targets + values): body
    Scope,        // {% generation %} / {% block %}: renders body in place
};

struct Stmt {
    StmtKind kind = StmtKind::Text;
    SourcePos pos;
    std::string text;  // Text, Macro name
    ExprPtr expr;
    ExprPtr cond;  // For filter condition
    Target target;
    std::vector<std::pair<ExprPtr, Body>> branches;
    Body body;
    Body else_body;
    std::vector<MacroParam> params;
    bool uses_varargs = false;  // Macro: body references varargs / kwargs
    bool uses_kwargs = false;
    std::vector<Target> with_targets;
    std::vector<ExprPtr> with_values;
};

struct Program {
    Body body;
};

// Throws JinjaError (located) on syntax errors, unknown filters/tests and misplaced tags.
std::unique_ptr<Program> parse_template(std::string_view source, const LexerOptions& options);

// Defined in jinja_filters.cpp / jinja_tests.cpp; the parser rejects unknown names like jinja2.
bool filter_exists(std::string_view name);
bool test_exists(std::string_view name);

} // namespace cflow::jinja
