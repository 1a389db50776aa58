#include "chat/jinja/jinja_parser.h"

#include <algorithm>
#include <initializer_list>

namespace cflow::jinja {

namespace {

// Deep nesting ("((((((...") would otherwise exhaust the native stack.
constexpr int kMaxParseDepth = 128;

ExprPtr make_expr(ExprKind kind, SourcePos pos) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->pos = pos;
    return e;
}

class Parser {
public:
    Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

    std::unique_ptr<Program> run() {
        auto program = std::make_unique<Program>();
        program->body = parse_body({}, nullptr, "", SourcePos{});
        return program;
    }

private:
    std::vector<Token> toks_;
    size_t i_ = 0;
    int depth_ = 0;
    int loop_depth_ = 0;
    std::vector<Stmt*> macros_;  // macros being parsed (for varargs/kwargs detection)

    struct DepthGuard {
        Parser& p;
        DepthGuard(Parser& parser, SourcePos pos) : p(parser) {
            if (++p.depth_ > kMaxParseDepth) p.error(pos, "template nested too deeply");
        }
        ~DepthGuard() { --p.depth_; }
    };

    [[noreturn]] void error(SourcePos pos, const std::string& message) const {
        fail(located(pos, "syntax error: " + message));
    }

    const Token& cur() const { return toks_[i_]; }
    const Token& peek(size_t k) const { return toks_[std::min(i_ + k, toks_.size() - 1)]; }
    void advance() {
        if (i_ + 1 < toks_.size()) ++i_;
    }
    bool is_op(std::string_view op) const { return cur().type == TokenType::Operator && cur().text == op; }
    bool is_name(std::string_view name) const { return cur().type == TokenType::Name && cur().text == name; }
    bool skip_op(std::string_view op) {
        if (!is_op(op)) return false;
        advance();
        return true;
    }
    bool skip_name(std::string_view name) {
        if (!is_name(name)) return false;
        advance();
        return true;
    }

    std::string describe(const Token& t) const {
        switch (t.type) {
        case TokenType::Text: return "template text";
        case TokenType::VariableBegin: return "'{{'";
        case TokenType::VariableEnd: return "end of print statement '}}'";
        case TokenType::BlockBegin: return "'{%'";
        case TokenType::BlockEnd: return "end of statement block '%}'";
        case TokenType::Name: return "'" + t.text + "'";
        case TokenType::String: return "string literal";
        case TokenType::Integer:
        case TokenType::Float: return "number " + t.text;
        case TokenType::Operator: return "'" + t.text + "'";
        case TokenType::End: return "end of template";
        }
        return "token";
    }

    void expect_op(std::string_view op) {
        if (!skip_op(op)) error(cur().pos, "expected '" + std::string(op) + "', got " + describe(cur()));
    }
    std::string expect_name() {
        if (cur().type != TokenType::Name) error(cur().pos, "expected a name, got " + describe(cur()));
        std::string name = cur().text;
        advance();
        return name;
    }
    void expect_block_end() {
        if (cur().type != TokenType::BlockEnd)
            error(cur().pos, "expected end of statement block '%}', got " + describe(cur()));
        advance();
    }

    // ---- statements -----------------------------------------------------------------------

    Body parse_body(std::initializer_list<std::string_view> end_tags, std::string* found, std::string_view opener,
                    SourcePos opener_pos) {
        Body body;
        while (true) {
            const Token& t = cur();
            switch (t.type) {
            case TokenType::Text: {
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::Text;
                s->pos = t.pos;
                s->text = t.text;
                body.push_back(std::move(s));
                advance();
                break;
            }
            case TokenType::VariableBegin: {
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::Output;
                s->pos = t.pos;
                advance();
                s->expr = parse_tuple(true);
                if (cur().type != TokenType::VariableEnd)
                    error(cur().pos, "expected end of print statement '}}', got " + describe(cur()));
                advance();
                body.push_back(std::move(s));
                break;
            }
            case TokenType::BlockBegin: {
                SourcePos pos = t.pos;
                advance();
                if (cur().type != TokenType::Name) error(cur().pos, "expected a statement name, got " + describe(cur()));
                std::string tag = cur().text;
                if (std::find(end_tags.begin(), end_tags.end(), tag) != end_tags.end()) {
                    advance();
                    *found = tag;
                    return body;
                }
                advance();
                body.push_back(parse_statement(tag, pos));
                break;
            }
            case TokenType::End:
                if (end_tags.size() != 0) error(opener_pos, "Unterminated " + std::string(opener) + " (opened here)");
                return body;
            default: error(t.pos, "unexpected " + describe(t));
            }
        }
    }

    StmtPtr new_stmt(StmtKind kind, SourcePos pos) {
        auto s = std::make_unique<Stmt>();
        s->kind = kind;
        s->pos = pos;
        return s;
    }

    StmtPtr parse_statement(const std::string& tag, SourcePos pos) {
        DepthGuard guard(*this, pos);
        std::string found;
        if (tag == "if") {
            auto s = new_stmt(StmtKind::If, pos);
            ExprPtr cond = parse_tuple(false);
            expect_block_end();
            while (true) {
                Body body = parse_body({"elif", "else", "endif"}, &found, "if", pos);
                s->branches.emplace_back(std::move(cond), std::move(body));
                if (found == "elif") {
                    cond = parse_tuple(false);
                    expect_block_end();
                    continue;
                }
                if (found == "else") {
                    expect_block_end();
                    s->else_body = parse_body({"endif"}, &found, "if", pos);
                }
                expect_block_end();
                return s;
            }
        }
        if (tag == "for") {
            auto s = new_stmt(StmtKind::For, pos);
            s->target = parse_target(true, false);
            if (!skip_name("in")) error(cur().pos, "expected 'in', got " + describe(cur()));
            s->expr = parse_tuple(false);
            if (skip_name("if")) s->cond = parse_expression(true);
            if (skip_name("recursive")) error(pos, "recursive for loops are not supported");
            expect_block_end();
            ++loop_depth_;
            s->body = parse_body({"endfor", "else"}, &found, "for", pos);
            --loop_depth_;
            if (found == "else") {
                expect_block_end();
                s->else_body = parse_body({"endfor"}, &found, "for", pos);
            }
            expect_block_end();
            return s;
        }
        if (tag == "set") {
            Target target = parse_target(true, true);
            if (skip_op("=")) {
                auto s = new_stmt(StmtKind::Set, pos);
                s->target = std::move(target);
                s->expr = parse_tuple(true);
                expect_block_end();
                return s;
            }
            if (target.is_tuple || target.attr_object) error(pos, "block set needs a single variable name");
            auto s = new_stmt(StmtKind::SetBlock, pos);
            s->target = std::move(target);
            if (is_op("|")) {
                ExprPtr chain;
                while (is_op("|")) chain = parse_filter(std::move(chain));
                s->expr = std::move(chain);
            }
            expect_block_end();
            s->body = parse_body({"endset"}, &found, "set", pos);
            expect_block_end();
            return s;
        }
        if (tag == "macro") {
            auto s = new_stmt(StmtKind::Macro, pos);
            s->text = expect_name();
            s->params = parse_params();
            expect_block_end();
            int saved_loop_depth = loop_depth_;
            loop_depth_ = 0;
            macros_.push_back(s.get());
            s->body = parse_body({"endmacro"}, &found, "macro", pos);
            macros_.pop_back();
            loop_depth_ = saved_loop_depth;
            expect_block_end();
            return s;
        }
        if (tag == "call") {
            auto s = new_stmt(StmtKind::CallBlock, pos);
            if (is_op("(")) s->params = parse_params();
            s->expr = parse_expression(true);
            if (s->expr->kind != ExprKind::Call) error(pos, "Invalid call block syntax - expected function call");
            expect_block_end();
            int saved_loop_depth = loop_depth_;
            loop_depth_ = 0;
            s->body = parse_body({"endcall"}, &found, "call", pos);
            loop_depth_ = saved_loop_depth;
            expect_block_end();
            return s;
        }
        if (tag == "filter") {
            auto s = new_stmt(StmtKind::FilterBlock, pos);
            ExprPtr chain = parse_filter_named(nullptr);
            while (is_op("|")) chain = parse_filter(std::move(chain));
            s->expr = std::move(chain);
            expect_block_end();
            s->body = parse_body({"endfilter"}, &found, "filter", pos);
            expect_block_end();
            return s;
        }
        if (tag == "break" || tag == "continue") {
            if (loop_depth_ == 0) error(pos, tag + " outside of a loop");
            expect_block_end();
            return new_stmt(tag == "break" ? StmtKind::Break : StmtKind::Continue, pos);
        }
        if (tag == "with") {
            auto s = new_stmt(StmtKind::With, pos);
            while (cur().type != TokenType::BlockEnd) {
                if (!s->with_targets.empty()) expect_op(",");
                s->with_targets.push_back(parse_target(false, false));
                expect_op("=");
                s->with_values.push_back(parse_expression(true));
            }
            expect_block_end();
            s->body = parse_body({"endwith"}, &found, "with", pos);
            expect_block_end();
            return s;
        }
        if (tag == "generation" || tag == "block") {
            // {% generation %} is transformers' assistant-mask tag; it renders its body in place.
            auto s = new_stmt(StmtKind::Scope, pos);
            if (tag == "block") s->text = expect_name();
            expect_block_end();
            if (tag == "block") {
                s->body = parse_body({"endblock"}, &found, "block", pos);
                if (cur().type == TokenType::Name) advance();
            } else {
                s->body = parse_body({"endgeneration"}, &found, "generation", pos);
            }
            expect_block_end();
            return s;
        }
        static const char* const closers[] = {"endif",     "endfor",  "endset",  "endmacro", "endcall",
                                              "endfilter", "endwith", "endblock", "endgeneration",
                                              "endraw",    "elif",    "else"};
        for (const char* closer : closers)
            if (tag == closer) error(pos, "Unexpected " + tag);
        if (tag == "include" || tag == "import" || tag == "extends" || tag == "from")
            error(pos, "'" + tag + "' is not supported: the sandbox has no template loader");
        error(pos, "Encountered unknown tag '" + tag + "'");
    }

    std::vector<MacroParam> parse_params() {
        std::vector<MacroParam> params;
        expect_op("(");
        while (!is_op(")")) {
            if (!params.empty()) expect_op(",");
            if (is_op(")")) break;
            MacroParam p;
            p.name = expect_name();
            if (skip_op("=")) p.default_value = parse_expression(true);
            params.push_back(std::move(p));
        }
        expect_op(")");
        return params;
    }

    // for-targets allow `a, b` and `(a, b)`; set-targets also allow `ns.attr`.
    Target parse_target(bool allow_tuple, bool allow_attr) {
        Target t;
        SourcePos pos = cur().pos;
        bool parens = allow_tuple && skip_op("(");
        t.names.push_back(expect_name());
        if (allow_attr && !parens && is_op(".")) {
            advance();
            auto obj = make_expr(ExprKind::Name, pos);
            obj->name = t.names[0];
            t.attr_object = std::move(obj);
            t.names[0] = expect_name();
            return t;
        }
        while (allow_tuple && is_op(",")) {
            advance();
            if (parens && is_op(")")) break;
            t.names.push_back(expect_name());
            t.is_tuple = true;
        }
        if (parens) {
            expect_op(")");
            t.is_tuple = true;
        }
        return t;
    }

    // ---- expressions ----------------------------------------------------------------------

    bool at_tuple_end() const {
        return cur().type == TokenType::VariableEnd || cur().type == TokenType::BlockEnd ||
               cur().type == TokenType::End || is_op(")");
    }

    ExprPtr parse_tuple(bool with_condexpr) {
        SourcePos pos = cur().pos;
        std::vector<ExprPtr> items;
        bool is_tuple = false;
        while (true) {
            if (!items.empty()) {
                if (!is_op(",")) break;
                advance();
                is_tuple = true;
                if (at_tuple_end()) break;
            }
            items.push_back(parse_expression(with_condexpr));
        }
        if (!is_tuple) return std::move(items[0]);
        auto e = make_expr(ExprKind::Tuple, pos);
        e->items = std::move(items);
        return e;
    }

    ExprPtr parse_expression(bool with_condexpr) {
        DepthGuard guard(*this, cur().pos);
        return with_condexpr ? parse_condexpr() : parse_or();
    }

    ExprPtr parse_condexpr() {
        ExprPtr expr = parse_or();
        while (is_name("if")) {
            SourcePos pos = cur().pos;
            advance();
            auto e = make_expr(ExprKind::CondExpr, pos);
            e->a = parse_or();
            e->b = std::move(expr);
            if (skip_name("else")) e->c = parse_condexpr();
            expr = std::move(e);
        }
        return expr;
    }

    ExprPtr parse_or() {
        ExprPtr left = parse_and();
        while (is_name("or")) {
            auto e = make_expr(ExprKind::Or, cur().pos);
            advance();
            e->a = std::move(left);
            e->b = parse_and();
            left = std::move(e);
        }
        return left;
    }

    ExprPtr parse_and() {
        ExprPtr left = parse_not();
        while (is_name("and")) {
            auto e = make_expr(ExprKind::And, cur().pos);
            advance();
            e->a = std::move(left);
            e->b = parse_not();
            left = std::move(e);
        }
        return left;
    }

    ExprPtr parse_not() {
        if (is_name("not")) {
            DepthGuard guard(*this, cur().pos);
            auto e = make_expr(ExprKind::Unary, cur().pos);
            e->name = "not";
            advance();
            e->a = parse_not();
            return e;
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        SourcePos pos = cur().pos;
        ExprPtr expr = parse_math1();
        std::vector<std::string> ops;
        std::vector<ExprPtr> operands;
        while (true) {
            if (cur().type == TokenType::Operator &&
                (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == ">" ||
                 cur().text == "<=" || cur().text == ">=")) {
                ops.push_back(cur().text);
                advance();
            } else if (is_name("in")) {
                ops.push_back("in");
                advance();
            } else if (is_name("not") && peek(1).type == TokenType::Name && peek(1).text == "in") {
                ops.push_back("notin");
                advance();
                advance();
            } else {
                break;
            }
            operands.push_back(parse_math1());
        }
        if (ops.empty()) return expr;
        auto e = make_expr(ExprKind::Compare, pos);
        e->a = std::move(expr);
        e->ops = std::move(ops);
        e->items = std::move(operands);
        return e;
    }

    ExprPtr binary(std::string op, SourcePos pos, ExprPtr left, ExprPtr right) {
        auto e = make_expr(ExprKind::Binary, pos);
        e->name = std::move(op);
        e->a = std::move(left);
        e->b = std::move(right);
        return e;
    }

    ExprPtr parse_math1() {
        ExprPtr left = parse_concat();
        while (is_op("+") || is_op("-")) {
            std::string op = cur().text;
            SourcePos pos = cur().pos;
            advance();
            left = binary(op, pos, std::move(left), parse_concat());
        }
        return left;
    }

    ExprPtr parse_concat() {
        ExprPtr left = parse_math2();
        while (is_op("~")) {
            SourcePos pos = cur().pos;
            advance();
            left = binary("~", pos, std::move(left), parse_math2());
        }
        return left;
    }

    ExprPtr parse_math2() {
        ExprPtr left = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            std::string op = cur().text;
            SourcePos pos = cur().pos;
            advance();
            left = binary(op, pos, std::move(left), parse_pow());
        }
        return left;
    }

    ExprPtr parse_pow() {
        ExprPtr left = parse_unary(true);
        while (is_op("**")) {
            SourcePos pos = cur().pos;
            advance();
            left = binary("**", pos, std::move(left), parse_unary(true));
        }
        return left;
    }

    ExprPtr parse_unary(bool with_filter) {
        DepthGuard guard(*this, cur().pos);
        ExprPtr node;
        if (is_op("-") || is_op("+")) {
            node = make_expr(ExprKind::Unary, cur().pos);
            node->name = cur().text;
            advance();
            node->a = parse_unary(false);
        } else {
            node = parse_primary();
        }
        node = parse_postfix(std::move(node));
        if (with_filter) node = parse_filter_expr(std::move(node));
        return node;
    }

    ExprPtr parse_primary() {
        const Token& t = cur();
        SourcePos pos = t.pos;
        switch (t.type) {
        case TokenType::Name: {
            auto e = make_expr(ExprKind::Literal, pos);
            if (t.text == "true" || t.text == "True") {
                e->literal = Value(true);
            } else if (t.text == "false" || t.text == "False") {
                e->literal = Value(false);
            } else if (t.text == "none" || t.text == "None") {
                e->literal = Value::none();
            } else {
                e->kind = ExprKind::Name;
                e->name = t.text;
                for (Stmt* macro : macros_) {
                    if (t.text == "varargs") macro->uses_varargs = true;
                    if (t.text == "kwargs") macro->uses_kwargs = true;
                }
            }
            advance();
            return e;
        }
        case TokenType::String: {
            std::string text;
            while (cur().type == TokenType::String) {  // adjacent literals concatenate
                text += cur().text;
                advance();
            }
            auto e = make_expr(ExprKind::Literal, pos);
            e->literal = Value(std::move(text));
            return e;
        }
        case TokenType::Integer: {
            auto e = make_expr(ExprKind::Literal, pos);
            e->literal = Value(t.int_value);
            advance();
            return e;
        }
        case TokenType::Float: {
            auto e = make_expr(ExprKind::Literal, pos);
            e->literal = Value(t.float_value);
            advance();
            return e;
        }
        case TokenType::Operator:
            if (t.text == "(") {
                advance();
                if (skip_op(")")) return make_expr(ExprKind::Tuple, pos);
                ExprPtr inner = parse_tuple(true);
                expect_op(")");
                return inner;
            }
            if (t.text == "[") {
                advance();
                auto e = make_expr(ExprKind::List, pos);
                while (!is_op("]")) {
                    if (!e->items.empty()) {
                        expect_op(",");
                        if (is_op("]")) break;
                    }
                    e->items.push_back(parse_expression(true));
                }
                expect_op("]");
                return e;
            }
            if (t.text == "{") {
                advance();
                auto e = make_expr(ExprKind::Dict, pos);
                while (!is_op("}")) {
                    if (!e->items.empty()) {
                        expect_op(",");
                        if (is_op("}")) break;
                    }
                    e->items.push_back(parse_expression(true));
                    expect_op(":");
                    e->items.push_back(parse_expression(true));
                }
                expect_op("}");
                return e;
            }
            break;
        default: break;
        }
        error(pos, "unexpected " + describe(t));
    }

    ExprPtr parse_postfix(ExprPtr node) {
        while (true) {
            if (is_op(".")) {
                SourcePos pos = cur().pos;
                advance();
                if (cur().type == TokenType::Name) {
                    auto e = make_expr(ExprKind::GetAttr, pos);
                    e->a = std::move(node);
                    e->name = cur().text;
                    advance();
                    node = std::move(e);
                } else if (cur().type == TokenType::Integer) {
                    auto e = make_expr(ExprKind::GetItem, pos);
                    e->a = std::move(node);
                    e->b = make_expr(ExprKind::Literal, cur().pos);
                    e->b->literal = Value(cur().int_value);
                    advance();
                    node = std::move(e);
                } else {
                    error(cur().pos, "expected an attribute name after '.', got " + describe(cur()));
                }
            } else if (is_op("[")) {
                node = parse_subscript(std::move(node));
            } else if (is_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr node) {
        SourcePos pos = cur().pos;
        advance();  // [
        ExprPtr start;
        if (!is_op(":")) start = parse_expression(true);
        if (!is_op(":")) {
            if (!start) error(cur().pos, "expected a subscript");
            expect_op("]");
            auto e = make_expr(ExprKind::GetItem, pos);
            e->a = std::move(node);
            e->b = std::move(start);
            return e;
        }
        advance();  // :
        auto e = make_expr(ExprKind::Slice, pos);
        e->a = std::move(node);
        e->items.push_back(std::move(start));
        e->items.push_back(is_op("]") || is_op(":") ? nullptr : parse_expression(true));
        ExprPtr step;
        if (skip_op(":") && !is_op("]")) step = parse_expression(true);
        e->items.push_back(std::move(step));
        expect_op("]");
        return e;
    }

    void parse_call_args(Expr& call) {
        expect_op("(");
        bool first = true;
        while (!is_op(")")) {
            if (!first) {
                expect_op(",");
                if (is_op(")")) break;
            }
            first = false;
            if (skip_op("*")) {
                call.star_args = parse_expression(true);
            } else if (skip_op("**")) {
                call.star_kwargs = parse_expression(true);
            } else if (cur().type == TokenType::Name && peek(1).type == TokenType::Operator && peek(1).text == "=") {
                std::string key = cur().text;
                advance();
                advance();
                call.kwargs.emplace_back(std::move(key), parse_expression(true));
            } else {
                if (!call.kwargs.empty()) error(cur().pos, "positional argument follows keyword argument");
                call.items.push_back(parse_expression(true));
            }
        }
        expect_op(")");
    }

    ExprPtr parse_call(ExprPtr node) {
        auto e = make_expr(ExprKind::Call, cur().pos);
        e->a = std::move(node);
        parse_call_args(*e);
        return e;
    }

    ExprPtr parse_filter_expr(ExprPtr node) {
        while (true) {
            if (is_op("|")) {
                node = parse_filter(std::move(node));
            } else if (is_name("is")) {
                node = parse_test(std::move(node));
            } else if (is_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    std::string parse_dotted_name() {
        std::string name = expect_name();
        while (is_op(".") && peek(1).type == TokenType::Name) {
            advance();
            name += "." + cur().text;
            advance();
        }
        return name;
    }

    ExprPtr parse_filter(ExprPtr node) {
        expect_op("|");
        return parse_filter_named(std::move(node));
    }

    ExprPtr parse_filter_named(ExprPtr node) {
        SourcePos pos = cur().pos;
        auto e = make_expr(ExprKind::Filter, pos);
        e->name = parse_dotted_name();
        if (!filter_exists(e->name)) error(pos, "No filter named '" + e->name + "'");
        e->a = std::move(node);
        if (is_op("(")) parse_call_args(*e);
        return e;
    }

    ExprPtr parse_test(ExprPtr node) {
        auto e = make_expr(ExprKind::Test, cur().pos);
        advance();  // is
        if (skip_name("not")) e->negated = true;
        SourcePos name_pos = cur().pos;
        e->name = parse_dotted_name();
        if (!test_exists(e->name)) error(name_pos, "No test named '" + e->name + "'");
        e->a = std::move(node);
        if (is_op("(")) {
            parse_call_args(*e);
        } else if ((cur().type == TokenType::Name || cur().type == TokenType::String ||
                    cur().type == TokenType::Integer || cur().type == TokenType::Float || is_op("[") ||
                    is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
            if (is_name("is")) error(cur().pos, "You cannot chain multiple tests with is");
            e->items.push_back(parse_postfix(parse_primary()));
        }
        return e;
    }
};

} // namespace

std::unique_ptr<Program> parse_template(std::string_view source, const LexerOptions& options) {
    return Parser(tokenize(source, options)).run();
}

} // namespace cflow::jinja
