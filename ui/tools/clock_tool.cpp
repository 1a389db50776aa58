#include "cflow/ui/tools/clock_tool.h"

#include <QLocale>
#include <QTimeZone>

namespace cflow::ui {

ClockTool::ClockTool(std::function<QDateTime()> now, QObject* parent) : ToolProvider(parent), now_(std::move(now)) {}

QString ClockTool::name() const { return tr("Date and time"); }

QString ClockTool::summary() const { return tr("This computer's local date, time and time zone"); }

std::vector<cflow::ToolDefinition> ClockTool::tools() const {
    return {{"current_datetime",
             "Returns the current local date and time in ISO 8601 with the UTC offset, the time zone and the weekday.",
             R"({"type":"object","properties":{},"additionalProperties":false})"}};
}

QString ClockTool::describe(const QDateTime& moment) {
    // The offset is written out (+01:00, +00:00 rather than Z): Qt::ISODate omits it for local times.
    const QDateTime withOffset = moment.toOffsetFromUtc(moment.offsetFromUtc());
    const int offsetMinutes = withOffset.offsetFromUtc() / 60;
    const QString offset = QStringLiteral("%1%2:%3")
                               .arg(offsetMinutes < 0 ? QLatin1Char('-') : QLatin1Char('+'))
                               .arg(std::abs(offsetMinutes) / 60, 2, 10, QLatin1Char('0'))
                               .arg(std::abs(offsetMinutes) % 60, 2, 10, QLatin1Char('0'));
    QString zone = QString::fromUtf8(moment.timeZone().id());
    if (zone.isEmpty()) zone = moment.timeZoneAbbreviation();
    return QStringLiteral("%1%2 (%3, %4)")
        .arg(withOffset.toString(QStringLiteral("yyyy-MM-ddTHH:mm:ss")), offset, zone,
             QLocale::c().dayName(moment.date().dayOfWeek()));
}

QCoro::Task<ToolResult> ClockTool::call(cflow::ToolCall call) {
    (void)call;  // no parameters
    co_return ToolResult{true, describe(now_ ? now_() : QDateTime::currentDateTime())};
}

} // namespace cflow::ui
