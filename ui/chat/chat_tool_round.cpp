#include "cflow/ui/chat_tool_round.h"

#include <algorithm>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace cflow::ui {

bool ToolRound::answered() const {
    return std::all_of(results.begin(), results.end(), [](const std::optional<ToolResult>& r) { return r.has_value(); });
}

QString cancelled_tool_call_text() { return QStringLiteral("The user stopped before this call was decided: it did not run."); }

QString interrupted_tool_call_text() {
    return QStringLiteral("The user stopped the chat while this call ran: it may have run, its result was not kept.");
}

QString tool_calls_extra_json(const std::vector<cflow::ToolCall>& calls) {
    return QString::fromStdString(cflow::tool_calls_message_extra_json(calls));
}

QString tool_result_extra_json(const cflow::ToolCall& call) {
    QJsonObject o;
    o.insert(QStringLiteral("tool_call_id"), QString::fromStdString(call.id));
    o.insert(QStringLiteral("name"), QString::fromStdString(call.name));
    return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

std::vector<cflow::ToolCall> tool_calls_from_extra_json(const QString& extraJson) {
    std::vector<cflow::ToolCall> calls;
    if (extraJson.isEmpty()) return calls;
    const QJsonObject o = QJsonDocument::fromJson(extraJson.toUtf8()).object();
    for (const QJsonValue& v : o.value(QStringLiteral("tool_calls")).toArray()) {
        const QJsonObject call = v.toObject();
        const QJsonObject function = call.value(QStringLiteral("function")).toObject();
        cflow::ToolCall c;
        c.id = call.value(QStringLiteral("id")).toString().toStdString();
        c.name = function.value(QStringLiteral("name")).toString().toStdString();
        const QJsonValue arguments = function.value(QStringLiteral("arguments"));
        // Stored as the object templates index; a string (another writer's form) is kept as written.
        c.arguments_json = arguments.isString()
                               ? arguments.toString().toStdString()
                               : QJsonDocument(arguments.toObject()).toJson(QJsonDocument::Compact).toStdString();
        calls.push_back(std::move(c));
    }
    return calls;
}

QString tool_result_call_id(const QString& extraJson) {
    if (extraJson.isEmpty()) return {};
    return QJsonDocument::fromJson(extraJson.toUtf8()).object().value(QStringLiteral("tool_call_id")).toString();
}

QString tool_choice_key(const cflow::ToolChoice& choice) {
    switch (choice.kind) {
    case cflow::ToolChoice::Kind::Required: return QStringLiteral("required");
    case cflow::ToolChoice::Kind::Named: return QStringLiteral("tool:") + QString::fromStdString(choice.name);
    case cflow::ToolChoice::Kind::Auto:
    case cflow::ToolChoice::Kind::None: break;
    }
    return QStringLiteral("auto");
}

cflow::ToolChoice tool_choice_from_key(const QString& key) {
    if (key == QLatin1String("required")) return {cflow::ToolChoice::Kind::Required, {}};
    if (key.startsWith(QLatin1String("tool:")) && key.size() > 5)
        return {cflow::ToolChoice::Kind::Named, key.mid(5).toStdString()};
    return {};
}

cflow::ParsedToolReply read_tool_calls(cflow::ToolCallFormat format, const QString& reply) {
    if (format == cflow::ToolCallFormat::None) return {reply.toStdString(), {}};
    return cflow::parse_tool_calls(format, reply.toStdString());
}

} // namespace cflow::ui
