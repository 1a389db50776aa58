#pragma once
// The built-in tools' reading of a call's arguments_json (a JSON object, as text).
#include <string>

#include <QJsonDocument>
#include <QJsonObject>
#include <QString>

namespace cflow::ui {

// The object, or error set to what is wrong with the text.
inline QJsonObject tool_arguments_object(const std::string& argumentsJson, QString& error) {
    if (argumentsJson.empty()) return {};
    QJsonParseError parse{};
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(argumentsJson), &parse);
    if (parse.error != QJsonParseError::NoError) {
        error = QStringLiteral("the arguments are not JSON: %1 at character %2").arg(parse.errorString()).arg(parse.offset + 1);
        return {};
    }
    if (!doc.isObject()) error = QStringLiteral("the arguments are not a JSON object");
    return doc.object();
}

} // namespace cflow::ui
