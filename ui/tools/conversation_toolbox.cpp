#include "cflow/ui/tools/conversation_toolbox.h"

#include <QFileInfo>

#include "cflow/ui/tools/calculator_tool.h"
#include "cflow/ui/tools/clock_tool.h"
#include "cflow/ui/tools/mcp_client.h"
#include "cflow/ui/tools/picked_files_tool.h"
#include "qt_text.h"

namespace cflow::ui {

ConversationToolbox::ConversationToolbox(const QString& databasePath, QObject* parent) : QObject(parent) {
    if (!databasePath.isEmpty()) {
        auto opened = ConversationToolsStore::open(databasePath);
        if (opened)
            store_ = std::move(*opened);
        else
            storeError_ = qt(opened.error());
    }
    rebuild();
}

ConversationToolbox::~ConversationToolbox() = default;

void ConversationToolbox::openConversation(qint64 conversationId) {
    if (conversationId == conversationId_ && registry_) return;
    const qint64 previous = conversationId_;
    conversationId_ = conversationId;
    ConversationToolSetup loaded;
    bool found = false;
    bool justCreated = false;
    if (store_ && conversationId != 0) {
        auto row = store_->load(conversationId);
        if (row) {
            found = row->found;
            loaded = row->setup;
        } else {
            storeError_ = qt(row.error());
        }
        auto empty = store_->hasNoMessages(conversationId);
        justCreated = empty && *empty;
    }
    if (found) {
        setup_ = loaded;
    } else if (previous == 0 && justCreated) {
        // The conversation was just created from the unsaved one: it keeps what was set up.
        save();
        return;  // the registry already holds this setup
    } else {
        setup_ = {};
    }
    rebuild();
}

McpClient* ConversationToolbox::startMcp(const McpServerConfig& config, bool enabled) {
    auto client = std::make_unique<McpClient>(config);
    McpClient* started = client.get();
    const Status added = registry_->addProvider(std::move(client), enabled);
    (void)added;  // a clash leaves it disabled; the registry's notice says why
    if (registry_->provider(config.name) != started) return nullptr;
    started->start();  // resolves on its own; the Tools panel follows toolsChanged
    return started;
}

void ConversationToolbox::rebuild() {
    if (registry_) registry_->deleteLater();  // calls still running on its providers resolve with errors
    registry_ = new ToolRegistry(this);
    auto files = std::make_unique<PickedFilesTool>();
    files->addFiles(setup_.pickedFiles);
    std::vector<std::unique_ptr<ToolProvider>> builtIns;
    builtIns.push_back(std::make_unique<CalculatorTool>());
    builtIns.push_back(std::make_unique<ClockTool>());
    builtIns.push_back(std::move(files));
    for (auto& provider : builtIns) {
        const bool enabled = !setup_.disabledProviders.contains(provider->name());
        (void)registry_->addProvider(std::move(provider), enabled);
    }
    for (const McpServerConfig& config : setup_.mcpServers) startMcp(config, !setup_.disabledProviders.contains(config.name));
    emit registryReplaced(registry_);
    emit setupChanged();
}

void ConversationToolbox::save() {
    if (!store_ || conversationId_ == 0) return;  // a conversation not created yet: saved when it is
    const Status saved = store_->save(conversationId_, setup_);
    storeError_ = saved ? QString() : qt(saved.error());
}

PickedFilesTool* ConversationToolbox::pickedFiles() const {
    for (ToolProvider* p : registry_->providers())
        if (auto* files = qobject_cast<PickedFilesTool*>(p)) return files;
    return nullptr;
}

McpClient* ConversationToolbox::mcpClient(const QString& name) const {
    return qobject_cast<McpClient*>(registry_->provider(name));
}

QStringList ConversationToolbox::pickFiles(const QStringList& paths) {
    PickedFilesTool* files = pickedFiles();
    if (!files) return {};
    const QStringList refusals = files->addFiles(paths);
    setup_.pickedFiles = files->paths();
    save();
    emit setupChanged();
    return refusals;
}

void ConversationToolbox::removePickedFile(const QString& fileName) {
    PickedFilesTool* files = pickedFiles();
    if (!files) return;
    files->removeFile(fileName);
    setup_.pickedFiles = files->paths();
    save();
    emit setupChanged();
}

Status ConversationToolbox::addMcpServer(const McpServerConfig& config) {
    const QString problem = config.problem();
    if (!problem.isEmpty()) return make_error(utf8(problem));
    if (registry_->provider(config.name))
        return make_error(utf8(tr("a tool provider named %1 is here already; choose another name").arg(config.name)));
    setup_.mcpServers << config;
    startMcp(config, true);
    save();
    emit setupChanged();
    return {};
}

Status ConversationToolbox::replaceMcpServer(const QString& name, const McpServerConfig& config) {
    const QString problem = config.problem();
    if (!problem.isEmpty()) return make_error(utf8(problem));
    qsizetype index = -1;
    for (qsizetype i = 0; i < setup_.mcpServers.size(); ++i)
        if (setup_.mcpServers[i].name == name) index = i;
    if (index < 0) return make_error(utf8(tr("no MCP server is named %1").arg(name)));
    if (config.name != name && registry_->provider(config.name))
        return make_error(utf8(tr("a tool provider named %1 is here already; choose another name").arg(config.name)));
    const bool enabled = registry_->isEnabled(name);
    (void)registry_->removeProvider(name);
    setup_.mcpServers[index] = config;
    setup_.disabledProviders.removeAll(name);
    if (!enabled) setup_.disabledProviders << config.name;
    startMcp(config, enabled);
    save();
    emit setupChanged();
    return {};
}

Status ConversationToolbox::removeMcpServer(const QString& name) {
    const qsizetype before = setup_.mcpServers.size();
    setup_.mcpServers.removeIf([&](const McpServerConfig& c) { return c.name == name; });
    if (setup_.mcpServers.size() == before) return make_error(utf8(tr("no MCP server is named %1").arg(name)));
    setup_.disabledProviders.removeAll(name);
    (void)registry_->removeProvider(name);  // kills its process
    save();
    emit setupChanged();
    return {};
}

Status ConversationToolbox::restartMcpServer(const QString& name) {
    McpClient* client = mcpClient(name);
    if (!client) return make_error(utf8(tr("no MCP server is named %1").arg(name)));
    client->start();
    return {};
}

Status ConversationToolbox::setProviderEnabled(const QString& providerName, bool enabled) {
    Status status = registry_->setEnabled(providerName, enabled);
    if (!status) return status;
    setup_.disabledProviders.removeAll(providerName);
    if (!enabled) setup_.disabledProviders << providerName;
    save();
    emit setupChanged();
    return {};
}

} // namespace cflow::ui
