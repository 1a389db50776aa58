// Markdown and JSON exports of one conversation, and the file names offered for them.
// QSaveFile writes a temporary file and renames it over the target on commit, so a failed
// export never leaves a partial file.
#include "cflow/ui/conversation_export.h"

#include <QDateTime>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSaveFile>

#include "cflow/ui/conversation_store.h"
#include "cflow/ui/conversation_title.h"
#include "cflow/ui/remote/endpoint_profile.h"

namespace cflow::ui {
namespace {

Status save_atomically(const QString& path, const QByteArray& bytes) {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return make_error(QStringLiteral("%1: cannot write: %2").arg(QDir::toNativeSeparators(path), file.errorString()).toStdString());
    if (file.write(bytes) != bytes.size() || !file.commit())
        return make_error(QStringLiteral("%1: cannot write: %2").arg(QDir::toNativeSeparators(path), file.errorString()).toStdString());
    return {};
}

QString iso_time(qint64 ms) { return QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC).toString(Qt::ISODateWithMs); }

// What wrote a reply, as people read it: an endpoint's "model @ host:port" (issue 34), else "".
// Local replies are the conversation's model file, named once at the top.
QString endpoint_writer(const QString& modelPath) {
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
    if (is_endpoint_identity(modelPath)) return endpoint_identity_label(modelPath);
#else
    (void)modelPath;
#endif
    return {};
}

QString role_heading(const QString& role) {
    if (role.isEmpty()) return role;
    return role.left(1).toUpper() + role.mid(1);
}

// A message's extra fields (StoredMessage::extraJson): an assistant's tool_calls, a tool result's
// tool_call_id and name; empty for plain messages.
QJsonObject extra_fields(const StoredMessage& m) {
    return m.extraJson.isEmpty() ? QJsonObject{} : QJsonDocument::fromJson(m.extraJson.toUtf8()).object();
}

// The calls an assistant message made, in Markdown: each tool's name and its arguments as JSON.
QString markdown_tool_calls(const QJsonObject& extra) {
    QString text;
    for (const QJsonValue& v : extra.value(QStringLiteral("tool_calls")).toArray()) {
        const QJsonObject function = v.toObject().value(QStringLiteral("function")).toObject();
        const QJsonValue arguments = function.value(QStringLiteral("arguments"));
        const QString json = arguments.isObject()
                                 ? QString::fromUtf8(QJsonDocument(arguments.toObject()).toJson(QJsonDocument::Indented)).trimmed()
                                 : arguments.toString();
        text += QStringLiteral("\n**Tool call:** `%1`\n\n```json\n%2\n```\n")
                    .arg(function.value(QStringLiteral("name")).toString(), json);
    }
    return text;
}

QString export_extension(bool asJson) { return asJson ? QStringLiteral(".json") : QStringLiteral(".md"); }

// Characters Windows, macOS or Linux refuse in a file name, control characters and invisible
// format characters (a right-to-left override would disguise the extension).
bool is_unsafe_in_file_name(QChar c) {
    return c.category() == QChar::Other_Control || c.category() == QChar::Other_Format ||
           QStringView(u"/\\:*?\"<>|").contains(c);
}

// Trailing dots and spaces are dropped by Windows; a leading dot hides the file.
QString trim_dots_and_spaces(QString name) {
    static const QRegularExpression ends(QStringLiteral("^[. ]+|[. ]+$"));
    return name.remove(ends);
}

} // namespace

QString suggested_export_file_name(const QString& title, bool asJson) {
    QString name = plain_title(title, 0);
    for (QChar& c : name)
        if (is_unsafe_in_file_name(c)) c = u' ';
    name = trim_dots_and_spaces(name.simplified().left(kMaxExportBaseChars));
    // Device names Windows reserves, with or without an extension.
    static const QRegularExpression reserved(QStringLiteral("^(CON|PRN|AUX|NUL|COM[1-9]|LPT[1-9])$"),
                                             QRegularExpression::CaseInsensitiveOption);
    if (reserved.match(name).hasMatch()) name += QStringLiteral(" conversation");
    if (name.isEmpty()) name = QStringLiteral("conversation");
    return name + export_extension(asJson);
}

QString with_export_extension(const QString& path, bool asJson) {
    if (path.isEmpty() || path.endsWith(export_extension(asJson), Qt::CaseInsensitive)) return path;
    return path + export_extension(asJson);
}

Status ConversationStore::exportMarkdown(qint64 conversationId, const QString& path) const {
    auto info = conversation(conversationId);
    if (!info) return info.take_error();
    auto messages = this->messages(conversationId);
    if (!messages) return messages.take_error();

    QString text = QStringLiteral("# %1\n\n").arg(info->title);
    if (const QString server = endpoint_writer(info->modelPath); !server.isEmpty())
        text += QStringLiteral("Server: %1  \n").arg(server);
    else if (!info->modelPath.isEmpty())
        text += QStringLiteral("Model: `%1`  \n").arg(info->modelPath);
    text += QStringLiteral("Created: %1\n").arg(iso_time(info->createdMs));
    for (const StoredMessage& m : *messages) {
        const QJsonObject extra = extra_fields(m);
        QString heading = role_heading(m.role);
        if (const QString tool = extra.value(QStringLiteral("name")).toString(); m.role == QLatin1String("tool") && !tool.isEmpty())
            heading += QStringLiteral(" (%1)").arg(tool);  // which call this result answers
        if (const QString server = endpoint_writer(m.modelPath); !server.isEmpty()) heading += QStringLiteral(" (%1)").arg(server);
        if (m.stopped) heading += QStringLiteral(" (stopped)");
        text += QStringLiteral("\n## %1%2\n\n").arg(heading, m.complete ? QString() : QStringLiteral(" (incomplete)"));
        text += m.content;
        text += u'\n';
        text += markdown_tool_calls(extra);
    }
    return save_atomically(path, text.toUtf8());
}

Status ConversationStore::exportJson(qint64 conversationId, const QString& path) const {
    auto info = conversation(conversationId);
    if (!info) return info.take_error();
    auto messages = this->messages(conversationId);
    if (!messages) return messages.take_error();

    QJsonArray list;
    for (const StoredMessage& m : *messages) {
        // The extra fields as the OpenAI chat format spells them (tool_calls, tool_call_id, name).
        QJsonObject message = extra_fields(m);
        message.insert(QStringLiteral("role"), m.role);
        message.insert(QStringLiteral("content"), m.content);
        message.insert(QStringLiteral("created"), iso_time(m.createdMs));
        message.insert(QStringLiteral("complete"), m.complete);
        if (m.role == QLatin1String("assistant") && !m.modelPath.isEmpty()) {
            // Which model or server wrote each reply: a conversation can switch between them.
            message.insert(QStringLiteral("model_path"), m.modelPath);
            if (const QString server = endpoint_writer(m.modelPath); !server.isEmpty())
                message.insert(QStringLiteral("server"), server);
            if (m.stopped) message.insert(QStringLiteral("stopped"), true);
        }
        list.append(message);
    }
    const QJsonDocument settings = QJsonDocument::fromJson(info->settingsJson.toUtf8());
    const QJsonObject root{{QStringLiteral("title"), info->title},
                           {QStringLiteral("model_path"), info->modelPath},
                           {QStringLiteral("settings"), settings.isObject() ? settings.object() : QJsonObject{}},
                           {QStringLiteral("created"), iso_time(info->createdMs)},
                           {QStringLiteral("updated"), iso_time(info->updatedMs)},
                           {QStringLiteral("messages"), list}};
    return save_atomically(path, QJsonDocument(root).toJson(QJsonDocument::Indented));
}

} // namespace cflow::ui
