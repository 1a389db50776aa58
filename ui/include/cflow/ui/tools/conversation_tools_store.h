#pragma once
// Each conversation's tool setup, kept in the conversation database beside its messages: a table
// of its own (conversation_tools, created on open like the store's other tables; its rows go with
// their conversation, ON DELETE CASCADE). Its own connection, on the GUI thread.
#include <memory>

#include <QList>
#include <QString>
#include <QStringList>

#include "cflow/base/result.h"
#include "cflow/ui/tools/mcp_server_config.h"

namespace cflow::ui {

struct ConversationToolSetup {
    QList<McpServerConfig> mcpServers;
    QStringList disabledProviders;  // provider names the user turned off (the others are on)
    QStringList pickedFiles;        // absolute paths read_file may read
    bool operator==(const ConversationToolSetup&) const = default;
};

class ConversationToolsStore {
public:
    static Result<std::unique_ptr<ConversationToolsStore>> open(const QString& databasePath);
    ~ConversationToolsStore();
    ConversationToolsStore(const ConversationToolsStore&) = delete;
    ConversationToolsStore& operator=(const ConversationToolsStore&) = delete;

    // nullopt-like: found = false when the conversation has no row yet (its setup is the default).
    struct Loaded {
        bool found = false;
        ConversationToolSetup setup;
    };
    Result<Loaded> load(qint64 conversationId) const;
    Status save(qint64 conversationId, const ConversationToolSetup& setup);
    // Whether the conversation has no message yet: the chat creates a conversation when its first
    // message is sent, so an empty one is the one just created (read from the store's messages table).
    Result<bool> hasNoMessages(qint64 conversationId) const;

private:
    ConversationToolsStore(QString path, QString connection);
    QString path_;
    QString connection_;
};

} // namespace cflow::ui
