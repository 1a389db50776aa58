// Markdown and JSON exports of one conversation. QSaveFile writes a temporary file and
// renames it over the target on commit, so a failed export never leaves a partial file.
#include <QDateTime>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>

#include "cflow/ui/conversation_store.h"

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

QString role_heading(const QString& role) {
    if (role.isEmpty()) return role;
    return role.left(1).toUpper() + role.mid(1);
}

} // namespace

Status ConversationStore::exportMarkdown(qint64 conversationId, const QString& path) const {
    auto info = conversation(conversationId);
    if (!info) return info.take_error();
    auto messages = this->messages(conversationId);
    if (!messages) return messages.take_error();

    QString text = QStringLiteral("# %1\n\n").arg(info->title);
    if (!info->modelPath.isEmpty()) text += QStringLiteral("Model: `%1`  \n").arg(info->modelPath);
    text += QStringLiteral("Created: %1\n").arg(iso_time(info->createdMs));
    for (const StoredMessage& m : *messages) {
        text += QStringLiteral("\n## %1%2\n\n").arg(role_heading(m.role), m.complete ? QString() : QStringLiteral(" (incomplete)"));
        text += m.content;
        text += u'\n';
    }
    return save_atomically(path, text.toUtf8());
}

Status ConversationStore::exportJson(qint64 conversationId, const QString& path) const {
    auto info = conversation(conversationId);
    if (!info) return info.take_error();
    auto messages = this->messages(conversationId);
    if (!messages) return messages.take_error();

    QJsonArray list;
    for (const StoredMessage& m : *messages)
        list.append(QJsonObject{{QStringLiteral("role"), m.role},
                                {QStringLiteral("content"), m.content},
                                {QStringLiteral("created"), iso_time(m.createdMs)},
                                {QStringLiteral("complete"), m.complete}});
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
