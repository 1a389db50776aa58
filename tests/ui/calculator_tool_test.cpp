// The calculator tool (issue 33): values, precedence, functions, and errors that name their
// character position; the tool's JSON arguments.
#include <cmath>
#include <numbers>
#include <string>

#include <gtest/gtest.h>

#include "cflow/ui/tools/calculator_expression.h"
#include "cflow/ui/tools/calculator_tool.h"

namespace cflow::ui {
namespace {

double value_of(const std::string& expression) {
    const CalculatorOutcome outcome = evaluate_expression(expression);
    EXPECT_TRUE(outcome.ok) << expression << ": " << outcome.error;
    return outcome.value;
}

TEST(Calculator, Values) {
    EXPECT_EQ(value_of("1 + 2 * 3"), 7);
    EXPECT_EQ(value_of("(1 + 2) * 3"), 9);
    EXPECT_EQ(value_of("10 - 4 - 3"), 3);       // left-associative
    EXPECT_EQ(value_of("2 ^ 3 ^ 2"), 512);      // right-associative
    EXPECT_EQ(value_of("-2 ^ 2"), -4);          // unary minus binds looser than ^
    EXPECT_EQ(value_of("2 ^ -1"), 0.5);
    EXPECT_EQ(value_of("--3"), 3);
    EXPECT_EQ(value_of("+4 - -1"), 5);
    EXPECT_EQ(value_of("7 % 3"), 1);
    EXPECT_EQ(value_of("-7 % 3"), -1);          // fmod keeps the dividend's sign
    EXPECT_EQ(value_of("1 / 4"), 0.25);
    EXPECT_EQ(value_of(".5 + 1.25"), 1.75);
    EXPECT_DOUBLE_EQ(value_of("6.02e23 / 1e23"), 6.02);
    EXPECT_EQ(value_of("2E3"), 2000);
    EXPECT_DOUBLE_EQ(value_of("pi"), std::numbers::pi);
    EXPECT_DOUBLE_EQ(value_of("ln(e)"), 1);
    EXPECT_EQ(value_of("sqrt(16) + abs(-3)"), 7);
    EXPECT_NEAR(value_of("sin(pi / 2) + cos(0) + tan(0)"), 2, 1e-15);
    EXPECT_EQ(value_of("log(1000)"), 3);
    EXPECT_DOUBLE_EQ(value_of("exp(1)"), std::numbers::e);
    EXPECT_EQ(value_of("round(2.5) + floor(-1.5) + ceil(1.2)"), 3 + -2 + 2);
    EXPECT_EQ(value_of("min(3, 1, 2) + max(3, 1, 2)"), 4);
    EXPECT_EQ(value_of("max(2, min(8, 5) * 2)"), 10);
    EXPECT_EQ(value_of("  ( ( 42 ) )  "), 42);
}

struct CalcErrorCase {
    const char* expression;
    const char* error;
    std::size_t position;
};

TEST(Calculator, ErrorsNameTheirPosition) {
    const CalcErrorCase cases[] = {
        {"1 +", "the expression ends where a number was expected at character 4", 4},
        {"2 * (3 + 4", "'(' is never closed at character 5", 5},
        {"2 + 3)", "unmatched ')' at character 6", 6},
        {"1 / 0", "division by zero at character 3", 3},
        {"5 % (2 - 2)", "remainder of a division by zero at character 3", 3},
        {"foo(2)", "unknown name 'foo' at character 1", 1},
        {"2 + system", "unknown name 'system' at character 5", 5},
        {"sqrt(-4)", "sqrt of a negative number at character 1", 1},
        {"1 + ln(0)", "ln of a number that is not positive at character 5", 5},
        {"sqrt 4", "sqrt must be followed by '(' at character 6", 6},
        {"min(1)", "min takes two or more arguments at character 1", 1},
        {"abs(1, 2)", "abs takes one argument, not 2 at character 1", 1},
        {"3 $ 4", "unexpected '$' at character 3", 3},
        {"2e", "unexpected 'e' at character 2", 2},
        {"(-8) ^ 0.5", "a negative number to a fractional power at character 6", 6},
        {"0 ^ -1", "zero to a negative power at character 3", 3},
        {"10 ^ 400", "the result is too large to represent at character 1", 1},
        {"", "the expression ends where a number was expected at character 1", 1},
        {".", "'.' is not a number at character 1", 1},
        // A model may write any text: the message names the whole character, counted in characters.
        {"2 + \u7d75", "unexpected '\u7d75' at character 5", 5},
        {"\u00e9\u00e9 + 1", "unexpected '\u00e9' at character 1", 1},
        {"(1 \u00e9", "expected ')' but found '\u00e9' at character 4", 4},
        {"min(1 \u00e9", "expected ',' or ')' but found '\u00e9' at character 7", 7},
        {"1 \u00e9", "unexpected '\u00e9' at character 3", 3},
    };
    for (const CalcErrorCase& c : cases) {
        const CalculatorOutcome outcome = evaluate_expression(c.expression);
        EXPECT_FALSE(outcome.ok) << c.expression;
        EXPECT_EQ(outcome.error, c.error) << c.expression;
        EXPECT_EQ(outcome.position, c.position) << c.expression;
    }
}

TEST(Calculator, HostileInputIsBounded) {
    const std::string deep = std::string(10000, '(') + "1" + std::string(10000, ')');
    const CalculatorOutcome tooLong = evaluate_expression(deep);
    EXPECT_FALSE(tooLong.ok);
    EXPECT_EQ(tooLong.error, "the expression is longer than 4096 characters at character 4097");
    const std::string nested = std::string(1000, '(') + "1" + std::string(1000, ')');
    const CalculatorOutcome tooDeep = evaluate_expression(nested);
    EXPECT_FALSE(tooDeep.ok);
    EXPECT_NE(tooDeep.error.find("the expression nests too deeply"), std::string::npos) << tooDeep.error;
    const CalculatorOutcome signs = evaluate_expression(std::string(3000, '-') + "1");
    EXPECT_FALSE(signs.ok);
}

TEST(Calculator, FormatsValues) {
    EXPECT_EQ(format_calculator_value(42), "42");
    EXPECT_EQ(format_calculator_value(-3), "-3");
    EXPECT_EQ(format_calculator_value(0.25), "0.25");
    EXPECT_EQ(format_calculator_value(1.0 / 3.0), "0.333333333333333");
    EXPECT_EQ(format_calculator_value(1e100), "1e+100");
}

TEST(CalculatorTool, AnswersFromJsonArguments) {
    CalculatorTool tool;
    ASSERT_EQ(tool.tools().size(), 1u);
    EXPECT_EQ(tool.tools()[0].name, "calculator");
    EXPECT_NE(tool.tools()[0].parameters_json.find("\"required\":[\"expression\"]"), std::string::npos);
    const ToolResult answer = QCoro::waitFor(tool.call({"c1", "calculator", R"({"expression": "(2+3)*sqrt(16)/4"})"}));
    EXPECT_TRUE(answer.ok);
    EXPECT_EQ(answer.text, "5");
    const ToolResult wrong = QCoro::waitFor(tool.call({"c2", "calculator", R"({"expression": "2 +* 3"})"}));
    EXPECT_FALSE(wrong.ok);
    EXPECT_EQ(wrong.text, "unexpected '*' at character 4");
    const ToolResult missing = QCoro::waitFor(tool.call({"c3", "calculator", R"({"expr": "1"})"}));
    EXPECT_FALSE(missing.ok);
    EXPECT_EQ(missing.text, "the calculator needs an \"expression\" string");
    const ToolResult notJson = QCoro::waitFor(tool.call({"c4", "calculator", "{expression"}));
    EXPECT_FALSE(notJson.ok);
    EXPECT_TRUE(notJson.text.startsWith("the arguments are not JSON")) << notJson.text.toStdString();
}

} // namespace
} // namespace cflow::ui
