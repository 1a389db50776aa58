#pragma once
// Conversations and their messages in one SQLite file (Qt SQL, QSQLITE driver), WAL
// journal. Every write is its own committed transaction, so a crash of the app loses at
// most the write in flight: an assistant reply is inserted with complete = 0 when it
// starts, its text updated as it streams, and marked complete when it ends.
// One store per thread (a QSqlDatabase connection is not shared across threads).
#include <memory>
#include <vector>

#include <QString>
#include <QStringList>
#include <QtGlobal>

#include "cflow/base/result.h"

namespace cflow::ui {

struct ConversationInfo {
    qint64 id = 0;
    QString title;
    QString modelPath;      // model used by this conversation ("" = none chosen)
    QString settingsJson;   // sampling settings as a JSON object text
    qint64 createdMs = 0;   // ms since the Unix epoch, UTC
    qint64 updatedMs = 0;
};

struct StoredMessage {
    qint64 id = 0;
    qint64 conversationId = 0;
    QString role;           // "system", "user", "assistant"
    QString content;
    qint64 createdMs = 0;
    bool complete = true;   // false while (or if a crash happened while) the reply streamed
    QString modelPath;      // assistant replies: the model that wrote it ("" for older rows)
    bool stopped = false;   // the user stopped the reply
    QStringList versions;   // every regenerated text of this reply, oldest first; always holds content
    int version = 0;        // versions[version] == content
    // ChatMessage::extra_json: an assistant's {"tool_calls": [...]}, a tool result's
    // {"tool_call_id", "name"}; "" for plain messages and older rows.
    QString extraJson;
    QString cutReason;      // a reply its server cut (time-out, connection lost): why; "" otherwise
};

// CFLOW_STUDIO_DB when set, else AppDataLocation/cflow-studio.sqlite (folder created).
QString default_database_path();

class ConversationStore {
public:
    // Opens (creating if needed) the database at path and applies the schema. Read-only: opens
    // an existing file without writing anything (every change then fails with the driver's
    // "readonly database" error); its tables must be there.
    enum class Access { ReadWrite, ReadOnly };
    static Result<std::unique_ptr<ConversationStore>> open(const QString& path, Access access = Access::ReadWrite);
    ~ConversationStore();
    ConversationStore(const ConversationStore&) = delete;
    ConversationStore& operator=(const ConversationStore&) = delete;

    const QString& path() const { return path_; }

    Result<qint64> createConversation(const QString& title, const QString& modelPath = {},
                                      const QString& settingsJson = QStringLiteral("{}"));
    Status renameConversation(qint64 id, const QString& title);
    Status deleteConversation(qint64 id);  // its messages go with it
    Status setModel(qint64 id, const QString& modelPath);
    Status setSettings(qint64 id, const QString& settingsJson);
    Result<ConversationInfo> conversation(qint64 id) const;
    // Newest first; a non-empty filter keeps conversations whose title or any message contains it
    // (case-insensitive for ASCII).
    Result<std::vector<ConversationInfo>> conversations(const QString& filter = {}) const;

    Result<qint64> addMessage(qint64 conversationId, const QString& role, const QString& content, bool complete = true,
                              const QString& extraJson = {});
    Status updateMessage(qint64 messageId, const QString& content, bool complete);
    Status setReplyDetails(qint64 messageId, const QString& modelPath, bool stopped, const QString& cutReason = QString());
    // The message's tool calls or tool-result ids (StoredMessage::extraJson).
    Status setExtra(qint64 messageId, const QString& extraJson);
    // Keeps every regenerated text of a reply; content becomes versions[shown].
    Status setVersions(qint64 messageId, const QStringList& versions, int shown);
    // Removes messageId and every later message of its conversation (edit and resend, regenerate).
    Status deleteMessagesFrom(qint64 conversationId, qint64 messageId);
    Result<std::vector<StoredMessage>> messages(qint64 conversationId) const;

    // Written to a temporary file and renamed over path (QSaveFile).
    Status exportMarkdown(qint64 conversationId, const QString& path) const;
    Status exportJson(qint64 conversationId, const QString& path) const;

    // PRAGMA integrity_check: "ok" for a sound file.
    Result<QString> integrityCheck() const;
    // PRAGMA quick_check (one pass over the pages, O(size); no index cross-check): "ok" for a
    // sound file, else what is wrong, one problem per line. Run at every start.
    Result<QString> quickCheck() const;
    bool readOnly() const { return readOnly_; }

private:
    ConversationStore(QString path, QString connection);
    Status touch(qint64 conversationId);

    QString path_;
    QString connection_;  // this store's QSqlDatabase connection name
    bool readOnly_ = false;
};

} // namespace cflow::ui
