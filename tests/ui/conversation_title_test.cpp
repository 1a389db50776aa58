// plain_title: conversation titles typed as Markdown shown as plain one-line text, and the
// sidebar listing them that way with a rename dialog wide enough for its title.
#include <QApplication>
#include <QInputDialog>
#include <QListWidget>
#include <QPushButton>
#include <QTest>

#include <gtest/gtest.h>

#include "cflow/ui/conversation_sidebar.h"
#include "cflow/ui/conversation_store.h"
#include "cflow/ui/conversation_title.h"
#include "test_support.h"
#include "ui_test_models.h"

namespace {

using cflow::ui::plain_title;

TEST(PlainTitle, StripsMarkdownSyntax) {
    EXPECT_EQ(plain_title(QStringLiteral("# Plan for **Monday**"), 0), QStringLiteral("Plan for Monday"));
    EXPECT_EQ(plain_title(QStringLiteral("## Heading ##"), 0), QStringLiteral("Heading"));
    EXPECT_EQ(plain_title(QStringLiteral("Why does `foo()` *crash*?"), 0), QStringLiteral("Why does foo() crash?"));
    EXPECT_EQ(plain_title(QStringLiteral("_emphasis_ and __strong__ but snake_case"), 0),
              QStringLiteral("emphasis and strong but snake_case"));
    EXPECT_EQ(plain_title(QStringLiteral("See [the docs](https://example.com/a_b) and ![logo](x.png)"), 0),
              QStringLiteral("See the docs and logo"));
    EXPECT_EQ(plain_title(QStringLiteral("> quoted\n> > nested"), 0), QStringLiteral("quoted nested"));
    EXPECT_EQ(plain_title(QStringLiteral("- one\n* two\n+ three\n1. four\n2) five"), 0),
              QStringLiteral("one two three four five"));
    EXPECT_EQ(plain_title(QStringLiteral("~~old~~ new"), 0), QStringLiteral("old new"));
    EXPECT_EQ(plain_title(QStringLiteral("```python\nprint(1)\n```"), 0), QStringLiteral("print(1)"));
    EXPECT_EQ(plain_title(QStringLiteral("2 \\* 3 is \\#6"), 0), QStringLiteral("2 3 is #6"));
    EXPECT_EQ(plain_title(QStringLiteral("#hashtag stays"), 0), QStringLiteral("#hashtag stays"));
}

TEST(PlainTitle, CollapsesWhitespaceAndElides) {
    EXPECT_EQ(plain_title(QStringLiteral("  a\n\n\tb   c  "), 0), QStringLiteral("a b c"));
    const QString elided = plain_title(QStringLiteral("The quick brown fox jumps"), 10);
    EXPECT_EQ(elided, QStringLiteral("The quick") + QChar(0x2026));
    EXPECT_LE(elided.size(), 10);
    EXPECT_EQ(plain_title(QStringLiteral("**short**"), 10), QStringLiteral("short"));
    EXPECT_EQ(plain_title(QStringLiteral("exactly10!"), 10), QStringLiteral("exactly10!"));
    EXPECT_EQ(plain_title(QString(), 10), QString());
}

std::unique_ptr<cflow::ui::ConversationStore> open_title_store(const char* name) {
    const auto path = cflow::test::temp_dir(name) / "studio.sqlite";
    auto store = cflow::ui::ConversationStore::open(cflow::ui::test::qpath(path));
    EXPECT_TRUE(store.ok()) << store.error();
    return store.ok() ? std::move(*store) : nullptr;
}

TEST(ConversationSidebarTitles, ListsPlainTitlesWithTheFullTitleAsTooltip) {
    auto store = open_title_store("sidebar_plain_titles");
    ASSERT_NE(store, nullptr);
    const QString longTitle = QStringLiteral("**Refactor** the `ConversationStore` ") + QString(QStringLiteral("and more ")).repeated(30);
    ASSERT_TRUE(store->createConversation(longTitle).ok());
    cflow::ui::ConversationSidebar sidebar(store.get());
    ASSERT_EQ(sidebar.list()->count(), 1);
    const QListWidgetItem* item = sidebar.list()->item(0);
    EXPECT_TRUE(item->text().startsWith(QStringLiteral("Refactor the ConversationStore and more")))
        << item->text().toStdString();
    EXPECT_FALSE(item->text().contains(u'*'));
    EXPECT_FALSE(item->text().contains(u'`'));
    EXPECT_TRUE(item->toolTip().startsWith(plain_title(longTitle, 0))) << item->toolTip().toStdString();
    EXPECT_EQ(sidebar.list()->textElideMode(), Qt::ElideRight);
}

TEST(ConversationSidebarTitles, RenameDialogFitsItsTitleAndRenames) {
    auto store = open_title_store("sidebar_rename_dialog");
    ASSERT_NE(store, nullptr);
    auto id = store->createConversation(QStringLiteral("# Old *title*"));
    ASSERT_TRUE(id.ok());
    cflow::ui::ConversationSidebar sidebar(store.get());
    sidebar.refresh(*id);
    sidebar.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&sidebar));
    for (const char* name : {"newConversationButton", "renameConversationButton", "deleteConversationButton"}) {
        auto* button = sidebar.findChild<QPushButton*>(QString::fromLatin1(name));
        ASSERT_NE(button, nullptr) << name;
        EXPECT_FALSE(button->accessibleName().isEmpty()) << name;
        EXPECT_FALSE(button->toolTip().isEmpty()) << name;
    }
    QTest::mouseClick(sidebar.findChild<QPushButton*>(QStringLiteral("renameConversationButton")), Qt::LeftButton);

    QInputDialog* dialog = nullptr;
    for (QWidget* w : QApplication::topLevelWidgets())
        if (w->objectName() == QLatin1String("renameDialog") && w->isVisible()) dialog = qobject_cast<QInputDialog*>(w);
    ASSERT_NE(dialog, nullptr) << "the rename dialog opens without blocking";
    EXPECT_EQ(dialog->windowTitle(), QStringLiteral("Rename conversation"));
    constexpr int kTitleBarButtonsPx = 100;
    EXPECT_GE(dialog->width(), dialog->fontMetrics().horizontalAdvance(dialog->windowTitle()) + kTitleBarButtonsPx);
    EXPECT_EQ(dialog->textValue(), QStringLiteral("Old title")) << "offered as shown, not as stored Markdown";

    dialog->setTextValue(QStringLiteral("New title"));
    dialog->accept();
    auto renamed = store->conversation(*id);
    ASSERT_TRUE(renamed.ok());
    EXPECT_EQ(renamed->title, QStringLiteral("New title"));
    EXPECT_EQ(sidebar.list()->item(0)->text(), QStringLiteral("New title"));
}

} // namespace
