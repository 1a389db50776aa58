#include "cflow/ui/conversation_sidebar.h"

#include <QHBoxLayout>
#include <QInputDialog>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QVBoxLayout>

#include "cflow/ui/conversation_store.h"

namespace cflow::ui {

ConversationSidebar::ConversationSidebar(ConversationStore* store, QWidget* parent)
    : QWidget(parent), store_(store), search_(new QLineEdit(this)), list_(new QListWidget(this)) {
    auto* layout = new QVBoxLayout(this);
    search_->setPlaceholderText(tr("Search conversations…"));
    search_->setClearButtonEnabled(true);
    layout->addWidget(search_);
    layout->addWidget(list_, 1);
    auto* buttons = new QHBoxLayout;
    auto* add = new QPushButton(tr("New"), this);
    auto* rename = new QPushButton(tr("Rename"), this);
    auto* remove = new QPushButton(tr("Delete"), this);
    buttons->addWidget(add);
    buttons->addWidget(rename);
    buttons->addWidget(remove);
    layout->addLayout(buttons);

    connect(search_, &QLineEdit::textChanged, this, [this] { refresh(selectedId()); });
    connect(add, &QPushButton::clicked, this, &ConversationSidebar::newConversationRequested);
    connect(rename, &QPushButton::clicked, this, &ConversationSidebar::askRename);
    connect(remove, &QPushButton::clicked, this, &ConversationSidebar::askDelete);
    connect(list_, &QListWidget::itemClicked, this,
            [this](QListWidgetItem* item) { emit conversationActivated(item->data(Qt::UserRole).toLongLong()); });
    refresh();
}

void ConversationSidebar::setFilter(const QString& text) { search_->setText(text); }

void ConversationSidebar::refresh(qint64 selectId) {
    auto listed = store_->conversations(search_->text().trimmed());
    if (!listed) {
        emit storeError(QString::fromStdString(listed.error()));
        return;
    }
    const QSignalBlocker blocker(list_);
    list_->clear();
    for (const ConversationInfo& info : *listed) {
        auto* item = new QListWidgetItem(info.title, list_);
        item->setData(Qt::UserRole, info.id);
        item->setToolTip(info.modelPath);
        if (info.id == selectId) list_->setCurrentItem(item);
    }
}

qint64 ConversationSidebar::selectedId() const {
    const QListWidgetItem* item = list_->currentItem();
    return item ? item->data(Qt::UserRole).toLongLong() : 0;
}

bool ConversationSidebar::renameConversation(qint64 id, const QString& title) {
    if (Status s = store_->renameConversation(id, title); !s) {
        emit storeError(QString::fromStdString(s.error()));
        return false;
    }
    refresh(id);
    return true;
}

bool ConversationSidebar::deleteConversation(qint64 id) {
    if (Status s = store_->deleteConversation(id); !s) {
        emit storeError(QString::fromStdString(s.error()));
        return false;
    }
    refresh();
    emit conversationDeleted(id);
    return true;
}

void ConversationSidebar::askRename() {
    const qint64 id = selectedId();
    if (id == 0) return;
    bool ok = false;
    const QString title = QInputDialog::getText(this, tr("Rename conversation"), tr("Title:"), QLineEdit::Normal,
                                                list_->currentItem()->text(), &ok);
    if (ok && !title.trimmed().isEmpty()) renameConversation(id, title.trimmed());
}

void ConversationSidebar::askDelete() {
    const qint64 id = selectedId();
    if (id == 0) return;
    if (QMessageBox::question(this, tr("Delete conversation"),
                              tr("Delete \"%1\" and all its messages?").arg(list_->currentItem()->text())) ==
        QMessageBox::Yes)
        emit deleteRequested(id);  // the chat controller deletes it (after stopping a reply into it)
}

} // namespace cflow::ui
