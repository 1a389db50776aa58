#include "cflow/ui/tools/calculator_expression.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numbers>
#include <string>
#include <vector>

namespace cflow::ui {
namespace {

// The parser's failure, carried up the recursion instead of an exception.
struct CalcFailure {
    std::string message;
    std::size_t offset = 0;  // 0-based byte of the expression
};

class CalcParser {
public:
    explicit CalcParser(std::string_view text) : text_(text) {}

    bool parseAll(double& value) {
        if (!parseSum(value, 0)) return false;
        skipSpace();
        if (pos_ < text_.size()) {
            if (text_[pos_] == ')') return fail("unmatched ')'", pos_);
            return fail("unexpected '" + characterAt(pos_) + "'", pos_);
        }
        return true;
    }
    const CalcFailure& failure() const { return failure_; }

private:
    // The whole UTF-8 character starting at byte pos (a model may write any text): one byte of
    // it alone would make the message, which the model is told, invalid UTF-8.
    std::string characterAt(std::size_t pos) const {
        const auto lead = static_cast<unsigned char>(text_[pos]);
        const std::size_t length = lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
        std::size_t end = pos + 1;
        while (end < text_.size() && end < pos + length && (static_cast<unsigned char>(text_[end]) & 0xC0) == 0x80) ++end;
        return std::string(text_.substr(pos, end - pos));
    }
    bool fail(std::string message, std::size_t offset) {
        failure_ = {std::move(message), offset};
        return false;
    }
    void skipSpace() {
        while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    bool atEnd() {
        skipSpace();
        return pos_ >= text_.size();
    }
    bool deeper(int depth) { return depth < kCalculatorMaxDepth || fail("the expression nests too deeply", pos_); }

    // sum := product (('+' | '-') product)*
    bool parseSum(double& value, int depth) {
        if (!deeper(depth) || !parseProduct(value, depth + 1)) return false;
        while (!atEnd() && (text_[pos_] == '+' || text_[pos_] == '-')) {
            const char op = text_[pos_++];
            double rhs = 0;
            if (!parseProduct(rhs, depth + 1)) return false;
            value = op == '+' ? value + rhs : value - rhs;
        }
        return true;
    }

    // product := signed (('*' | '/' | '%') signed)*
    bool parseProduct(double& value, int depth) {
        if (!parseSigned(value, depth + 1)) return false;
        while (!atEnd() && (text_[pos_] == '*' || text_[pos_] == '/' || text_[pos_] == '%')) {
            const std::size_t opAt = pos_;
            const char op = text_[pos_++];
            double rhs = 0;
            if (!parseSigned(rhs, depth + 1)) return false;
            if (op == '*') {
                value *= rhs;
            } else if (rhs == 0) {
                return fail(op == '/' ? "division by zero" : "remainder of a division by zero", opAt);
            } else {
                value = op == '/' ? value / rhs : std::fmod(value, rhs);
            }
        }
        return true;
    }

    // signed := ('-' | '+') signed | power
    bool parseSigned(double& value, int depth) {
        if (!deeper(depth)) return false;
        if (!atEnd() && (text_[pos_] == '-' || text_[pos_] == '+')) {
            const bool negate = text_[pos_++] == '-';
            if (!parseSigned(value, depth + 1)) return false;
            if (negate) value = -value;
            return true;
        }
        return parsePower(value, depth + 1);
    }

    // power := primary ('^' signed)?   (right-associative: 2^3^2 = 2^9; 2^-1 = 0.5)
    bool parsePower(double& value, int depth) {
        if (!parsePrimary(value, depth + 1)) return false;
        if (!atEnd() && text_[pos_] == '^') {
            const std::size_t opAt = pos_++;
            double exponent = 0;
            if (!parseSigned(exponent, depth + 1)) return false;
            if (value == 0 && exponent < 0) return fail("zero to a negative power", opAt);
            value = std::pow(value, exponent);
            if (std::isnan(value)) return fail("a negative number to a fractional power", opAt);
        }
        return true;
    }

    // primary := number | constant | function '(' arguments ')' | '(' sum ')'
    bool parsePrimary(double& value, int depth) {
        if (atEnd()) return fail("the expression ends where a number was expected", text_.size());
        const char c = text_[pos_];
        if (c == '(') {
            const std::size_t openAt = pos_++;
            if (!parseSum(value, depth + 1)) return false;
            if (atEnd()) return fail("'(' is never closed", openAt);
            if (text_[pos_] != ')') return fail("expected ')' but found '" + characterAt(pos_) + "'", pos_);
            ++pos_;
            return true;
        }
        if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return parseNumber(value);
        if (std::isalpha(static_cast<unsigned char>(c))) return parseName(value, depth);
        if (c == ')') return fail("unexpected ')'", pos_);
        return fail("unexpected '" + characterAt(pos_) + "'", pos_);
    }

    bool parseNumber(double& value) {
        const std::size_t start = pos_;
        while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
        if (pos_ < text_.size() && text_[pos_] == '.') {
            ++pos_;
            while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
        }
        if (pos_ - start == 1 && text_[start] == '.') return fail("'.' is not a number", start);
        // An exponent only when digits follow: "2e3" is 2000; "2e" leaves 'e' unread (an error).
        if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
            std::size_t look = pos_ + 1;
            if (look < text_.size() && (text_[look] == '+' || text_[look] == '-')) ++look;
            if (look < text_.size() && std::isdigit(static_cast<unsigned char>(text_[look]))) {
                pos_ = look;
                while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
            }
        }
        const std::string digits(text_.substr(start, pos_ - start));
        value = std::strtod(digits.c_str(), nullptr);
        if (!std::isfinite(value)) return fail("the number " + digits + " is too large", start);
        return true;
    }

    bool parseName(double& value, int depth) {
        const std::size_t start = pos_;
        while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
        const std::string name(text_.substr(start, pos_ - start));
        if (name == "pi") return (value = std::numbers::pi), true;
        if (name == "e") return (value = std::numbers::e), true;
        static constexpr const char* kFunctions[] = {"sqrt", "sin", "cos", "tan", "log", "ln", "exp",
                                                     "abs", "round", "floor", "ceil", "min", "max"};
        bool known = false;
        for (const char* f : kFunctions) known = known || name == f;
        if (!known) return fail("unknown name '" + name + "'", start);
        if (atEnd() || text_[pos_] != '(') return fail(name + " must be followed by '('", pos_);
        const std::size_t openAt = pos_++;
        std::vector<double> args;
        while (true) {
            double arg = 0;
            if (!parseSum(arg, depth + 1)) return false;
            args.push_back(arg);
            if (atEnd()) return fail("'(' is never closed", openAt);
            if (text_[pos_] == ',') {
                ++pos_;
                continue;
            }
            if (text_[pos_] != ')') return fail("expected ',' or ')' but found '" + characterAt(pos_) + "'", pos_);
            ++pos_;
            break;
        }
        return apply(name, args, start, value);
    }

    bool apply(const std::string& name, const std::vector<double>& args, std::size_t at, double& value) {
        if (name == "min" || name == "max") {
            if (args.size() < 2) return fail(name + " takes two or more arguments", at);
            value = args[0];
            for (double a : args) value = name == "min" ? std::fmin(value, a) : std::fmax(value, a);
            return true;
        }
        if (args.size() != 1) return fail(name + " takes one argument, not " + std::to_string(args.size()), at);
        const double x = args[0];
        if (name == "sqrt") {
            if (x < 0) return fail("sqrt of a negative number", at);
            value = std::sqrt(x);
        } else if (name == "log" || name == "ln") {
            if (x <= 0) return fail(name + " of a number that is not positive", at);
            value = name == "log" ? std::log10(x) : std::log(x);
        } else if (name == "sin") {
            value = std::sin(x);
        } else if (name == "cos") {
            value = std::cos(x);
        } else if (name == "tan") {
            value = std::tan(x);
        } else if (name == "exp") {
            value = std::exp(x);
        } else if (name == "abs") {
            value = std::fabs(x);
        } else if (name == "round") {
            value = std::round(x);
        } else if (name == "floor") {
            value = std::floor(x);
        } else {
            value = std::ceil(x);
        }
        return true;
    }

    std::string_view text_;
    std::size_t pos_ = 0;
    CalcFailure failure_;
};

} // namespace

CalculatorOutcome evaluate_expression(std::string_view expression) {
    CalculatorOutcome outcome;
    auto failWith = [&](std::string message, std::size_t offset) {
        // Counted in characters (UTF-8 code points), as a reader counts them, not bytes.
        outcome.position = 1;
        for (std::size_t i = 0; i < std::min(offset, expression.size()); ++i)
            if ((static_cast<unsigned char>(expression[i]) & 0xC0) != 0x80) ++outcome.position;
        if (offset > expression.size()) outcome.position += offset - expression.size();
        outcome.error = std::move(message) + " at character " + std::to_string(outcome.position);
        return outcome;
    };
    if (expression.size() > kCalculatorMaxLength)
        return failWith("the expression is longer than " + std::to_string(kCalculatorMaxLength) + " characters",
                        kCalculatorMaxLength);
    CalcParser parser(expression);
    double value = 0;
    if (!parser.parseAll(value)) return failWith(parser.failure().message, parser.failure().offset);
    if (!std::isfinite(value)) return failWith("the result is too large to represent", 0);
    outcome.ok = true;
    outcome.value = value == 0 ? 0.0 : value;  // no "-0"
    return outcome;
}

std::string format_calculator_value(double value) {
    char text[64];
    if (std::fabs(value) < 1e15 && value == std::trunc(value)) {
        std::snprintf(text, sizeof text, "%.0f", value);
    } else {
        std::snprintf(text, sizeof text, "%.15g", value);
    }
    return text;
}

} // namespace cflow::ui
