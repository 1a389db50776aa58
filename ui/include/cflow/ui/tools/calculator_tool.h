#pragma once
// The built-in "calculator" tool: evaluates one arithmetic expression (calculator_expression.h)
// and answers its value, or the error with its character position.
#include "cflow/ui/tools/tool_provider.h"

namespace cflow::ui {

class CalculatorTool : public ToolProvider {
    Q_OBJECT
public:
    using ToolProvider::ToolProvider;
    QString name() const override;
    QString summary() const override;
    std::vector<cflow::ToolDefinition> tools() const override;
    QCoro::Task<ToolResult> call(cflow::ToolCall call) override;
};

} // namespace cflow::ui
