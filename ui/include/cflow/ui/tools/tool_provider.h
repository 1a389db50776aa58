#pragma once
// A source of tools the chat's model may call: a built-in tool (calculator, clock, the files the
// user picked) or an MCP server. The chat asks the conversation's ToolRegistry for the tools to
// offer, and, once the user approved a call, has the provider run it. A call never blocks the GUI
// thread and never throws: it resolves on the GUI thread to a ToolResult whose text is what the
// model is told (the result, or a plain error).
#include <vector>

#include <QObject>
#include <QString>

#include <QCoro/QCoroTask>

#include "cflow/engine/chat/tool_calls.h"

namespace cflow::ui {

struct ToolResult {
    bool ok = false;  // false: text says what went wrong (the model is told, and the card shows it)
    QString text;     // the tool's output, or the error
};

class ToolProvider : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;
    ~ToolProvider() override = default;

    // Unique within a registry; shown in the Tools panel ("Calculator", "MCP: files").
    virtual QString name() const = 0;
    // One line for the Tools panel: what it is, and its state where it has one ("not started",
    // "did not start: ...").
    virtual QString summary() const = 0;
    // The tools offered now; may change (toolsChanged). Each name is 1-64 of [A-Za-z0-9_-].
    virtual std::vector<cflow::ToolDefinition> tools() const = 0;
    // Runs one call of one of tools(). By value: the coroutine keeps its own copy. A provider that
    // is destroyed while a call runs resolves that call with an error (no dangling resume).
    virtual QCoro::Task<ToolResult> call(cflow::ToolCall call) = 0;

signals:
    // tools() or summary() changed (an MCP server started, listed or failed; files were picked).
    void toolsChanged();
};

} // namespace cflow::ui
