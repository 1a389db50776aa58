#pragma once
// The tools of the shown conversation: a fresh ToolRegistry per conversation holding the
// built-in tools (calculator, date and time, the files the user picked) and the conversation's
// MCP servers (started when the conversation opens), with its setup saved in the conversation
// database (ConversationToolsStore) whenever the user changes it. The chat offers
// registry()->enabledTools() to the model and runs approved calls through registry()->call().
#include <memory>

#include <QObject>
#include <QPointer>

#include "cflow/ui/tools/conversation_tools_store.h"
#include "cflow/ui/tools/tool_registry.h"

namespace cflow::ui {

class McpClient;
class PickedFilesTool;

class ConversationToolbox : public QObject {
    Q_OBJECT
public:
    // databasePath: the conversation database ("" keeps the setup in memory only, as does a
    // database that cannot be opened: storeError() says why).
    explicit ConversationToolbox(const QString& databasePath, QObject* parent = nullptr);
    ~ConversationToolbox() override;

    // Shows conversationId's tools (0: a conversation not created yet). The conversation the chat
    // creates from the unsaved one (no message stored yet) keeps the setup made while it was 0,
    // saved under its id; an older conversation without a saved setup gets the default one.
    void openConversation(qint64 conversationId);
    qint64 conversationId() const { return conversationId_; }
    ToolRegistry* registry() const { return registry_; }
    const ConversationToolSetup& setup() const { return setup_; }
    const QString& storeError() const { return storeError_; }

    // Each saves the setup; Status errors say why (a clashing or duplicate name, a bad config).
    QStringList pickFiles(const QStringList& paths);  // refusals, one line each
    void removePickedFile(const QString& fileName);
    Status addMcpServer(const McpServerConfig& config);
    Status replaceMcpServer(const QString& name, const McpServerConfig& config);
    Status removeMcpServer(const QString& name);
    Status restartMcpServer(const QString& name);
    Status setProviderEnabled(const QString& providerName, bool enabled);

    PickedFilesTool* pickedFiles() const;
    McpClient* mcpClient(const QString& name) const;

signals:
    void registryReplaced(cflow::ui::ToolRegistry* registry);  // another conversation's tools
    void setupChanged();

private:
    void rebuild();
    void save();
    McpClient* startMcp(const McpServerConfig& config, bool enabled);

    std::unique_ptr<ConversationToolsStore> store_;
    QString storeError_;
    qint64 conversationId_ = 0;
    ConversationToolSetup setup_;
    QPointer<ToolRegistry> registry_;
};

} // namespace cflow::ui
