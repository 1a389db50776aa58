// suggested_export_file_name / with_export_extension: what the export dialog proposes for a
// conversation and the extension a chosen path gets.
#include <gtest/gtest.h>

#include "cflow/ui/conversation_export.h"

namespace {

using cflow::ui::suggested_export_file_name;
using cflow::ui::with_export_extension;

TEST(ExportFileName, IsThePlainTitleWithTheFormatsExtension) {
    EXPECT_EQ(suggested_export_file_name(QStringLiteral("# Plan for **Monday**"), false),
              QStringLiteral("Plan for Monday.md"));
    EXPECT_EQ(suggested_export_file_name(QStringLiteral("Plan for Monday"), true), QStringLiteral("Plan for Monday.json"));
}

TEST(ExportFileName, HasNoCharactersFileSystemsRefuse) {
    const QString name = suggested_export_file_name(QStringLiteral("a/b\\c:d*e?f\"g<h>i|j\tk\x01l\u202Em"), false);
    EXPECT_EQ(name, QStringLiteral("a b c de f g h i j k l m.md")) << "* is emphasis to plain_title";
    for (QChar c : QStringLiteral("/\\:*?\"<>|")) EXPECT_FALSE(name.contains(c)) << int(c.unicode());
    EXPECT_EQ(suggested_export_file_name(QStringLiteral("../../etc/passwd"), false), QStringLiteral("etc passwd.md"));
    EXPECT_EQ(suggested_export_file_name(QStringLiteral("...hidden. "), true), QStringLiteral("hidden.json"));
    EXPECT_EQ(suggested_export_file_name(QStringLiteral("nul"), false), QStringLiteral("nul conversation.md"));
}

TEST(ExportFileName, IsShortAndNeverEmpty) {
    const QString name = suggested_export_file_name(QString(QStringLiteral("word ")).repeated(40), true);
    EXPECT_TRUE(name.endsWith(QStringLiteral("word.json"))) << name.toStdString() << ": cut without a trailing space";
    EXPECT_LE(name.size() - 5, cflow::ui::kMaxExportBaseChars);
    EXPECT_EQ(suggested_export_file_name(QString(), false), QStringLiteral("conversation.md"));
    EXPECT_EQ(suggested_export_file_name(QStringLiteral("**`?`**"), true), QStringLiteral("conversation.json"));
}

TEST(ExportFileName, ChosenPathsGetTheExtensionOnce) {
    EXPECT_EQ(with_export_extension(QStringLiteral("/tmp/chat"), false), QStringLiteral("/tmp/chat.md"));
    EXPECT_EQ(with_export_extension(QStringLiteral("/tmp/chat"), true), QStringLiteral("/tmp/chat.json"));
    EXPECT_EQ(with_export_extension(QStringLiteral("/tmp/chat.md"), false), QStringLiteral("/tmp/chat.md"));
    EXPECT_EQ(with_export_extension(QStringLiteral("/tmp/CHAT.JSON"), true), QStringLiteral("/tmp/CHAT.JSON"));
    EXPECT_EQ(with_export_extension(QStringLiteral("/tmp/chat.md"), true), QStringLiteral("/tmp/chat.md.json"));
    EXPECT_EQ(with_export_extension(QStringLiteral("/tmp/v1.2"), false), QStringLiteral("/tmp/v1.2.md"));
    EXPECT_EQ(with_export_extension(QString(), false), QString());
}

} // namespace
