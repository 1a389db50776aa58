#pragma once
// Tools > Chat tools…: what the model may call in the shown conversation. One row per provider
// (checked = enabled; its state in the second column), its tools below it; buttons to pick the
// files read_file may read and to add, edit, restart or remove MCP servers. Changes are saved
// with the conversation (ConversationToolbox).
#include <QWidget>

class QLabel;
class QPushButton;
class QTreeWidget;
class QTreeWidgetItem;

namespace cflow::ui {

class ConversationToolbox;
class McpServerDialog;

class ToolsPanel : public QWidget {
    Q_OBJECT
public:
    explicit ToolsPanel(ConversationToolbox* toolbox, QWidget* parent = nullptr);
    QTreeWidget* tree() const { return tree_; }
    const QString& lastMessage() const { return lastMessage_; }

    // The buttons' actions; the dialogs they open are returned (window-modal, open()) so tests can
    // fill them in. Pick files takes the chosen paths directly.
    void pickFiles(const QStringList& paths);
    McpServerDialog* addServer();
    McpServerDialog* editServer();  // the selected MCP server; nullptr when none is selected
    void removeServer();
    void restartServer();

signals:
    void messageShown(const QString& message);

private:
    void refresh();
    void showMessage(const QString& message);
    QString selectedProvider() const;  // the provider of the selected row ("" when none)
    void onItemChanged(QTreeWidgetItem* item, int column);

    ConversationToolbox* toolbox_;
    QTreeWidget* tree_ = nullptr;
    QLabel* message_ = nullptr;
    QPushButton* pick_ = nullptr;
    QPushButton* edit_ = nullptr;
    QPushButton* remove_ = nullptr;
    QPushButton* restart_ = nullptr;
    QString lastMessage_;
    bool refreshing_ = false;  // itemChanged from refresh() itself is not the user's
};

} // namespace cflow::ui
