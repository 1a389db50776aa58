#include "cflow/ui/conversation_sidebar.h"

#include <algorithm>

#include <QFontMetrics>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QVBoxLayout>

#include "cflow/ui/conversation_store.h"
#include "labelled_button.h"
#include "cflow/ui/conversation_title.h"

namespace cflow::ui {
namespace {

// Past this a title is cut in the list text (the view also elides to its width); the
// tooltip keeps all of it.
constexpr int kListTitleChars = 120;
// Room beside the text of the rename dialog's title for the title bar's icon and buttons.
constexpr int kTitleBarMarginPx = 160;
// An item's plain title and tooltip without the "writing…" mark markBusy() adds to what it shows.
constexpr int kTitleRole = Qt::UserRole + 1;
constexpr int kTipRole = Qt::UserRole + 2;


} // namespace

ConversationSidebar::ConversationSidebar(ConversationStore* store, QWidget* parent)
    : QWidget(parent), store_(store), search_(new QLineEdit(this)), list_(new QListWidget(this)) {
    auto* layout = new QVBoxLayout(this);
    search_->setPlaceholderText(tr("Search conversations…"));
    search_->setClearButtonEnabled(true);
    search_->setAccessibleName(tr("Search conversations"));
    list_->setAccessibleName(tr("Conversations"));
    list_->setTextElideMode(Qt::ElideRight);
    list_->setWordWrap(false);
    layout->addWidget(search_);
    layout->addWidget(list_, 1);
    auto* buttons = new QHBoxLayout;
    auto* add = labelled_button(tr("New"), QStringLiteral("newConversationButton"), tr("New conversation"), this,
                                tr("Start a new conversation"));
    auto* rename = labelled_button(tr("Rename"), QStringLiteral("renameConversationButton"), tr("Rename conversation"),
                                   this, tr("Rename the selected conversation"));
    auto* remove = labelled_button(tr("Delete"), QStringLiteral("deleteConversationButton"), tr("Delete conversation"),
                                   this, tr("Delete the selected conversation and its messages"));
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
    list_->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(list_, &QListWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
        const int row = list_->row(list_->itemAt(pos));
        if (QMenu* menu = contextMenuFor(row)) menu->popup(list_->viewport()->mapToGlobal(pos));
    });
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
        // Titles are stored as typed (often Markdown); the list shows them plain.
        auto* item = new QListWidgetItem(list_);
        item->setData(Qt::UserRole, info.id);
        const QString fullTitle = plain_title(info.title, 0);
        item->setData(kTitleRole, plain_title(info.title, kListTitleChars));
        item->setData(kTipRole, info.modelPath.isEmpty() ? fullTitle : fullTitle + u'\n' + info.modelPath);
        if (info.id == selectId) list_->setCurrentItem(item);
    }
    markBusy();
}

void ConversationSidebar::setBusyConversation(qint64 id) {
    if (id == busyId_) return;
    busyId_ = id;
    markBusy();
}

void ConversationSidebar::markBusy() {
    for (int i = 0; i < list_->count(); ++i) {
        QListWidgetItem* item = list_->item(i);
        const bool busy = busyId_ != 0 && item->data(Qt::UserRole).toLongLong() == busyId_;
        const QString title = item->data(kTitleRole).toString(), tip = item->data(kTipRole).toString();
        item->setText(busy ? title + tr(" — writing…") : title);
        item->setToolTip(busy ? tip + tr("\nA reply is being written here (right-click: Stop the reply).") : tip);
        QFont font = item->font();
        font.setBold(busy);
        item->setFont(font);
    }
}

QMenu* ConversationSidebar::contextMenuFor(int row) {
    QListWidgetItem* item = list_->item(row);
    if (!item) return nullptr;
    const qint64 id = item->data(Qt::UserRole).toLongLong();
    list_->setCurrentItem(item);
    auto* menu = new QMenu(this);
    menu->setObjectName(QStringLiteral("conversationMenu"));
    menu->setAttribute(Qt::WA_DeleteOnClose);
    if (id == busyId_) {
        QAction* stop = menu->addAction(tr("&Stop the reply"), this, [this, id] { emit stopRequested(id); });
        stop->setObjectName(QStringLiteral("stopReplyAction"));
    }
    menu->addAction(tr("&Rename…"), this, &ConversationSidebar::askRename);
    menu->addAction(tr("&Delete…"), this, &ConversationSidebar::askDelete);
    return menu;
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

void ConversationSidebar::askRename() {
    const qint64 id = selectedId();
    if (id == 0) return;
    // An object rather than QInputDialog::getText: its width can be made to fit its title,
    // and open() does not block (a test can find the dialog among the top-level widgets).
    auto* dialog = new QInputDialog(this);
    dialog->setObjectName(QStringLiteral("renameDialog"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(tr("Rename conversation"));
    dialog->setLabelText(tr("Title:"));
    const auto info = store_->conversation(id);
    dialog->setTextValue(info ? plain_title(info->title, 0) : list_->currentItem()->data(kTitleRole).toString());
    // QInputDialog's layout sets the dialog's minimum size itself (SetMinAndMaxSize), so the
    // width goes on its text field.
    const QFontMetrics metrics = dialog->fontMetrics();
    const int titleWidthPx =
        std::max(metrics.horizontalAdvance(dialog->windowTitle()), metrics.horizontalAdvance(dialog->labelText()));
    if (auto* field = dialog->findChild<QLineEdit*>()) field->setMinimumWidth(titleWidthPx + kTitleBarMarginPx);
    connect(dialog, &QInputDialog::textValueSelected, this, [this, id](const QString& title) {
        if (!title.trimmed().isEmpty()) renameConversation(id, title.trimmed());
    });
    dialog->open();
}

void ConversationSidebar::askDelete() {
    const qint64 id = selectedId();
    if (id == 0) return;
    if (QMessageBox::question(this, tr("Delete conversation"),
                              tr("Delete \"%1\" and all its messages?").arg(list_->currentItem()->data(kTitleRole).toString())) ==
        QMessageBox::Yes)
        emit deleteRequested(id);  // the chat controller deletes it (after stopping a reply into it)
}

} // namespace cflow::ui
