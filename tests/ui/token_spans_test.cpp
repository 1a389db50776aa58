// The bookkeeping behind "click a token in the chat": TokenSpans (which characters of a
// streamed reply each token wrote, batch by batch, in UTF-16 units) and RenderedTextMap
// (rendered Markdown characters back to the raw reply text), the latter checked against
// real QTextDocument::setMarkdown output.
#include <QString>
#include <QTextDocument>

#include <gtest/gtest.h>

#include "cflow/ui/rendered_text_map.h"
#include "cflow/ui/token_spans.h"

namespace {

using cflow::ui::RenderedTextMap;
using cflow::ui::TokenPieces;
using cflow::ui::TokenSpan;
using cflow::ui::TokenSpans;

int len(const QString& s) { return static_cast<int>(s.size()); }

const QString kE = QStringLiteral("\u00e9");         // one UTF-16 unit, two UTF-8 bytes
const QString kEmoji = QStringLiteral("\U0001F600");  // a surrogate pair, four UTF-8 bytes

TEST(TokenSpansTest, BatchesAppendAndOffsetsFindTheirToken) {
    TokenSpans spans;
    // Batch 1: "He" (position 20) + "llo" (21).
    ASSERT_TRUE(spans.append(0, 5, {{20, 2}, {21, 3}}));
    // Batch 2 at offset 5: " caf" (22), "é" (23), a token whose bytes do not complete a
    // character yet (24, empty), the emoji completed by the next token (25), "!" (26).
    const QString batch2 = QStringLiteral(" caf") + kE + kEmoji + QStringLiteral("!");
    ASSERT_EQ(len(batch2), 4 + 1 + 2 + 1);
    ASSERT_TRUE(spans.append(5, len(batch2), {{22, 4}, {23, len(kE)}, {24, 0}, {25, len(kEmoji)}, {26, 1}}));

    const std::vector<TokenSpan> expected = {{0, 2, 20}, {2, 5, 21}, {5, 9, 22}, {9, 10, 23}, {10, 12, 25}, {12, 13, 26}};
    EXPECT_EQ(spans.spans(), expected) << "the empty piece (24) holds no characters";

    const int expectedPosition[13] = {20, 20, 21, 21, 21, 22, 22, 22, 22, 23, 25, 25, 26};
    for (int offset = 0; offset < 13; ++offset) {
        const auto span = spans.at(offset);
        ASSERT_TRUE(span) << offset;
        EXPECT_EQ(span->position, uint32_t(expectedPosition[offset])) << offset;
        EXPECT_LE(span->start, offset);
        EXPECT_GT(span->end, offset);
    }
    EXPECT_EQ(spans.at(10)->start, 10);  // both halves of the surrogate pair belong to token 25
    EXPECT_EQ(spans.at(11)->end, 12);
    EXPECT_FALSE(spans.at(13)) << "past the text";
    EXPECT_FALSE(spans.at(-1));

    ASSERT_TRUE(spans.find(23));
    EXPECT_EQ(*spans.find(23), (TokenSpan{9, 10, 23}));
    EXPECT_FALSE(spans.find(24)) << "a token that wrote nothing has no span";
    EXPECT_FALSE(spans.find(99));
}

TEST(TokenSpansTest, TextWithoutPiecesHasNoTokens) {
    TokenSpans spans;
    ASSERT_TRUE(spans.append(0, 3, {{7, 3}}));
    // A batch without pieces (or a gap before a batch) leaves its characters unowned.
    EXPECT_FALSE(spans.append(3, 4, {}));
    ASSERT_TRUE(spans.append(10, 2, {{9, 2}}));
    EXPECT_EQ(spans.at(2)->position, 7u);
    for (int offset = 3; offset < 10; ++offset) EXPECT_FALSE(spans.at(offset)) << offset;
    EXPECT_EQ(spans.at(11)->position, 9u);
}

TEST(TokenSpansTest, InconsistentBatchesRecordNothingPastTheBatch) {
    TokenSpans spans;
    // Pieces claiming more text than the batch: only the ones that fit are kept.
    EXPECT_FALSE(spans.append(0, 4, {{1, 3}, {2, 5}}));
    ASSERT_EQ(spans.spans().size(), 1u);
    EXPECT_FALSE(spans.at(3));
    // A batch may not start inside what is already recorded, nor have negative sizes.
    EXPECT_FALSE(spans.append(2, 2, {{3, 2}}));
    EXPECT_FALSE(spans.append(4, -1, {}));
    EXPECT_FALSE(spans.append(4, 2, {{3, -1}, {4, 3}}));
    EXPECT_EQ(spans.spans().size(), 1u);
    // Pieces shorter than the batch: the rest is unowned and the batch is reported.
    EXPECT_FALSE(spans.append(6, 4, {{5, 1}}));
    EXPECT_EQ(spans.at(6)->position, 5u);
    EXPECT_FALSE(spans.at(7));
}

TEST(TokenSpansTest, ClearDropsEverySpan) {
    TokenSpans spans;
    ASSERT_TRUE(spans.append(0, 2, {{4, 1}, {5, 1}}));
    EXPECT_FALSE(spans.empty());
    spans.clear();
    EXPECT_TRUE(spans.empty());
    EXPECT_FALSE(spans.at(0));
    EXPECT_FALSE(spans.find(4));
    // After clearing, a new text starts at offset 0 again.
    ASSERT_TRUE(spans.append(0, 1, {{8, 1}}));
    EXPECT_EQ(spans.at(0)->position, 8u);
}

// Renders source as the chat cards do and returns the document's plain text (index =
// document position, which the test checks against characterAt).
QString render(const QString& source, QTextDocument& doc) {
    doc.setMarkdown(source);
    const QString plain = doc.toPlainText();
    for (int i = 0; i < len(plain); ++i) {
        const QChar c = doc.characterAt(i);
        if (c == QChar::ParagraphSeparator || c == QChar::LineSeparator || c.unicode() == 0xFDD0 ||
            c.unicode() == 0xFDD1) {
            EXPECT_EQ(plain[i], QLatin1Char('\n')) << i;
        } else if (c != QChar::Nbsp) {
            EXPECT_EQ(plain[i], c) << "plain text index " << i << " is not document position " << i;
        }
    }
    return plain;
}

// Every mapped character is the same character in the source, at increasing offsets.
void expect_consistent(const RenderedTextMap& map, const QString& rendered, const QString& source) {
    int previous = -1;
    for (int r = 0; r < len(rendered); ++r) {
        const int s = map.sourceOffset(r);
        if (s < 0) continue;
        ASSERT_LT(s, len(source));
        EXPECT_EQ(rendered[r], source[s]) << "rendered " << r << " -> source " << s;
        EXPECT_GT(s, previous);
        previous = s;
    }
}

// The source offset the rendered occurrence of `word` maps to.
int mapped_offset(const RenderedTextMap& map, const QString& rendered, const QString& word, int from = 0) {
    const int r = len(rendered.left(rendered.indexOf(word, from)));
    return map.sourceOffset(r);
}

TEST(RenderedTextMapTest, PlainTextMapsOneToOne) {
    QTextDocument doc;
    const QString source = QStringLiteral("Hello world, 42 tokens.");
    const QString rendered = render(source, doc);
    ASSERT_EQ(rendered, source);
    const RenderedTextMap map(rendered, source);
    for (int i = 0; i < len(source); ++i) {
        if (source[i].isSpace()) EXPECT_EQ(map.sourceOffset(i), -1) << "whitespace is not mapped";
        else EXPECT_EQ(map.sourceOffset(i), i);
    }
    EXPECT_EQ(map.sourceOffset(len(source)), -1);
    EXPECT_EQ(map.sourceOffset(-1), -1);
}

TEST(RenderedTextMapTest, DroppedMarkupDoesNotShiftTheContent) {
    QTextDocument doc;
    const QString source = QStringLiteral("# Title\n\nSome **bold** and *ital* text with `code`.\n\n- one\n- two\n");
    const QString rendered = render(source, doc);
    ASSERT_FALSE(rendered.contains(QLatin1Char('*')));
    ASSERT_FALSE(rendered.contains(QLatin1Char('#')));
    const RenderedTextMap map(rendered, source);
    expect_consistent(map, rendered, source);
    for (const char* word : {"Title", "Some", "bold", "and", "ital", "text", "code", "one", "two"}) {
        const QString w = QString::fromLatin1(word);
        EXPECT_EQ(mapped_offset(map, rendered, w), source.indexOf(w)) << word;
    }
}

TEST(RenderedTextMapTest, FenceInfoStringsAndLinkTargetsDoNotCaptureContent) {
    QTextDocument doc;
    const QString source = QStringLiteral(
        "```python\nprint(1)\n```\n\nSee [Paris](https://example.com/wiki/Paris) is big.\n\n3. 3 apples\n");
    const QString rendered = render(source, doc);
    ASSERT_FALSE(rendered.contains(QStringLiteral("python")));
    ASSERT_FALSE(rendered.contains(QStringLiteral("https")));
    const RenderedTextMap map(rendered, source);
    expect_consistent(map, rendered, source);
    // "print" is the code, not the "p" of "python"; "is" follows the link, not its target.
    EXPECT_EQ(mapped_offset(map, rendered, QStringLiteral("print")), source.indexOf(QStringLiteral("print")));
    EXPECT_EQ(mapped_offset(map, rendered, QStringLiteral("Paris")), source.indexOf(QStringLiteral("Paris")));
    EXPECT_EQ(mapped_offset(map, rendered, QStringLiteral("is big")), source.indexOf(QStringLiteral("is big")));
    // The list item's "3" is the content, not the list number.
    EXPECT_EQ(mapped_offset(map, rendered, QStringLiteral("3 apples")), source.indexOf(QStringLiteral("3 apples")));
}

TEST(RenderedTextMapTest, MultiUnitCharactersAndTheInverseRange) {
    QTextDocument doc;
    const QString source = QStringLiteral("**caf") + kE + QStringLiteral("** ") + kEmoji + QStringLiteral(" ok");
    const QString rendered = render(source, doc);
    const QString expected = QStringLiteral("caf") + kE + QStringLiteral(" ") + kEmoji + QStringLiteral(" ok");
    ASSERT_EQ(rendered, expected);
    const RenderedTextMap map(rendered, source);
    expect_consistent(map, rendered, source);
    const int emojiRendered = len(rendered.left(rendered.indexOf(kEmoji)));
    const int emojiSource = len(source.left(source.indexOf(kEmoji)));
    EXPECT_EQ(map.sourceOffset(emojiRendered), emojiSource);
    EXPECT_EQ(map.sourceOffset(emojiRendered + 1), emojiSource + 1) << "both halves of the surrogate pair";
    EXPECT_EQ(map.sourceOffset(3), source.indexOf(kE));

    // The inverse: a source span (a token " " + emoji) -> the rendered characters it covers.
    const auto [first, last] = map.renderedRange(emojiSource - 1, emojiSource + 2);
    EXPECT_EQ(rendered.mid(first, last - first), kEmoji) << "the leading space is not mapped";
    // A span covering only dropped markup shows nothing.
    const auto [f2, l2] = map.renderedRange(0, 2);
    EXPECT_EQ(f2, l2);
    // "caf" + "é" + the closing "**": the rendered "café".
    const auto [f3, l3] = map.renderedRange(2, 8);
    EXPECT_EQ(rendered.mid(f3, l3 - f3), QStringLiteral("caf") + kE);
}

TEST(RenderedTextMapTest, CharactersRenderingAddsStayUnmapped) {
    // An image renders as an object replacement character with no source character.
    QTextDocument doc;
    const QString source = QStringLiteral("before ![alt](missing.png) after");
    const QString rendered = render(source, doc);
    const RenderedTextMap map(rendered, source);
    expect_consistent(map, rendered, source);
    const int object = rendered.indexOf(QChar::ObjectReplacementCharacter);
    if (object >= 0) {
        EXPECT_EQ(map.sourceOffset(object), -1);
    }
    EXPECT_EQ(mapped_offset(map, rendered, QStringLiteral("after")), source.indexOf(QStringLiteral("after")));
    EXPECT_EQ(mapped_offset(map, rendered, QStringLiteral("before")), 0);
}

} // namespace
