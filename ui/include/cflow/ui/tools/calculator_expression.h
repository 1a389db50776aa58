#pragma once
// The calculator tool's arithmetic: a recursive-descent evaluator of one expression. Numbers
// (1, 2.5, .5, 6.02e23), + - * / % (remainder, as fmod) ^ (power, right-associative, binding
// tighter than unary minus: -2^2 = -4), parentheses, unary minus and plus, the constants pi and
// e, and the functions sqrt sin cos tan log (base 10) ln exp abs round floor ceil (one argument)
// and min max (two or more). Angles are in radians. Nothing else is evaluated: any other name or
// character is an error that names its position.
#include <cstddef>
#include <string>
#include <string_view>

namespace cflow::ui {

struct CalculatorOutcome {
    bool ok = false;
    double value = 0;
    std::string error;         // "unknown name 'foo' at character 3"
    std::size_t position = 0;  // of the error: 1-based character (UTF-8 code point) of the expression; 0 when ok
};

// At most kCalculatorMaxLength bytes and kCalculatorMaxDepth nested parentheses / unary signs
// (bounded work and stack for any input).
inline constexpr std::size_t kCalculatorMaxLength = 4096;
inline constexpr int kCalculatorMaxDepth = 128;

CalculatorOutcome evaluate_expression(std::string_view expression);

// The value as the tool answers it: integers without a fraction ("42"), else up to 15
// significant digits ("0.333333333333333", "1e+100").
std::string format_calculator_value(double value);

} // namespace cflow::ui
