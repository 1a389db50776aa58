#include "cflow/ui/chat_view.h"

#include <algorithm>
#include <string_view>

#include <QAbstractTextDocumentLayout>
#include <QApplication>
#include <QClipboard>
#include <QDesktopServices>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollBar>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextDocumentFragment>
#include <QTimer>
#include <QToolButton>
#include <QUrl>
#include <QVBoxLayout>

#include "cflow/engine/chat/reasoning_split.h"
#include "cflow/ui/fixed_font.h"
#include "cflow/ui/chat_markdown.h"
#include "cflow/ui/tool_call_card.h"
#include "labelled_button.h"

namespace cflow::ui {

namespace {

int word_count(const QString& text) { return static_cast<int>(text.split(QRegularExpression(QStringLiteral("\\s+")), Qt::SkipEmptyParts).size()); }

} // namespace

ChatMessageCard::ChatMessageCard(const QString& role, const QString& text, QWidget* parent)
    : QFrame(parent), role_(role), thinkingToggle_(new QToolButton(this)), thinkingView_(new QLabel(this)),
      browser_(new QTextBrowser(this)), highlightTimer_(new QTimer(this)) {
    setFrameShape(QFrame::NoFrame);
    // As tall as its text and no taller: with the default Preferred policy the card took its
    // children's vertical expansion and shared the transcript's spare height with the column's
    // stretch, opening gaps inside every card of a short conversation in a tall view.
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Maximum);
    // A Plain Box is drawn in the foreground role's colour: the highlight while editing.
    setFrameShadow(QFrame::Plain);
    setForegroundRole(QPalette::Highlight);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    auto* header = new QHBoxLayout;
    heading_ = new QLabel(this);
    heading_->setObjectName(QStringLiteral("messageHeading"));
    setHeading(role);
    header->addWidget(heading_);
    stoppedMarker_ = new QLabel(tr("stopped"), this);
    stoppedMarker_->setObjectName(QStringLiteral("stoppedMarker"));
    stoppedMarker_->setAccessibleName(tr("Reply stopped before its end"));
    stoppedMarker_->setToolTip(tr("This reply was stopped before it finished."));
    QFont markerFont = stoppedMarker_->font();
    markerFont.setItalic(true);
    stoppedMarker_->setFont(markerFont);
    stoppedMarker_->hide();
    interruptedMarker_ = new QLabel(tr("interrupted"), this);
    interruptedMarker_->setObjectName(QStringLiteral("interruptedMarker"));
    interruptedMarker_->setAccessibleName(tr("Reply interrupted"));
    interruptedMarker_->setToolTip(tr("The app ended while this reply was being written: it may be cut short."));
    interruptedMarker_->setFont(markerFont);
    interruptedMarker_->hide();
    activityMarker_ = new QLabel(this);
    activityMarker_->setObjectName(QStringLiteral("activityMarker"));
    activityMarker_->setFont(markerFont);
    activityMarker_->hide();
    header->addWidget(activityMarker_);
    header->addWidget(stoppedMarker_);
    header->addWidget(interruptedMarker_);
    formatMarker_ = new QLabel(this);
    formatMarker_->setObjectName(QStringLiteral("replyFormatMarker"));
    formatMarker_->setFont(markerFont);
    formatMarker_->hide();
    header->addWidget(formatMarker_);
    toolsMarker_ = new QLabel(tr("tools not offered"), this);
    toolsMarker_->setObjectName(QStringLiteral("toolsNotOfferedMarker"));
    toolsMarker_->setFont(markerFont);
    toolsMarker_->hide();
    header->addWidget(toolsMarker_);
    header->addStretch();

    previousAlternative_ = labelled_button<QToolButton>(QStringLiteral("\u2039"), QStringLiteral("previousAlternative"),
                                                        tr("Previous alternative reply"), this,
                                                        tr("Show the previous alternative reply"));
    alternativeLabel_ = new QLabel(this);
    alternativeLabel_->setObjectName(QStringLiteral("alternativeLabel"));
    nextAlternative_ = labelled_button<QToolButton>(QStringLiteral("\u203A"), QStringLiteral("nextAlternative"),
                                                    tr("Next alternative reply"), this, tr("Show the next alternative reply"));
    connect(previousAlternative_, &QToolButton::clicked, this, [this] { emit alternativeRequested(-1); });
    connect(nextAlternative_, &QToolButton::clicked, this, [this] { emit alternativeRequested(+1); });
    header->addWidget(previousAlternative_);
    header->addWidget(alternativeLabel_);
    header->addWidget(nextAlternative_);
    setAlternatives(0, 1);

    if (role == QLatin1String("user")) {
        auto* edit = labelled_button(tr("Edit"), QStringLiteral("editButton"), tr("Edit message"), this,
                                     tr("Edit this message and send it again"));
        connect(edit, &QPushButton::clicked, this, &ChatMessageCard::editRequested);
        header->addWidget(edit);
    }
    auto* copy = labelled_button(tr("Copy"), QStringLiteral("copyButton"), tr("Copy message"), this,
                                 tr("Copy this message's text (Markdown) to the clipboard"));
    connect(copy, &QPushButton::clicked, this, [this] { QGuiApplication::clipboard()->setText(text_); });
    header->addWidget(copy);
    layout->addLayout(header);

    thinkingToggle_->setObjectName(QStringLiteral("thinkingToggle"));
    thinkingToggle_->setCheckable(true);
    thinkingToggle_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    thinkingToggle_->setAutoRaise(true);
    thinkingToggle_->setAccessibleName(tr("Show or hide the model's thinking"));
    thinkingToggle_->setToolTip(tr("The model reasoned before it answered: show or hide that reasoning"));
    thinkingToggle_->setFocusPolicy(Qt::StrongFocus);
    thinkingToggle_->hide();
    connect(thinkingToggle_, &QToolButton::toggled, this, [this] { render(); });
    layout->addWidget(thinkingToggle_);
    thinkingView_->setObjectName(QStringLiteral("thinkingView"));
    thinkingView_->setWordWrap(true);
    thinkingView_->setTextFormat(Qt::PlainText);
    thinkingView_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    thinkingView_->setForegroundRole(QPalette::PlaceholderText);
    QFont thinkingFont = thinkingView_->font();
    thinkingFont.setItalic(true);
    thinkingView_->setFont(thinkingFont);
    thinkingView_->setContentsMargins(12, 0, 0, 4);
    thinkingView_->hide();
    layout->addWidget(thinkingView_);

    // Links are handled here: "Copy code" ones copy their block, others open outside.
    browser_->setOpenLinks(false);
    connect(browser_, &QTextBrowser::anchorClicked, this, &ChatMessageCard::onAnchorClicked);
    browser_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    browser_->setFrameShape(QFrame::NoFrame);
    connect(browser_->document()->documentLayout(), &QAbstractTextDocumentLayout::documentSizeChanged, this,
            [this] { fitHeight(); });
    layout->addWidget(browser_);
    toolCallsLayout_ = new QVBoxLayout;
    toolCallsLayout_->setContentsMargins(12, 0, 0, 0);
    layout->addLayout(toolCallsLayout_);
    // Clicks on the text map to the token that wrote it (see onViewportClick).
    browser_->viewport()->installEventFilter(this);
    highlightTimer_->setSingleShot(true);
    highlightTimer_->setInterval(kTokenHighlightMs);
    connect(highlightTimer_, &QTimer::timeout, this, [this] {
        flashed_.reset();
        browser_->setExtraSelections({});
    });
    setText(text);
}

void ChatMessageCard::setText(const QString& text) {
    // A replaced text is not what the tokens wrote: spans and any highlight go.
    spans_.clear();
    flashed_.reset();
    highlightTimer_->stop();
    text_ = text;
    shownLength_ = -1;
    render();
}

void ChatMessageCard::setShownLength(int length) {
    if (length == shownLength_) return;
    shownLength_ = length;
    render();
}

QString ChatMessageCard::shownAnswer() const {
    if (shownLength_ < 0) return text_.mid(answerOffset_);
    return text_.mid(answerOffset_, std::max(0, shownLength_ - answerOffset_));
}

void ChatMessageCard::appendText(const QString& more, const TokenPieces& pieces, int shownLength) {
    shownLength_ = shownLength;
    // A batch that does not add up keeps its text; only its spans are dropped (clicks there do nothing).
    spans_.append(static_cast<int>(text_.size()), static_cast<int>(more.size()), pieces);
    text_ += more;
    render();
}

void ChatMessageCard::render() {
    // Re-rendering replaces the document: the offset map and the highlight's cursors are
    // stale. Appending keeps the raw offsets, so a highlight still showing is drawn again.
    map_.reset();
    browser_->setExtraSelections({});
    // The reasoning block's offsets come in UTF-8 bytes; the tags and the whitespace around them
    // are ASCII, so every offset falls between characters.
    const QByteArray bytes = text_.toUtf8();
    const ReasoningSplit split = split_reasoning(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
    const auto chars = [&](size_t byte) {
        return static_cast<int>(QString::fromUtf8(bytes.constData(), static_cast<qsizetype>(byte)).size());
    };
    answerOffset_ = chars(split.answer_begin);  // 0 without tags; past a harmony final channel's header
    thinkingClosed_ = split.closed;
    thinking_ = split.has_reasoning ? text_.mid(chars(split.reasoning_begin), chars(split.reasoning_end) - chars(split.reasoning_begin)).trimmed()
                                    : QString();
    const bool shown = split.has_reasoning && thinkingToggle_->isChecked();
    thinkingToggle_->setVisible(split.has_reasoning);
    thinkingToggle_->setArrowType(shown ? Qt::DownArrow : Qt::RightArrow);
    const int words = word_count(thinking_);
    thinkingToggle_->setText(!split.closed ? tr("Thinking\u2026 (%n words)", nullptr, words)
                             : shown      ? tr("Hide thinking")
                                          : tr("Show thinking (%n words)", nullptr, words));
    thinkingView_->setVisible(shown);
    thinkingView_->setText(shown ? thinking_ : QString());
    const QString answer = shownAnswer();
    browser_->setVisible(!split.has_reasoning || !answer.isEmpty());
    browser_->setMarkdown(chat_markdown(answer, tr("Copy code"), tr("Copy this code block to the clipboard")));
    apply_code_font(*browser_->document(), fixed_pitch_font());
    fitHeight();
    if (flashed_) showHighlight();
}

const RenderedTextMap& ChatMessageCard::renderedMap() const {
    if (!map_) map_.emplace(mapping_text(*browser_->document()), shownAnswer());
    return *map_;
}

bool ChatMessageCard::thinkingShown() const { return !thinking_.isEmpty() && thinkingToggle_->isChecked(); }

void ChatMessageCard::setThinkingShown(bool shown) { thinkingToggle_->setChecked(shown); }

QStringList ChatMessageCard::codeBlocks() const { return code_blocks(*browser_->document()); }

bool ChatMessageCard::copyCodeBlock(int index) const {
    const QStringList blocks = codeBlocks();
    if (index < 0 || index >= blocks.size()) return false;
    QGuiApplication::clipboard()->setText(blocks[index]);
    return true;
}

void ChatMessageCard::onAnchorClicked(const QUrl& url) {
    if (const std::optional<int> block = copy_code_index(url)) {
        copyCodeBlock(*block);
        return;
    }
    QDesktopServices::openUrl(url);
}

void ChatMessageCard::addToolCallCard(ToolCallCard* card) {
    card->setParent(this);
    toolCallsLayout_->addWidget(card);
    toolCards_.push_back(card);
    card->show();
}

void ChatMessageCard::clearToolCallCards() {
    for (ToolCallCard* card : toolCards_) {
        toolCallsLayout_->removeWidget(card);
        card->hide();
        card->deleteLater();
    }
    toolCards_.clear();
    toolRoundSerial_ = 0;
}

void ChatMessageCard::setStopped(bool stopped) {
    stopped_ = stopped;
    stoppedMarker_->setVisible(stopped);
}

void ChatMessageCard::setReplyFormat(const QString& mark) {
    formatMarker_->setText(mark);
    formatMarker_->setAccessibleName(mark.isEmpty() ? QString() : tr("Reply format: %1").arg(mark));
    formatMarker_->setToolTip(mark.isEmpty() ? QString() : tr("This reply was sampled under a grammar: %1.").arg(mark));
    formatMarker_->setVisible(!mark.isEmpty());
}

void ChatMessageCard::setHeading(const QString& heading) {
    heading_->setText(QStringLiteral("<b>%1</b>").arg(heading.toHtmlEscaped()));
    heading_->setAccessibleName(heading);
}

QString ChatMessageCard::heading() const { return heading_->accessibleName(); }

void ChatMessageCard::setToolsNote(const QString& note) {
    toolsMarker_->setToolTip(note);
    toolsMarker_->setAccessibleName(note);
    toolsMarker_->setVisible(!note.isEmpty());
}

QString ChatMessageCard::toolsNote() const { return toolsMarker_->isHidden() ? QString() : toolsMarker_->toolTip(); }

QString ChatMessageCard::replyFormat() const { return formatMarker_->isHidden() ? QString() : formatMarker_->text(); }

void ChatMessageCard::setInterrupted(bool interrupted, const QString& why) {
    interrupted_ = interrupted;
    interruptedMarker_->setVisible(interrupted);
    interruptedMarker_->setToolTip(why.isEmpty() ? tr("The app ended while this reply was being written: it may be cut short.")
                                                 : tr("Cut short: %1").arg(why));
}

QString ChatMessageCard::interruptedReason() const { return interrupted_ ? interruptedMarker_->toolTip() : QString(); }

void ChatMessageCard::setAlternatives(int current, int count) {
    const bool shown = count > 1;
    current = std::clamp(current, 0, std::max(count - 1, 0));
    previousAlternative_->setVisible(shown);
    alternativeLabel_->setVisible(shown);
    nextAlternative_->setVisible(shown);
    previousAlternative_->setEnabled(current > 0);
    nextAlternative_->setEnabled(current < count - 1);
    alternativeLabel_->setText(QStringLiteral("%1 / %2").arg(current + 1).arg(count));
    alternativeLabel_->setAccessibleName(tr("Alternative %1 of %2").arg(current + 1).arg(count));
}

void ChatMessageCard::setEditing(bool editing) {
    editing_ = editing;
    setFrameShape(editing ? QFrame::Box : QFrame::NoFrame);
    setLineWidth(editing ? 2 : 1);
    setAccessibleDescription(editing ? tr("Being edited") : QString());
}

std::optional<int> ChatMessageCard::characterAt(QPoint viewportPos) const {
    // cursorForPosition gives the caret boundary nearest the point: the clicked character is
    // the one after it, or the one before it when the point lies left of that caret.
    QTextCursor at = browser_->cursorForPosition(viewportPos);
    if (viewportPos.x() < browser_->cursorRect(at).left()) at.movePosition(QTextCursor::PreviousCharacter);
    QTextCursor after = at;
    if (!after.movePosition(QTextCursor::NextCharacter) || after.block() != at.block()) return std::nullopt;
    const QRect left = browser_->cursorRect(at);
    const QRect right = browser_->cursorRect(after);
    if (viewportPos.y() < left.top() || viewportPos.y() > left.bottom() || viewportPos.x() < left.left())
        return std::nullopt;
    // On a wrapped line the next caret starts the next line; otherwise it bounds the character.
    if (right.top() == left.top() && viewportPos.x() >= right.left()) return std::nullopt;
    return at.position();
}

std::optional<TokenSpan> ChatMessageCard::tokenAt(QPoint viewportPos) const {
    if (spans_.empty()) return std::nullopt;  // not streamed in this session: no telemetry
    const std::optional<int> rendered = characterAt(viewportPos);
    if (!rendered) return std::nullopt;
    const int source = renderedMap().sourceOffset(*rendered);
    if (source < 0) return std::nullopt;
    return spans_.at(source + answerOffset_);
}

bool ChatMessageCard::flashToken(const TokenSpan& span) {
    flashed_ = span;
    if (!showHighlight()) {
        flashed_.reset();
        return false;
    }
    highlightTimer_->start();
    return true;
}

bool ChatMessageCard::showHighlight() {
    if (flashed_->end <= answerOffset_) return false;  // the token wrote reasoning, which the answer does not show
    const auto [first, last] =
        renderedMap().renderedRange(std::max(flashed_->start - answerOffset_, 0), flashed_->end - answerOffset_);
    if (first >= last) return false;
    QTextEdit::ExtraSelection selection;
    selection.cursor = QTextCursor(browser_->document());
    selection.cursor.setPosition(first);
    selection.cursor.setPosition(last, QTextCursor::KeepAnchor);
    QColor background = palette().color(QPalette::Highlight);
    background.setAlpha(96);
    selection.format.setBackground(background);
    browser_->setExtraSelections({selection});
    return true;
}

void ChatMessageCard::onViewportClick(QPoint viewportPos) {
    if (!browser_->anchorAt(viewportPos).isEmpty()) return;  // a link opens; it is not a token click
    const std::optional<TokenSpan> span = tokenAt(viewportPos);
    if (!span) return;
    flashToken(*span);
    emit tokenClicked(span->position);
}

bool ChatMessageCard::eventFilter(QObject* watched, QEvent* event) {
    if (watched == browser_->viewport()) {
        if (event->type() == QEvent::MouseButtonPress || event->type() == QEvent::MouseButtonDblClick) {
            pressPos_ = static_cast<QMouseEvent*>(event)->position().toPoint();
        } else if (event->type() == QEvent::MouseButtonRelease) {
            const auto* mouse = static_cast<QMouseEvent*>(event);
            const QPoint pos = mouse->position().toPoint();
            // A drag selects text; only a click (no selection made) names a token.
            if (mouse->button() == Qt::LeftButton && !browser_->textCursor().hasSelection() &&
                (pos - pressPos_).manhattanLength() < QApplication::startDragDistance())
                onViewportClick(pos);
        }
    }
    return QFrame::eventFilter(watched, event);  // the browser still handles the event
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
    welcome_ = new QLabel(content);
    welcome_->setObjectName(QStringLiteral("chatWelcome"));
    welcome_->setWordWrap(true);
    welcome_->setTextFormat(Qt::RichText);
    welcome_->setMargin(12);
    welcome_->setFrameShape(QFrame::StyledPanel);
    welcome_->hide();
    column_->addWidget(welcome_);
    column_->addStretch();
    setWidget(content);
    setWidgetResizable(true);
}

int ChatView::addMessage(const QString& role, const QString& text) {
    auto* card = new ChatMessageCard(role, text, widget());
    const int index = count();
    column_->insertWidget(column_->count() - 1, card);  // before the trailing stretch
    cards_.push_back(card);
    syncWelcome();
    connect(card, &ChatMessageCard::editRequested, this, [this, card] {
        if (const int i = indexOf(card); i >= 0) emit editRequested(i);
    });
    connect(card, &ChatMessageCard::alternativeRequested, this, [this, card](int delta) {
        if (const int i = indexOf(card); i >= 0) emit alternativeRequested(i, delta);
    });
    connect(card, &ChatMessageCard::tokenClicked, this, &ChatView::tokenClicked);
    QTimer::singleShot(0, this, [this] { verticalScrollBar()->setValue(verticalScrollBar()->maximum()); });
    return index;
}

void ChatView::appendToLast(const QString& text, const TokenPieces& pieces, int shownLength) {
    if (cards_.empty()) return;
    cards_.back()->appendText(text, pieces, shownLength);
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
    syncWelcome();
}

void ChatView::setWelcome(const QString& html) {
    welcome_->setText(html);
    syncWelcome();
}

QString ChatView::welcomeText() const {
    return welcome_->isHidden() ? QString() : QTextDocumentFragment::fromHtml(welcome_->text()).toPlainText();
}

void ChatView::syncWelcome() { welcome_->setVisible(cards_.empty() && !welcome_->text().isEmpty()); }

void ChatView::clearMessages() { removeFrom(0); }

int ChatView::indexOf(const ChatMessageCard* card) const {
    const auto it = std::find(cards_.begin(), cards_.end(), card);
    return it == cards_.end() ? -1 : static_cast<int>(it - cards_.begin());
}

void ChatMessageCard::setActivity(const QString& text) {
    activityMarker_->setText(text);
    activityMarker_->setAccessibleName(text);
    activityMarker_->setVisible(!text.isEmpty());
}

QString ChatMessageCard::activity() const { return activityMarker_->isHidden() ? QString() : activityMarker_->text(); }

void ChatView::setActivity(int index, const QString& text) {
    if (index >= 0 && index < count()) card(index)->setActivity(text);
}

void ChatView::setStopped(int index, bool stopped) {
    if (index >= 0 && index < count()) card(index)->setStopped(stopped);
}

void ChatView::setReplyFormat(int index, const QString& mark) {
    if (index >= 0 && index < count()) card(index)->setReplyFormat(mark);
}

void ChatView::setToolsNote(int index, const QString& note) {
    if (index >= 0 && index < count()) card(index)->setToolsNote(note);
}

void ChatView::setInterrupted(int index, bool interrupted, const QString& why) {
    if (index >= 0 && index < count()) card(index)->setInterrupted(interrupted, why);
}

void ChatView::setAlternatives(int index, int current, int alternatives) {
    if (index >= 0 && index < count()) card(index)->setAlternatives(current, alternatives);
}

void ChatView::setEditing(int index, bool editing) {
    if (index >= 0 && index < count()) card(index)->setEditing(editing);
}

} // namespace cflow::ui
