#include "cflow/ui/tools/calculator_tool.h"

#include "cflow/ui/tools/calculator_expression.h"
#include "qt_text.h"
#include "tool_arguments.h"

namespace cflow::ui {

QString CalculatorTool::name() const { return tr("Calculator"); }

QString CalculatorTool::summary() const { return tr("Arithmetic, powers, sqrt, trigonometry, logarithms; no network"); }

std::vector<cflow::ToolDefinition> CalculatorTool::tools() const {
    return {{"calculator",
             "Evaluates one arithmetic expression exactly as written and returns its value. Supports + - * / "
             "% (remainder) ^ (power), parentheses, unary minus, the constants pi and e, and the functions sqrt, "
             "sin, cos, tan (radians), log (base 10), ln, exp, abs, round, floor, ceil, min, max.",
             R"({"type":"object","properties":{"expression":{"type":"string","description":"The expression, e.g. (2+3)*sqrt(16)/4"}},"required":["expression"],"additionalProperties":false})"}};
}

QCoro::Task<ToolResult> CalculatorTool::call(cflow::ToolCall call) {
    QString error;
    const QJsonObject args = tool_arguments_object(call.arguments_json, error);
    if (!error.isEmpty()) co_return ToolResult{false, error};
    if (!args.value(QStringLiteral("expression")).isString())
        co_return ToolResult{false, tr("the calculator needs an \"expression\" string")};
    const std::string expression = utf8(args.value(QStringLiteral("expression")).toString());
    const CalculatorOutcome outcome = evaluate_expression(expression);
    if (!outcome.ok) co_return ToolResult{false, qt(outcome.error)};
    co_return ToolResult{true, qt(format_calculator_value(outcome.value))};
}

} // namespace cflow::ui
