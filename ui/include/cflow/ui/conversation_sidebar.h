#pragma once
// The conversation list beside the chat: search filter, New, Rename, Delete. Reads and
// writes through the ConversationStore it is given (not owned). Titles are listed as plain
// text (plain_title), elided at the right, with the full title as the tooltip. The conversation a
// reply streams into is marked ("✎ writing…" and a bold title) and its context menu offers Stop.
#include <QWidget>

class QLineEdit;
class QListWidget;
class QMenu;

namespace cflow::ui {

class ConversationStore;

class ConversationSidebar : public QWidget {
    Q_OBJECT
public:
    explicit ConversationSidebar(ConversationStore* store, QWidget* parent = nullptr);

    // Reloads the list with the current filter and selects id when it is listed.
    void refresh(qint64 selectId = 0);
    void setFilter(const QString& text);
    bool renameConversation(qint64 id, const QString& title);
    qint64 selectedId() const;
    // The conversation a reply is streaming into (0: none); marked in the list.
    void setBusyConversation(qint64 id);
    qint64 busyConversation() const { return busyId_; }
    // The list's context menu for the conversation at row (Rename, Delete, and Stop the reply when busy).
    QMenu* contextMenuFor(int row);
    QListWidget* list() const { return list_; }

signals:
    void conversationActivated(qint64 id);
    void newConversationRequested();
    void deleteRequested(qint64 id);  // the user confirmed deleting it
    void stopRequested(qint64 id);    // stop the reply streaming into it
    void storeError(const QString& message);

private:
    void askRename();
    void askDelete();

    void markBusy();

    ConversationStore* store_;
    qint64 busyId_ = 0;
    QLineEdit* search_;
    QListWidget* list_;
};

} // namespace cflow::ui
