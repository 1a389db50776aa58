// Clicking a token in the chat highlights its column in the inspector's routing strip. A
// small mixture-of-experts model chats through the app's real path (engine thread, batched
// tokensReady, ChatPanel, ChatView, MainWindow's wiring); clicks land on the rectangles
// QTextBrowser::cursorRect gives for a token's characters, located in the rendered text
// independently of the card's own offset map.
#include <cstdint>
#include <filesystem>
#include <vector>

#include <QPointer>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTest>
#include <QTextBrowser>
#include <QTextCursor>

#include <gtest/gtest.h>

#include "cflow/ui/chat_controller.h"
#include "cflow/ui/chat_panel.h"
#include "cflow/ui/chat_view.h"
#include "cflow/ui/engine_worker.h"
#include "cflow/ui/inspector/inspector_dock.h"
#include "cflow/ui/inspector/routing_panel.h"
#include "cflow/ui/main_window.h"
#include "cflow/ui/sampling_panel.h"
#include "test_support.h"
#include "ui_test_models.h"

namespace {

using cflow::ui::ChatMessageCard;
using cflow::ui::ChatPanel;
using cflow::ui::ChatView;
using cflow::ui::MainWindow;
using cflow::ui::TokenPieces;
using cflow::ui::TokenSpan;
using cflow::ui::test::qpath;
using cflow::ui::test::ScopedDb;

constexpr int kTokenClickTimeoutMs = 60000;
constexpr int kReplyTokens = 24;

bool open_and_show(MainWindow& window) {
    window.resize(1200, 800);
    window.show();
    if (!QTest::qWaitForWindowExposed(&window)) return false;
    window.openModel(qpath(cflow::ui::test::moe_chatml_model()));
    if (!QTest::qWaitFor([&] { return window.chatPanel()->modelReady(); }, kTokenClickTimeoutMs)) return false;
    cflow::ui::GenerationSettings s;
    s.sampling.temperature = 0;
    s.maxTokens = kReplyTokens;
    s.threads = 2;
    s.ignoreEos = true;  // a reply of exactly kReplyTokens tokens
    window.samplingPanel()->setSettings(s);
    return true;
}

bool wait_click_idle(ChatPanel* chat) { return QTest::qWaitFor([&] { return !chat->isGenerating(); }, kTokenClickTimeoutMs); }

// Letters and digits of a text with their offsets. Markdown rendering drops or adds only
// syntax, so when both texts have the same letter-and-digit sequence, the i-th such
// character of the raw reply is the i-th of the rendered one: an oracle for where a
// token's characters are drawn that does not use the card's offset map.
struct Alnum {
    QString chars;
    std::vector<int> offsets;
};
Alnum alnum_of(const QString& text) {
    Alnum a;
    for (int i = 0; i < text.size(); ++i)
        if (text[i].isLetterOrNumber()) {
            a.chars += text[i];
            a.offsets.push_back(i);
        }
    return a;
}

// Tokens whose text is letters/digits with at most surrounding spaces: their rendered text
// is exactly the trimmed raw text.
std::vector<TokenSpan> word_tokens(const ChatMessageCard& card) {
    std::vector<TokenSpan> words;
    for (const TokenSpan& span : card.tokenSpans().spans()) {
        const QString core = card.text().mid(span.start, span.end - span.start).trimmed();
        if (core.isEmpty()) continue;
        bool alnum = true;
        for (QChar c : core) alnum = alnum && c.isLetterOrNumber() && c.unicode() < 128;
        if (alnum) words.push_back(span);
    }
    return words;
}

// A viewport point on the rendered character at document position pos: between its caret
// and the next one, or just right of its caret when it ends a wrapped line.
QPoint point_on_character(QTextBrowser* browser, int pos) {
    QTextCursor cursor(browser->document());
    cursor.setPosition(pos);
    const QRect left = browser->cursorRect(cursor);
    cursor.setPosition(pos + 1);
    const QRect right = browser->cursorRect(cursor);
    const bool sameLine = right.top() == left.top() && right.left() > left.left();
    return QPoint(sameLine ? (left.left() + right.left()) / 2 : left.left() + 2, left.center().y());
}

// The rendered document position of the first letter/digit of span, via the Alnum oracle.
int rendered_position(const ChatMessageCard& card, const TokenSpan& span) {
    const Alnum raw = alnum_of(card.text());
    const Alnum rendered = alnum_of(card.browser()->document()->toPlainText());
    for (size_t i = 0; i < raw.offsets.size(); ++i)
        if (raw.offsets[i] >= span.start && raw.offsets[i] < span.end) return rendered.offsets[i];
    return -1;
}

TEST(TokenClickTest, ClickingAStreamedTokenHighlightsItsColumnInTheInspector) {
    ScopedDb db("token_click_stream");
    MainWindow window;
    ASSERT_TRUE(open_and_show(window));
    ChatPanel* chat = window.chatPanel();

    // What the worker sends: batches whose pieces add up to their text, fewer batches than tokens.
    int batches = 0, tokens = 0;
    bool piecesAddUp = true;
    QObject context;
    QObject::connect(window.engine(), &cflow::ui::EngineWorker::tokensReady, &context,
                     [&](const QString& text, int tokenCount, const TokenPieces& pieces) {
                         ++batches;
                         tokens += tokenCount;
                         int64_t length = 0;
                         for (const auto& p : pieces) length += p.utf16Length;
                         piecesAddUp = piecesAddUp && length == text.size() && int(pieces.size()) >= tokenCount;
                     });
    ASSERT_TRUE(chat->send(QStringLiteral("Hello")));
    ASSERT_TRUE(wait_click_idle(chat));
    EXPECT_EQ(tokens, kReplyTokens);
    EXPECT_TRUE(piecesAddUp);
    EXPECT_LE(batches, tokens);

    ASSERT_EQ(chat->view()->count(), 2);
    ChatMessageCard* card = chat->view()->card(1);
    const QString reply = card->text();
    const auto& spans = card->tokenSpans().spans();
    ASSERT_FALSE(spans.empty());
    // The spans tile the reply, and the k-th generated token sits at promptTokens + k.
    const uint32_t firstPosition = uint32_t(chat->lastPrompt().promptTokens);
    EXPECT_EQ(spans.front().start, 0);
    EXPECT_EQ(spans.back().end, reply.size());
    for (size_t i = 0; i < spans.size(); ++i) {
        EXPECT_GE(spans[i].position, firstPosition);
        EXPECT_LT(spans[i].position, firstPosition + kReplyTokens);
        if (i > 0) {
            EXPECT_EQ(spans[i].start, spans[i - 1].end);
            EXPECT_GE(spans[i].position, spans[i - 1].position);
        }
    }
    // The user's message was typed, not generated: no spans.
    EXPECT_TRUE(chat->view()->card(0)->tokenSpans().empty());

    const Alnum rawAlnum = alnum_of(reply);
    const Alnum renderedAlnum = alnum_of(card->browser()->document()->toPlainText());
    ASSERT_EQ(rawAlnum.chars.toStdString(), renderedAlnum.chars.toStdString()) << "reply: " << reply.toStdString();
    const std::vector<TokenSpan> words = word_tokens(*card);
    ASSERT_GE(words.size(), 2u) << "the reply has too few word tokens to click: " << reply.toStdString();

    window.inspector()->drainNow();
    cflow::ui::TokenStrip* strip = window.inspector()->routingPanel()->strip();
    QSignalSpy clicked(chat->view(), &ChatView::tokenClicked);
    for (const TokenSpan& word : words) {
        SCOPED_TRACE("token at position " + std::to_string(word.position));
        const int pos = rendered_position(*card, word);
        ASSERT_GE(pos, 0);
        const int before = int(clicked.count());
        QTest::mouseClick(card->browser()->viewport(), Qt::LeftButton, {}, point_on_character(card->browser(), pos));
        ASSERT_EQ(clicked.count(), before + 1);
        EXPECT_EQ(clicked.last().at(0).value<uint32_t>(), word.position);

        // The inspector shows the routing tab with that token's column marked.
        EXPECT_EQ(window.inspector()->tabs()->currentWidget(), window.inspector()->routingPanel());
        ASSERT_EQ(strip->highlightedPosition(), std::optional<uint32_t>(word.position));
        const int column = strip->highlightedColumn();
        ASSERT_GE(column, 0) << "position " << word.position << " is not in the strip";
        const QString tip = strip->toolTipAt(strip->cellRect(0, column).center());
        EXPECT_TRUE(tip.contains(QStringLiteral("at position %1,").arg(word.position))) << tip.toStdString();
        // ... and that column is the token that wrote the clicked text: its vocabulary piece is
        // the text (SentencePiece marks the leading space), or its byte token.
        const QString text = reply.mid(word.start, word.end - word.start);
        QString piece = text;
        piece.replace(QLatin1Char(' '), QChar(0x2581));
        const QString byteToken = QStringLiteral("'<0x%1>'").arg(
            QString::number(text.front().unicode(), 16).toUpper().rightJustified(2, QLatin1Char('0')));
        EXPECT_TRUE(tip.contains(u'\'' + piece + u'\'') || (text.size() == 1 && tip.contains(byteToken)))
            << tip.toStdString() << " for text '" << text.toStdString() << "'";

        // The chat marks the token's rendered text.
        const auto selections = card->browser()->extraSelections();
        ASSERT_EQ(selections.size(), 1);
        EXPECT_EQ(selections.front().cursor.selectedText(), reply.mid(word.start, word.end - word.start).trimmed());
    }
    EXPECT_TRUE(QTest::qWaitFor([&] { return card->browser()->extraSelections().isEmpty(); },
                                ChatMessageCard::kTokenHighlightMs * 4))
        << "the highlight is brief";

    // A click beside the text names no token.
    const int before = int(clicked.count());
    const QRect viewport = card->browser()->viewport()->rect();
    QTest::mouseClick(card->browser()->viewport(), Qt::LeftButton, {}, viewport.bottomRight() - QPoint(2, 2));
    EXPECT_EQ(clicked.count(), before);
}

TEST(TokenClickTest, RegenerateReplacesTheSpansWithTheNewReplys) {
    ScopedDb db("token_click_regenerate");
    MainWindow window;
    ASSERT_TRUE(open_and_show(window));
    ChatPanel* chat = window.chatPanel();
    ASSERT_TRUE(chat->send(QStringLiteral("Hello")));
    ASSERT_TRUE(wait_click_idle(chat));
    ASSERT_FALSE(chat->view()->card(1)->tokenSpans().empty());
    const QString first = chat->view()->card(1)->text();

    // The regenerated version streams into the same card (the old one stays a browsable
    // version): the spans are the new reply's only.
    ASSERT_TRUE(chat->regenerate());
    ASSERT_TRUE(wait_click_idle(chat));
    ASSERT_EQ(chat->view()->count(), 2);
    ChatMessageCard* fresh = chat->view()->card(1);
    EXPECT_EQ(window.controller()->entries()[1].versions, (QStringList{first, fresh->text()}));
    const auto& spans = fresh->tokenSpans().spans();
    ASSERT_FALSE(spans.empty());
    EXPECT_EQ(spans.front().start, 0);
    EXPECT_EQ(spans.back().end, fresh->text().size());
    const uint32_t firstPosition = uint32_t(chat->lastPrompt().promptTokens);
    for (const TokenSpan& s : spans) EXPECT_LT(s.position - firstPosition, uint32_t(kReplyTokens));

    // The user message's edit drops the reply and its spans too.
    ASSERT_TRUE(chat->editAndResend(0, QStringLiteral("Hi")));
    EXPECT_EQ(chat->view()->count(), 2);
    EXPECT_TRUE(chat->view()->card(1)->tokenSpans().empty()) << "the new reply starts without spans";
    ASSERT_TRUE(wait_click_idle(chat));
    EXPECT_EQ(chat->view()->card(1)->tokenSpans().spans().back().end, chat->view()->card(1)->text().size());
}

TEST(TokenClickTest, ClickingAReloadedReplyDoesNothing) {
    ScopedDb db("token_click_reloaded");
    qint64 conversation = 0;
    {
        MainWindow window;
        ASSERT_TRUE(open_and_show(window));
        ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("Hello")));
        ASSERT_TRUE(wait_click_idle(window.chatPanel()));
        conversation = window.chatPanel()->conversationId();
    }
    // A restarted app reopens the conversation from SQLite: there is no telemetry for it.
    MainWindow window;
    window.resize(1200, 800);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    ASSERT_TRUE(window.chatPanel()->openConversation(conversation));
    ASSERT_EQ(window.chatPanel()->view()->count(), 2);
    ChatMessageCard* card = window.chatPanel()->view()->card(1);
    EXPECT_TRUE(card->tokenSpans().empty());
    QSignalSpy clicked(window.chatPanel()->view(), &ChatView::tokenClicked);
    cflow::ui::TokenStrip* strip = window.inspector()->routingPanel()->strip();
    const QString rendered = card->browser()->document()->toPlainText();
    int clicks = 0;
    for (int pos = 0; pos < rendered.size(); ++pos) {
        if (!rendered[pos].isLetterOrNumber()) continue;
        const QPoint point = point_on_character(card->browser(), pos);
        EXPECT_EQ(card->characterAt(point), std::optional<int>(pos))
            << "the point is on the character; x " << point.x() << " y " << point.y() << " rendered "
            << rendered.toStdString();
        QTest::mouseClick(card->browser()->viewport(), Qt::LeftButton, {}, point);
        ++clicks;
    }
    ASSERT_GT(clicks, 0) << rendered.toStdString();
    EXPECT_EQ(clicked.count(), 0);
    EXPECT_FALSE(strip->highlightedPosition());
    EXPECT_TRUE(card->browser()->extraSelections().isEmpty());
}

} // namespace
