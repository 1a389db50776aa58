// ChatView's Markdown: single line breaks stay line breaks, code is set in the system
// fixed-pitch font, and each fenced code block's "Copy code" link copies that block alone.
#include <QClipboard>
#include <QFontDatabase>
#include <QFontInfo>
#include <QGuiApplication>
#include <QPushButton>
#include <QTest>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextFragment>

#include <gtest/gtest.h>

#include "cflow/ui/chat_markdown.h"
#include "cflow/ui/chat_view.h"
#include "cflow/ui/fixed_font.h"
#include "cflow/ui/rendered_text_map.h"

namespace {

using cflow::ui::ChatMessageCard;
using cflow::ui::ChatView;

// The first fragment of a document whose text contains text.
QTextFragment fragment_with(const QTextDocument& document, const QString& text) {
    for (QTextBlock block = document.begin(); block.isValid(); block = block.next())
        for (auto it = block.begin(); !it.atEnd(); ++it)
            if (it.fragment().text().contains(text)) return it.fragment();
    return {};
}

// The first fragment linking to url.
QTextFragment fragment_linking(const QTextDocument& document, const QUrl& url) {
    for (QTextBlock block = document.begin(); block.isValid(); block = block.next())
        for (auto it = block.begin(); !it.atEnd(); ++it)
            if (QUrl(it.fragment().charFormat().anchorHref()) == url) return it.fragment();
    return {};
}

// Set in the family the app chose for code, and that family measures fixed-pitch here. Not
// QFontInfo::fixedPitch(): fontconfig flags some monospaced families (Noto Mono) as proportional.
bool is_fixed_pitch(const QTextFragment& fragment) {
    const QTextCharFormat format = fragment.charFormat();
    return format.fontFamilies().toStringList().contains(cflow::ui::fixed_pitch_font().family()) &&
           cflow::ui::is_fixed_pitch_by_metrics(format.font());
}

// The point size a fragment is drawn at: its own, else the document's.
int drawn_points(const QTextDocument& document, const QTextFragment& fragment) {
    return fragment.charFormat().font().resolve(document.defaultFont()).pointSize();
}

struct ShownView {
    ChatView view;
    bool show() {
        view.resize(700, 500);
        view.show();
        return QTest::qWaitForWindowExposed(&view);
    }
};

TEST(ChatViewMarkdown, SingleLineBreaksStayLineBreaks) {
    ChatView view;
    view.addMessage(QStringLiteral("assistant"), QStringLiteral("line one\nline two"));
    const QTextDocument* document = view.card(0)->browser()->document();
    EXPECT_EQ(document->toPlainText(), QStringLiteral("line one\nline two"));
    EXPECT_EQ(document->blockCount(), 2);

    // A blank line still separates paragraphs, lists keep their items, CRLF text breaks too.
    view.addMessage(QStringLiteral("assistant"), QStringLiteral("first\n\nsecond\n- a\n- b\r\nc\r\nd"));
    EXPECT_EQ(view.card(1)->browser()->document()->toPlainText(), QStringLiteral("first\nsecond\na\nb\nc\nd"));
}

TEST(ChatViewMarkdown, CodeLinesKeepTheirTextAndBreaks) {
    ChatView view;
    const QString code = QStringLiteral("int x = 1;\nint y = 2;\n\n    return x + y;");
    view.addMessage(QStringLiteral("assistant"), QStringLiteral("Sum:\n```cpp\n") + code + QStringLiteral("\n```\ndone"));
    ChatMessageCard* card = view.card(0);
    ASSERT_EQ(card->codeBlocks().size(), 1);
    EXPECT_EQ(card->codeBlocks().front(), code) << "no break markers leak into code";
    // A single-line ```span``` is inline code, not a fence.
    view.addMessage(QStringLiteral("assistant"), QStringLiteral("Use ```x``` here\nand there"));
    EXPECT_TRUE(view.card(1)->codeBlocks().isEmpty());
    EXPECT_EQ(view.card(1)->browser()->document()->toPlainText(), QStringLiteral("Use x here\nand there"));
}

TEST(ChatViewMarkdown, InlineCodeAndCodeBlocksUseTheFixedPitchFontAtTheTextSize) {
    ChatView view;
    view.addMessage(QStringLiteral("assistant"),
                    QStringLiteral("Call `frobnicate()` now.\n\n```\nblock_code();\n```\nPlain words."));
    const QTextDocument& document = *view.card(0)->browser()->document();
    // The chat's font grows after the message was rendered (a larger application font, a
    // zoom): code grows with the prose instead of keeping the size it was imported at.
    constexpr int kTextPoints = 21;
    QFont large = view.font();
    large.setPointSize(kTextPoints);
    view.setFont(large);
    ASSERT_EQ(document.defaultFont().pointSize(), kTextPoints);

    const QTextFragment inlineCode = fragment_with(document, QStringLiteral("frobnicate()"));
    ASSERT_TRUE(inlineCode.isValid());
    EXPECT_TRUE(is_fixed_pitch(inlineCode)) << inlineCode.charFormat().font().toString().toStdString();
    EXPECT_EQ(drawn_points(document, inlineCode), kTextPoints);
    const QTextFragment blockCode = fragment_with(document, QStringLiteral("block_code();"));
    ASSERT_TRUE(blockCode.isValid());
    EXPECT_TRUE(is_fixed_pitch(blockCode)) << blockCode.charFormat().font().toString().toStdString();
    EXPECT_EQ(drawn_points(document, blockCode), kTextPoints);
    const QTextFragment prose = fragment_with(document, QStringLiteral("Plain words."));
    ASSERT_TRUE(prose.isValid());
    EXPECT_FALSE(prose.charFormat().fontFixedPitch());
    EXPECT_EQ(drawn_points(document, prose), kTextPoints);
}

TEST(ChatViewMarkdown, TheCodeFontIsFixedPitchByMetricsAndTheProseFontIsNot) {
    EXPECT_TRUE(cflow::ui::is_fixed_pitch_by_metrics(cflow::ui::fixed_pitch_font()))
        << cflow::ui::fixed_pitch_font().toString().toStdString();
    const QFont prose = QFontDatabase::systemFont(QFontDatabase::GeneralFont);
    if (QFontInfo(prose).fixedPitch()) GTEST_SKIP() << "this machine's general font is itself monospaced";
    EXPECT_FALSE(cflow::ui::is_fixed_pitch_by_metrics(prose)) << prose.toString().toStdString();
}

TEST(ChatViewMarkdown, CopyCodeLinkCopiesExactlyItsBlock) {
    ShownView shown;
    ASSERT_TRUE(shown.show());
    const QString first = QStringLiteral("print('first')");
    const QString second = QStringLiteral("second block\n  indented line\n\nafter a blank line");
    // Two fences with only a blank line between them stay two blocks.
    shown.view.addMessage(QStringLiteral("assistant"), QStringLiteral("Two blocks:\n```python\n") + first +
                                                           QStringLiteral("\n```\n\n~~~\n") + second +
                                                           QStringLiteral("\n~~~\nThat is all."));
    ChatMessageCard* card = shown.view.card(0);
    ASSERT_EQ(card->codeBlocks(), QStringList({first, second}));

    QTextBrowser* browser = card->browser();
    const QTextFragment link = fragment_linking(*browser->document(), cflow::ui::copy_code_url(1));
    ASSERT_TRUE(link.isValid());
    EXPECT_FALSE(link.charFormat().toolTip().isEmpty());
    QTextCursor cursor(browser->document());
    cursor.setPosition(link.position() + 1);
    const QPoint onLink = browser->cursorRect(cursor).center();
    ASSERT_FALSE(browser->anchorAt(onLink).isEmpty());

    QGuiApplication::clipboard()->setText(QStringLiteral("untouched"));
    QTest::mouseClick(browser->viewport(), Qt::LeftButton, {}, onLink);
    EXPECT_EQ(QGuiApplication::clipboard()->text(), second);
    EXPECT_EQ(browser->document()->toPlainText().count(QStringLiteral("That is all.")), 1)
        << "the link did not navigate away from the message";

    ASSERT_TRUE(card->copyCodeBlock(0));
    EXPECT_EQ(QGuiApplication::clipboard()->text(), first);
    EXPECT_FALSE(card->copyCodeBlock(2));

    // The whole-message Copy button still copies the Markdown source.
    auto* copy = card->findChild<QPushButton*>(QStringLiteral("copyButton"));
    ASSERT_NE(copy, nullptr);
    QTest::mouseClick(copy, Qt::LeftButton);
    EXPECT_EQ(QGuiApplication::clipboard()->text(), card->text());
}

TEST(ChatViewMarkdown, CopyLinksAreLeftOutOfTheTokenMapping) {
    // The link's letters exist only in the rendering; aligned with the message they would
    // capture the text after the block ("o" of "You").
    const QString text = QStringLiteral("```\nx\n```\nYou can copy code below");
    ChatView view;
    view.addMessage(QStringLiteral("assistant"), text);
    const QTextDocument& document = *view.card(0)->browser()->document();
    const QString mapped = cflow::ui::mapping_text(document);
    EXPECT_FALSE(mapped.contains(QStringLiteral("Copy code")));
    const cflow::ui::RenderedTextMap map(mapped, text);
    const int rendered = static_cast<int>(document.toPlainText().indexOf(QStringLiteral("You")));
    ASSERT_GE(rendered, 0);
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(map.sourceOffset(rendered + i), text.indexOf(QStringLiteral("You")) + i) << "character " << i;
}

} // namespace
