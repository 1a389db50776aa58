#pragma once
// The conversation as a column of message cards. Each card renders its text as Markdown
// (chat_markdown.h: line breaks kept, code in the system fixed-pitch font, a "Copy code" link
// under each fenced code block) and has a Copy button; user cards also have Edit. Streaming
// appends go to the last card and re-render it.
//
// The chat controller marks card state: a reply stopped before its end (setStopped), which
// of several alternative replies is shown with ‹ › to switch (setAlternatives, answered by
// alternativeRequested), and the message being edited (setEditing).
//
// A reply that starts with a thinking model's reasoning (<think> ... </think>, split_reasoning)
// shows the answer only, under a "Show thinking" fold that opens the reasoning in a quieter
// style; while the model is still thinking the fold says so and counts the words.
//
// A reply streamed in this session also keeps which characters each generated token wrote
// (TokenSpans): clicking such a character briefly highlights the token's text and emits
// tokenClicked(position) with the token's KV-cache position, which the main window hands to
// the inspector. Messages loaded from the database have no spans: clicks there do nothing.
#include <cstdint>
#include <optional>
#include <vector>

#include <QFrame>
#include <QPoint>
#include <QScrollArea>
#include <QStringList>
#include <QString>

#include "cflow/ui/rendered_text_map.h"
#include "cflow/ui/token_spans.h"

class QLabel;
class QTextBrowser;
class QTimer;
class QToolButton;
class QUrl;
class QVBoxLayout;

namespace cflow::ui {

class ToolCallCard;

class ChatMessageCard : public QFrame {
    Q_OBJECT
public:
    ChatMessageCard(const QString& role, const QString& text, QWidget* parent = nullptr);
    const QString& role() const { return role_; }
    // The heading over the text (the role by default; a tool result names its tool).
    void setHeading(const QString& heading);
    QString heading() const;
    const QString& text() const { return text_; }
    void setText(const QString& text);  // replaces the text; its token spans no longer apply
    // Appends a streamed batch and the pieces of the tokens that produced it. shownLength: how
    // much of the whole text to show (-1: all); the rest, a tool call being written, waits.
    void appendText(const QString& more, const TokenPieces& pieces, int shownLength = -1);
    // Shows only the first length characters of the text (-1: all); setText shows all again.
    void setShownLength(int length);
    QTextBrowser* browser() const { return browser_; }  // the answer (the whole text without reasoning)
    // The reasoning of a thinking model's reply ("" without one) and whether its fold is open.
    QString thinking() const { return thinking_; }
    bool thinkingShown() const;
    void setThinkingShown(bool shown);
    const TokenSpans& tokenSpans() const { return spans_; }

    // The code of each fenced code block as rendered, in order; copyCodeBlock(i) puts block
    // i on the clipboard (what its "Copy code" link does). False when there is no block i.
    QStringList codeBlocks() const;
    bool copyCodeBlock(int index) const;

    // A reply that ended before its natural end (the user stopped it) shows a marker.
    void setStopped(bool stopped);
    // What the engine is doing for this reply before its first token ("reading the prompt:
    // 128 / 1095 tokens"); "" hides it.
    void setActivity(const QString& text);
    QString activity() const;
    bool isStopped() const { return stopped_; }
    // A reply's tool calls: cards under its text, in order (the card takes ownership).
    void addToolCallCard(ToolCallCard* card);
    void clearToolCallCards();  // deleted later: one may be emitting the signal that got here
    const std::vector<ToolCallCard*>& toolCallCards() const { return toolCards_; }
    // Which waiting round the cards were made for (0: read-only cards, or none).
    quint64 toolRoundSerial() const { return toolRoundSerial_; }
    void setToolRoundSerial(quint64 serial) { toolRoundSerial_ = serial; }
    // Why the conversation's tools were not offered to this reply (the whole sentence, for the
    // tooltip and screen readers; the mark itself is short); "" hides the mark.
    void setToolsNote(const QString& note);
    QString toolsNote() const;
    // The format a reply was held to ("JSON object", "JSON Schema"); "" hides the mark.
    void setReplyFormat(const QString& mark);
    QString replyFormat() const;
    // A reply the app was still writing when it ended (a crash, kill -9): its text may be cut.
    // why: what cut it when known (a server gone or silent, issue 34); the marker's tooltip.
    void setInterrupted(bool interrupted, const QString& why = QString());
    QString interruptedReason() const;  // the marker's tooltip ("" when not interrupted)
    bool isInterrupted() const { return interrupted_; }
    // Alternative number current (0-based) of count is shown; ‹ › step through them.
    // Hidden for count <= 1.
    void setAlternatives(int current, int count);
    // The message being edited in the input box is framed in the highlight colour.
    void setEditing(bool editing);
    bool isEditing() const { return editing_; }

    // The document position of the character drawn at a point of the browser's viewport;
    // nullopt when the point is not on a character.
    std::optional<int> characterAt(QPoint viewportPos) const;
    // The token that wrote the character at a viewport point, if this card knows it.
    std::optional<TokenSpan> tokenAt(QPoint viewportPos) const;
    // Highlights the span's rendered characters for kTokenHighlightMs (kept across streamed
    // appends); false if none of them is shown.
    bool flashToken(const TokenSpan& span);
    static constexpr int kTokenHighlightMs = 1500;

signals:
    void editRequested();
    void tokenClicked(uint32_t position);
    void alternativeRequested(int delta);  // -1: the previous alternative, +1: the next

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void render();
    QString shownAnswer() const;  // the answer part of the shown text
    bool showHighlight();  // draws flashed_; false when it covers no rendered character
    void fitHeight();
    const RenderedTextMap& renderedMap() const;
    void onViewportClick(QPoint viewportPos);
    void onAnchorClicked(const QUrl& url);
    QString role_;
    QString text_;
    int shownLength_ = -1;  // characters of text_ shown; -1: all
    QString thinking_;     // the reasoning part of text_, tags excluded
    int answerOffset_ = 0; // text_ index where the rendered answer starts (after </think>)
    bool thinkingClosed_ = false;
    QToolButton* thinkingToggle_;
    QLabel* thinkingView_;
    QTextBrowser* browser_;
    QLabel* stoppedMarker_;
    QLabel* interruptedMarker_;
    QLabel* formatMarker_;
    QLabel* toolsMarker_;
    QLabel* heading_;
    QLabel* activityMarker_;
    QToolButton* previousAlternative_;
    QLabel* alternativeLabel_;
    QToolButton* nextAlternative_;
    bool stopped_ = false;
    bool interrupted_ = false;
    bool editing_ = false;
    QTimer* highlightTimer_;
    TokenSpans spans_;
    std::optional<TokenSpan> flashed_;            // the highlighted token while highlightTimer_ runs
    mutable std::optional<RenderedTextMap> map_;  // built when first needed after each render
    QPoint pressPos_;
    QVBoxLayout* toolCallsLayout_;
    std::vector<ToolCallCard*> toolCards_;
    quint64 toolRoundSerial_ = 0;
};

class ChatView : public QScrollArea {
    Q_OBJECT
public:
    explicit ChatView(QWidget* parent = nullptr);

    int addMessage(const QString& role, const QString& text);  // returns its index
    // Appends streamed text to the last card; pieces say which token wrote which part.
    void appendToLast(const QString& text, const TokenPieces& pieces = {}, int shownLength = -1);
    void setMessageText(int index, const QString& text);
    void removeFrom(int index);  // drops message index and every later one
    void clearMessages();
    int count() const { return static_cast<int>(cards_.size()); }
    // What an empty conversation shows at the top instead of nothing (rich text: what the model
    // is and how to send); hidden once there is a message.
    void setWelcome(const QString& html);
    QString welcomeText() const;  // plain text, "" when hidden
    ChatMessageCard* card(int index) const { return cards_.at(static_cast<size_t>(index)); }

    // Card state for the chat controller; out-of-range indices are ignored.
    void setStopped(int index, bool stopped);
    void setInterrupted(int index, bool interrupted, const QString& why = QString());
    void setReplyFormat(int index, const QString& mark);
    void setToolsNote(int index, const QString& note);
    void setActivity(int index, const QString& text);
    void setAlternatives(int index, int current, int count);
    void setEditing(int index, bool editing);

signals:
    void editRequested(int index);
    // A character a generated token wrote was clicked: position is that token's KV-cache position.
    void tokenClicked(uint32_t position);
    // The ‹ (delta -1) or › (delta +1) of message index was pressed.
    void alternativeRequested(int index, int delta);

private:
    int indexOf(const ChatMessageCard* card) const;  // -1 when not listed
    QVBoxLayout* column_;
    QLabel* welcome_ = nullptr;
    void syncWelcome();
    std::vector<ChatMessageCard*> cards_;
};

} // namespace cflow::ui
