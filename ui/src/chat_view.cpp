#include "cflow/ui/chat_view.h"

#include <algorithm>

#include <QAbstractTextDocumentLayout>
#include <QClipboard>
#include <QFontDatabase>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollBar>
#include <QTextBrowser>
#include <QTimer>
#include <QVBoxLayout>

namespace cflow::ui {

ChatMessageCard::ChatMessageCard(const QString& role, const QString& text, QWidget* parent)
    : QWidget(parent), role_(role), browser_(new QTextBrowser(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    auto* header = new QHBoxLayout;
    auto* label = new QLabel(QStringLiteral("<b>%1</b>").arg(role.toHtmlEscaped()), this);
    header->addWidget(label);
    header->addStretch();
    if (role == QLatin1String("user")) {
        auto* edit = new QPushButton(tr("Edit"), this);
        edit->setObjectName(QStringLiteral("editButton"));
        connect(edit, &QPushButton::clicked, this, &ChatMessageCard::editRequested);
        header->addWidget(edit);
    }
    auto* copy = new QPushButton(tr("Copy"), this);
    copy->setObjectName(QStringLiteral("copyButton"));
    connect(copy, &QPushButton::clicked, this, [this] { QGuiApplication::clipboard()->setText(text_); });
    header->addWidget(copy);
    layout->addLayout(header);

    browser_->setOpenExternalLinks(true);
    browser_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    browser_->setFrameShape(QFrame::NoFrame);
    // Markdown code spans and blocks use the document's fixed-pitch font.
    browser_->document()->setDefaultStyleSheet(QStringLiteral("pre, code { font-family: monospace; }"));
    connect(browser_->document()->documentLayout(), &QAbstractTextDocumentLayout::documentSizeChanged, this,
            [this] { fitHeight(); });
    layout->addWidget(browser_);
    setText(text);
}

void ChatMessageCard::setText(const QString& text) {
    text_ = text;
    browser_->setMarkdown(text);
    fitHeight();
}

void ChatMessageCard::fitHeight() {
    // The card grows with its text; the chat view scrolls, not the card.
    browser_->document()->setTextWidth(browser_->viewport()->width());
    const int height = static_cast<int>(browser_->document()->size().height()) + 8;
    browser_->setFixedHeight(std::max(height, 24));
}

ChatView::ChatView(QWidget* parent) : QScrollArea(parent) {
    auto* content = new QWidget(this);
    column_ = new QVBoxLayout(content);
    column_->addStretch();
    setWidget(content);
    setWidgetResizable(true);
}

int ChatView::addMessage(const QString& role, const QString& text) {
    auto* card = new ChatMessageCard(role, text, widget());
    const int index = count();
    column_->insertWidget(column_->count() - 1, card);  // before the trailing stretch
    cards_.push_back(card);
    connect(card, &ChatMessageCard::editRequested, this, [this, card] {
        for (int i = 0; i < count(); ++i)
            if (cards_[static_cast<size_t>(i)] == card) emit editRequested(i);
    });
    QTimer::singleShot(0, this, [this] { verticalScrollBar()->setValue(verticalScrollBar()->maximum()); });
    return index;
}

void ChatView::appendToLast(const QString& text) {
    if (cards_.empty()) return;
    cards_.back()->setText(cards_.back()->text() + text);
    verticalScrollBar()->setValue(verticalScrollBar()->maximum());
}

void ChatView::setMessageText(int index, const QString& text) {
    if (index < 0 || index >= count()) return;
    cards_[static_cast<size_t>(index)]->setText(text);
}

void ChatView::removeFrom(int index) {
    while (count() > std::max(index, 0)) {
        ChatMessageCard* card = cards_.back();
        cards_.pop_back();
        column_->removeWidget(card);
        card->deleteLater();
    }
}

void ChatView::clearMessages() { removeFrom(0); }

} // namespace cflow::ui
