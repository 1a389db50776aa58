// ChatView card state for the chat controller: the stopped marker, the ‹ n / m › switch
// between alternative replies, the highlight of the message being edited, and buttons that
// screen readers can name and the keyboard can reach.
#include <QAbstractButton>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTest>
#include <QToolButton>

#include <gtest/gtest.h>

#include "cflow/ui/chat_view.h"

namespace {

using cflow::ui::ChatMessageCard;
using cflow::ui::ChatView;

template <class W>
W* child(ChatMessageCard* card, const char* name) {
    return card->findChild<W*>(QString::fromLatin1(name));
}

struct ShownConversation {
    ChatView view;
    ShownConversation() {
        view.addMessage(QStringLiteral("user"), QStringLiteral("Tell me a story"));
        view.addMessage(QStringLiteral("assistant"), QStringLiteral("Once upon a time"));
        view.resize(600, 400);
        view.show();
    }
};

TEST(ChatViewState, StoppedReplyShowsAMarker) {
    ShownConversation c;
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&c.view));
    auto* marker = child<QLabel>(c.view.card(1), "stoppedMarker");
    ASSERT_NE(marker, nullptr);
    EXPECT_FALSE(marker->isVisibleTo(c.view.card(1)));
    c.view.setStopped(1, true);
    EXPECT_TRUE(c.view.card(1)->isStopped());
    EXPECT_TRUE(marker->isVisibleTo(c.view.card(1)));
    EXPECT_FALSE(marker->text().isEmpty());
    EXPECT_FALSE(marker->accessibleName().isEmpty());
    EXPECT_FALSE(child<QLabel>(c.view.card(0), "stoppedMarker")->isVisibleTo(c.view.card(0)));
    c.view.setStopped(1, false);
    EXPECT_FALSE(marker->isVisibleTo(c.view.card(1)));
    c.view.setStopped(7, true);  // no such message: ignored
}

TEST(ChatViewState, AlternativesSwitchWithPreviousAndNext) {
    ShownConversation c;
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&c.view));
    ChatMessageCard* reply = c.view.card(1);
    auto* previous = child<QToolButton>(reply, "previousAlternative");
    auto* next = child<QToolButton>(reply, "nextAlternative");
    auto* label = child<QLabel>(reply, "alternativeLabel");
    ASSERT_TRUE(previous && next && label);
    EXPECT_FALSE(previous->isVisibleTo(reply)) << "a single reply has nothing to switch to";
    EXPECT_FALSE(next->isVisibleTo(reply));
    EXPECT_FALSE(label->isVisibleTo(reply));

    QSignalSpy requested(&c.view, &ChatView::alternativeRequested);
    c.view.setAlternatives(1, 0, 3);
    EXPECT_TRUE(previous->isVisibleTo(reply));
    EXPECT_TRUE(next->isVisibleTo(reply));
    EXPECT_EQ(label->text(), QStringLiteral("1 / 3"));
    EXPECT_FALSE(previous->isEnabled());
    EXPECT_TRUE(next->isEnabled());
    QTest::mouseClick(next, Qt::LeftButton);
    ASSERT_EQ(requested.count(), 1);
    EXPECT_EQ(requested.at(0).at(0).toInt(), 1);
    EXPECT_EQ(requested.at(0).at(1).toInt(), +1);

    c.view.setAlternatives(1, 1, 3);
    EXPECT_EQ(label->text(), QStringLiteral("2 / 3"));
    EXPECT_TRUE(previous->isEnabled());
    EXPECT_TRUE(next->isEnabled());

    c.view.setAlternatives(1, 2, 3);
    EXPECT_EQ(label->text(), QStringLiteral("3 / 3"));
    EXPECT_FALSE(next->isEnabled());
    QTest::mouseClick(previous, Qt::LeftButton);
    ASSERT_EQ(requested.count(), 2);
    EXPECT_EQ(requested.at(1).at(0).toInt(), 1);
    EXPECT_EQ(requested.at(1).at(1).toInt(), -1);

    c.view.setAlternatives(1, 0, 1);
    EXPECT_FALSE(label->isVisibleTo(reply));
}

TEST(ChatViewState, EditedMessageIsHighlighted) {
    ShownConversation c;
    ChatMessageCard* user = c.view.card(0);
    EXPECT_FALSE(user->isEditing());
    EXPECT_EQ(user->frameShape(), QFrame::NoFrame);
    c.view.setEditing(0, true);
    EXPECT_TRUE(user->isEditing());
    EXPECT_EQ(user->frameShape(), QFrame::Box);
    EXPECT_GT(user->frameWidth(), 0);
    EXPECT_FALSE(user->accessibleDescription().isEmpty());
    EXPECT_FALSE(c.view.card(1)->isEditing());
    EXPECT_EQ(c.view.card(1)->frameShape(), QFrame::NoFrame);
    c.view.setEditing(0, false);
    EXPECT_EQ(user->frameShape(), QFrame::NoFrame);
    EXPECT_TRUE(user->accessibleDescription().isEmpty());
}

TEST(ChatViewState, ButtonsHaveAccessibleNamesTooltipsAndKeyboardFocus) {
    ShownConversation c;
    c.view.setAlternatives(1, 0, 2);
    for (int i = 0; i < c.view.count(); ++i) {
        const auto buttons = c.view.card(i)->findChildren<QAbstractButton*>();
        ASSERT_FALSE(buttons.isEmpty());
        for (QAbstractButton* button : buttons) {
            SCOPED_TRACE(button->objectName().toStdString());
            EXPECT_FALSE(button->accessibleName().isEmpty());
            EXPECT_FALSE(button->toolTip().isEmpty());
            EXPECT_EQ(button->focusPolicy(), Qt::StrongFocus);
        }
    }
    EXPECT_NE(child<QPushButton>(c.view.card(0), "editButton"), nullptr);
    EXPECT_NE(child<QPushButton>(c.view.card(1), "copyButton"), nullptr);
}

// A short conversation in a tall view: the cards are as tall as their content and the spare
// height stays below them (the cards used to share it with the column's stretch, opening gaps
// inside each card once the inspector moved beside the chat and the view grew tall).
TEST(ChatViewState, ShortConversationsKeepTheirCardsTight) {
    cflow::ui::ChatView view;
    view.resize(520, 900);
    view.addMessage(QStringLiteral("user"), QStringLiteral("Hello"));
    view.addMessage(QStringLiteral("assistant"), QStringLiteral("Hi there. How can I help?"));
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    QTest::qWait(20);
    for (int i = 0; i < view.count(); ++i) {
        const cflow::ui::ChatMessageCard* card = view.card(i);
        EXPECT_LE(card->height(), card->sizeHint().height() + 2) << "card " << i << " is " << card->height() << " px for "
                                                                  << card->sizeHint().height() << " px of content";
    }
    EXPECT_LT(view.card(1)->geometry().bottom(), 450) << "the conversation starts at the top of the view";
}

} // namespace
