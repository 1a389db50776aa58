#include "cflow/ui/tools/tools_panel.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMetaObject>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "cflow/ui/tools/conversation_toolbox.h"
#include "cflow/ui/tools/mcp_client.h"
#include "cflow/ui/tools/mcp_server_dialog.h"
#include "cflow/ui/tools/picked_files_tool.h"
#include "qt_text.h"

namespace cflow::ui {
namespace {
constexpr int kToolsPanelProviderRole = Qt::UserRole + 1;  // the provider name of a row and its tool rows
}

ToolsPanel::ToolsPanel(ConversationToolbox* toolbox, QWidget* parent) : QWidget(parent), toolbox_(toolbox) {
    setObjectName(QStringLiteral("toolsPanel"));
    auto* heading = new QLabel(tr("Tools the model may call in this conversation. Every call is shown for your "
                                  "approval before it runs."),
                               this);
    heading->setWordWrap(true);
    tree_ = new QTreeWidget(this);
    tree_->setObjectName(QStringLiteral("toolsTree"));
    tree_->setAccessibleName(tr("Tool providers and their tools"));
    tree_->setColumnCount(2);
    tree_->setHeaderLabels({tr("Tool"), tr("What it does")});
    tree_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    tree_->setWordWrap(true);
    message_ = new QLabel(this);
    message_->setObjectName(QStringLiteral("toolsMessage"));
    message_->setWordWrap(true);
    message_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    pick_ = new QPushButton(tr("&Pick files…"), this);
    pick_->setObjectName(QStringLiteral("pickFilesButton"));
    pick_->setToolTip(tr("Files the model may read with read_file (text, up to %1 KiB each); nothing else on disk")
                          .arg(PickedFilesTool::kDefaultMaxBytes / 1024));
    auto* add = new QPushButton(tr("&Add MCP server…"), this);
    add->setObjectName(QStringLiteral("addMcpServerButton"));
    edit_ = new QPushButton(tr("&Edit…"), this);
    edit_->setObjectName(QStringLiteral("editMcpServerButton"));
    restart_ = new QPushButton(tr("Re&start"), this);
    restart_->setObjectName(QStringLiteral("restartMcpServerButton"));
    remove_ = new QPushButton(tr("&Remove"), this);
    remove_->setObjectName(QStringLiteral("removeToolButton"));
    remove_->setToolTip(tr("Removes the selected MCP server, or the selected picked file"));

    connect(pick_, &QPushButton::clicked, this, [this] {
        const QStringList paths = QFileDialog::getOpenFileNames(this, tr("Files the model may read"));
        if (!paths.isEmpty()) pickFiles(paths);
    });
    connect(add, &QPushButton::clicked, this, [this] { addServer(); });
    connect(edit_, &QPushButton::clicked, this, [this] { editServer(); });
    connect(restart_, &QPushButton::clicked, this, &ToolsPanel::restartServer);
    connect(remove_, &QPushButton::clicked, this, &ToolsPanel::removeServer);
    connect(tree_, &QTreeWidget::itemChanged, this, &ToolsPanel::onItemChanged);
    connect(tree_, &QTreeWidget::itemSelectionChanged, this, [this] {
        const bool mcp = toolbox_->mcpClient(selectedProvider()) != nullptr;
        edit_->setEnabled(mcp);
        restart_->setEnabled(mcp);
        QTreeWidgetItem* item = tree_->currentItem();
        const bool pickedFile = item && item->parent() && qobject_cast<PickedFilesTool*>(toolbox_->pickedFiles()) &&
                                selectedProvider() == toolbox_->pickedFiles()->name();
        remove_->setEnabled(mcp || pickedFile);
    });

    auto* buttons = new QHBoxLayout;
    for (QPushButton* b : {pick_, add, edit_, restart_, remove_}) buttons->addWidget(b);
    buttons->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(heading);
    layout->addWidget(tree_, 1);
    layout->addWidget(message_);
    layout->addLayout(buttons);

    connect(toolbox_, &ConversationToolbox::registryReplaced, this, [this](ToolRegistry* registry) {
        connect(registry, &ToolRegistry::changed, this, &ToolsPanel::refresh);
        refresh();
    });
    connect(toolbox_, &ConversationToolbox::setupChanged, this, &ToolsPanel::refresh);
    connect(toolbox_->registry(), &ToolRegistry::changed, this, &ToolsPanel::refresh);
    refresh();
}

void ToolsPanel::refresh() {
    refreshing_ = true;
    const QString selected = selectedProvider();
    tree_->clear();
    ToolRegistry* registry = toolbox_->registry();
    for (ToolProvider* provider : registry->providers()) {
        auto* row = new QTreeWidgetItem(tree_, {provider->name(), provider->summary()});
        row->setData(0, kToolsPanelProviderRole, provider->name());
        row->setFlags(row->flags() | Qt::ItemIsUserCheckable);
        row->setCheckState(0, registry->isEnabled(provider->name()) ? Qt::Checked : Qt::Unchecked);
        row->setToolTip(1, provider->summary());
        if (auto* files = qobject_cast<PickedFilesTool*>(provider)) {
            for (const QString& path : files->paths()) {
                auto* file = new QTreeWidgetItem(row, {QFileInfo(path).fileName(), QDir::toNativeSeparators(path)});
                file->setData(0, kToolsPanelProviderRole, provider->name());
            }
        } else {
            for (const cflow::ToolDefinition& tool : provider->tools()) {
                auto* child = new QTreeWidgetItem(row, {qt(tool.name), qt(tool.description)});
                child->setData(0, kToolsPanelProviderRole, provider->name());
                child->setToolTip(1, qt(tool.description));
            }
        }
        row->setExpanded(true);
        if (provider->name() == selected) tree_->setCurrentItem(row);
    }
    QStringList notes;
    if (!registry->notice().isEmpty()) notes << registry->notice();
    if (!toolbox_->storeError().isEmpty()) notes << tr("Not saved: %1").arg(toolbox_->storeError());
    if (!lastMessage_.isEmpty() && !notes.contains(lastMessage_)) notes.prepend(lastMessage_);
    message_->setText(notes.join(QLatin1Char('\n')));
    message_->setVisible(!notes.isEmpty());
    const bool mcp = toolbox_->mcpClient(selectedProvider()) != nullptr;
    edit_->setEnabled(mcp);
    restart_->setEnabled(mcp);
    remove_->setEnabled(mcp);
    refreshing_ = false;
}

void ToolsPanel::showMessage(const QString& message) {
    lastMessage_ = message;
    emit messageShown(message);
    refresh();
}

QString ToolsPanel::selectedProvider() const {
    const QTreeWidgetItem* item = tree_->currentItem();
    return item ? item->data(0, kToolsPanelProviderRole).toString() : QString();
}

void ToolsPanel::onItemChanged(QTreeWidgetItem* item, int column) {
    if (refreshing_ || column != 0 || item->parent()) return;
    const QString name = item->data(0, kToolsPanelProviderRole).toString();
    const bool enabled = item->checkState(0) == Qt::Checked;
    // Later, not inside the tree's own signal: the change refreshes the tree, which deletes the
    // item that is still emitting.
    QMetaObject::invokeMethod(
        this,
        [this, name, enabled] {
            const Status status = toolbox_->setProviderEnabled(name, enabled);
            showMessage(status ? QString() : qt(status.error()));
        },
        Qt::QueuedConnection);
}

void ToolsPanel::pickFiles(const QStringList& paths) {
    const QStringList refusals = toolbox_->pickFiles(paths);
    showMessage(refusals.join(QLatin1Char('\n')));
}

McpServerDialog* ToolsPanel::addServer() {
    auto* dialog = new McpServerDialog({}, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog] {
        const Status added = toolbox_->addMcpServer(dialog->config());
        showMessage(added ? tr("Starting MCP server %1…").arg(dialog->config().name) : qt(added.error()));
    });
    dialog->open();
    return dialog;
}

McpServerDialog* ToolsPanel::editServer() {
    McpClient* client = toolbox_->mcpClient(selectedProvider());
    if (!client) return nullptr;
    const QString name = client->name();
    auto* dialog = new McpServerDialog(client->config(), this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog, name] {
        const Status replaced = toolbox_->replaceMcpServer(name, dialog->config());
        showMessage(replaced ? tr("Restarting MCP server %1…").arg(dialog->config().name) : qt(replaced.error()));
    });
    dialog->open();
    return dialog;
}

void ToolsPanel::removeServer() {
    QTreeWidgetItem* item = tree_->currentItem();
    if (!item) return;
    const QString provider = selectedProvider();
    if (toolbox_->mcpClient(provider)) {
        const Status removed = toolbox_->removeMcpServer(provider);
        showMessage(removed ? tr("Removed MCP server %1.").arg(provider) : qt(removed.error()));
    } else if (item->parent() && toolbox_->pickedFiles() && provider == toolbox_->pickedFiles()->name()) {
        const QString fileName = item->text(0);
        toolbox_->removePickedFile(fileName);
        showMessage(tr("The model can no longer read %1.").arg(fileName));
    }
}

void ToolsPanel::restartServer() {
    const QString provider = selectedProvider();
    const Status restarted = toolbox_->restartMcpServer(provider);
    showMessage(restarted ? tr("Restarting MCP server %1…").arg(provider) : qt(restarted.error()));
}

} // namespace cflow::ui
