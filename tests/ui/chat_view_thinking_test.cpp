// A thinking model's reply (Qwen3, SmolLM3, DeepSeek-R1): the card shows the answer, the
// reasoning sits under a "Show thinking" fold, closed by default, that counts its words and
// says "Thinking…" while the closing tag has not come yet; clicks on the answer still find the
// token that wrote the character (the spans count from the start of the whole reply).
#include <QLabel>
#include <QTest>
#include <QTextBrowser>
#include <QTextCursor>
#include <QToolButton>

#include <gtest/gtest.h>

#include "cflow/ui/chat_view.h"

namespace {

using cflow::ui::ChatMessageCard;
using cflow::ui::ChatView;
using cflow::ui::TokenPieces;

QToolButton* toggle(ChatMessageCard* card) { return card->findChild<QToolButton*>(QStringLiteral("thinkingToggle")); }
QLabel* thinking_view(ChatMessageCard* card) { return card->findChild<QLabel*>(QStringLiteral("thinkingView")); }

TEST(ChatViewThinking, TheReasoningIsFoldedAwayAndOpensOnClick) {
    ChatView view;
    view.addMessage(QStringLiteral("user"), QStringLiteral("Hi"));
    view.addMessage(QStringLiteral("assistant"),
                    QStringLiteral("<think>\nThe user says hi. I should greet back.\n</think>\n\nHello! **How** can I help?"));
    view.resize(600, 400);
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    ChatMessageCard* card = view.card(1);
    ASSERT_TRUE(toggle(card) && thinking_view(card));
    EXPECT_EQ(card->browser()->toPlainText(), QStringLiteral("Hello! How can I help?"));
    EXPECT_EQ(card->thinking(), QStringLiteral("The user says hi. I should greet back."));
    EXPECT_TRUE(toggle(card)->isVisibleTo(card));
    EXPECT_EQ(toggle(card)->text(), QStringLiteral("Show thinking (8 words)"));
    EXPECT_FALSE(thinking_view(card)->isVisibleTo(card));
    EXPECT_FALSE(card->thinkingShown());

    QTest::mouseClick(toggle(card), Qt::LeftButton);
    EXPECT_TRUE(card->thinkingShown());
    EXPECT_TRUE(thinking_view(card)->isVisibleTo(card));
    EXPECT_EQ(thinking_view(card)->text(), card->thinking());
    EXPECT_EQ(toggle(card)->text(), QStringLiteral("Hide thinking"));
    QTest::mouseClick(toggle(card), Qt::LeftButton);
    EXPECT_FALSE(thinking_view(card)->isVisibleTo(card));

    // A user message or a plain reply has no fold.
    EXPECT_FALSE(toggle(view.card(0))->isVisibleTo(view.card(0)));
    view.setMessageText(1, QStringLiteral("Just an answer."));
    EXPECT_FALSE(toggle(card)->isVisibleTo(card));
    EXPECT_FALSE(thinking_view(card)->isVisibleTo(card));
    EXPECT_EQ(card->browser()->toPlainText(), QStringLiteral("Just an answer."));
}

// gpt-oss writes harmony channels: the analysis folds away like a think block, the final
// channel's text is the answer, and no channel tag reaches the card.
TEST(ChatViewThinking, AHarmonyReplyShowsItsFinalChannel) {
    ChatView view;
    view.addMessage(QStringLiteral("assistant"),
                    QStringLiteral("<|channel|>analysis<|message|>Two and two.<|start|>assistant<|channel|>final<|message|>It is **4**."));
    view.resize(600, 400);
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    ChatMessageCard* card = view.card(0);
    ASSERT_TRUE(toggle(card));
    EXPECT_EQ(card->browser()->toPlainText(), QStringLiteral("It is 4."));
    EXPECT_EQ(card->thinking(), QStringLiteral("Two and two."));
    EXPECT_TRUE(toggle(card)->isVisibleTo(card));
    view.setMessageText(0, QStringLiteral("<|channel|>final<|message|>Hi there."));
    EXPECT_FALSE(toggle(card)->isVisibleTo(card));
    EXPECT_EQ(card->browser()->toPlainText(), QStringLiteral("Hi there."));
}

TEST(ChatViewThinking, StreamingSaysThinkingUntilTheBlockCloses) {
    ChatView view;
    view.addMessage(QStringLiteral("assistant"), QString());
    view.resize(600, 400);
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    ChatMessageCard* card = view.card(0);
    view.appendToLast(QStringLiteral("<think>Count: one"), TokenPieces{{0, 7}, {1, 10}});
    EXPECT_EQ(toggle(card)->text(), QStringLiteral("Thinking\u2026 (2 words)"));
    EXPECT_FALSE(card->browser()->isVisibleTo(card)) << "nothing to answer yet";
    view.appendToLast(QStringLiteral(" two</think>\n"), TokenPieces{{2, 4}, {3, 9}});
    view.appendToLast(QStringLiteral("Two."), TokenPieces{{4, 4}});
    EXPECT_EQ(toggle(card)->text(), QStringLiteral("Show thinking (3 words)"));
    EXPECT_EQ(card->browser()->toPlainText(), QStringLiteral("Two."));
    // The answer's characters map back to the token that wrote them (position 4), not to the reasoning's.
    QTextCursor cursor(card->browser()->document());
    cursor.setPosition(1);
    const QRect left = card->browser()->cursorRect(cursor);
    const auto span = card->tokenAt(QPoint(left.left() + 2, left.center().y()));
    ASSERT_TRUE(span.has_value());
    EXPECT_EQ(span->position, 4u);
    EXPECT_TRUE(card->flashToken(*span));
    EXPECT_FALSE(card->flashToken({0, 7, 0})) << "a reasoning token has no character in the answer";
}

} // namespace
