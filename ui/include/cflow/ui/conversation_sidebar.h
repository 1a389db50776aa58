#pragma once
// The conversation list beside the chat: search filter, New, Rename, Delete. Reads and
// writes through the ConversationStore it is given (not owned). Titles are listed as plain
// text (plain_title), elided at the right, with the full title as the tooltip.
#include <QWidget>

class QLineEdit;
class QListWidget;

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
    bool deleteConversation(qint64 id);
    qint64 selectedId() const;
    QListWidget* list() const { return list_; }

signals:
    void conversationActivated(qint64 id);
    void newConversationRequested();
    void conversationDeleted(qint64 id);
    void deleteRequested(qint64 id);  // the user confirmed deleting it
    void storeError(const QString& message);

private:
    void askRename();
    void askDelete();

    ConversationStore* store_;
    QLineEdit* search_;
    QListWidget* list_;
};

} // namespace cflow::ui
