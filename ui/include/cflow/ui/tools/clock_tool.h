#pragma once
// The built-in "current_datetime" tool: the local date and time in ISO 8601 with its UTC offset,
// the time zone's id and the weekday ("2026-12-07T07:20:05+01:00 (Europe/Paris, Monday)").
#include <functional>

#include <QDateTime>

#include "cflow/ui/tools/tool_provider.h"

namespace cflow::ui {

class ClockTool : public ToolProvider {
    Q_OBJECT
public:
    // now: the clock read at each call (tests pass a fixed time); empty = the system's local time.
    explicit ClockTool(std::function<QDateTime()> now = {}, QObject* parent = nullptr);
    QString name() const override;
    QString summary() const override;
    std::vector<cflow::ToolDefinition> tools() const override;
    QCoro::Task<ToolResult> call(cflow::ToolCall call) override;

    // The answer for one moment (its own offset and zone).
    static QString describe(const QDateTime& moment);

private:
    std::function<QDateTime()> now_;
};

} // namespace cflow::ui
