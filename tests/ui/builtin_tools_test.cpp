// The built-in date/time and picked-files tools (issue 33).
#include <fstream>

#include <QDateTime>
#include <QTimeZone>

#include <gtest/gtest.h>

#include "cflow/ui/tools/clock_tool.h"
#include "cflow/ui/tools/picked_files_tool.h"
#include "test_support.h"

namespace cflow::ui {
namespace {

TEST(ClockTool, AnswersIso8601WithOffsetZoneAndWeekday) {
    const QDateTime paris(QDate(2026, 12, 7), QTime(7, 20, 5), QTimeZone("Europe/Paris"));
    ClockTool clock([paris] { return paris; });
    const ToolResult answer = QCoro::waitFor(clock.call({"t", "current_datetime", "{}"}));
    EXPECT_TRUE(answer.ok);
    EXPECT_EQ(answer.text, "2026-12-07T07:20:05+01:00 (Europe/Paris, Monday)");
    const QDateTime kolkata(QDate(2026, 7, 1), QTime(23, 0, 0), QTimeZone("Asia/Kolkata"));
    EXPECT_EQ(ClockTool::describe(kolkata), "2026-07-01T23:00:00+05:30 (Asia/Kolkata, Wednesday)");
    const QDateTime newYork(QDate(2026, 1, 3), QTime(1, 2, 3), QTimeZone("America/New_York"));
    EXPECT_EQ(ClockTool::describe(newYork), "2026-01-03T01:02:03-05:00 (America/New_York, Saturday)");
    // The real clock: the local time now, parseable back as ISO 8601.
    ClockTool local;
    const QString now = QCoro::waitFor(local.call({"t", "current_datetime", "{}"})).text;
    const QDateTime parsed = QDateTime::fromString(now.section(QLatin1Char(' '), 0, 0), Qt::ISODate);
    ASSERT_TRUE(parsed.isValid()) << now.toStdString();
    EXPECT_LT(std::llabs(parsed.secsTo(QDateTime::currentDateTime())), 60);
}

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
}

TEST(PickedFilesTool, ReadsOnlyPickedTextFilesUpToTheCap) {
    const auto dir = cflow::test::temp_dir("picked_files_tool");
    std::filesystem::create_directories(dir / "other");
    write_bytes(dir / "notes.txt", "héllo\nworld\n");
    write_bytes(dir / "big.log", std::string(2000, 'x'));
    write_bytes(dir / "image.bin", std::string("PNG\0\x01", 5));
    write_bytes(dir / "latin1.txt", "caf\xe9");
    write_bytes(dir / "secret.txt", "not picked");
    write_bytes(dir / "other" / "notes.txt", "same name");

    PickedFilesTool files(1024);
    EXPECT_TRUE(files.tools().empty());  // nothing to offer before a pick
    const QStringList refusals = files.addFiles({QString::fromStdString((dir / "notes.txt").string()),
                                                 QString::fromStdString((dir / "big.log").string()),
                                                 QString::fromStdString((dir / "image.bin").string()),
                                                 QString::fromStdString((dir / "latin1.txt").string()),
                                                 QString::fromStdString((dir / "other" / "notes.txt").string())});
    ASSERT_EQ(refusals.size(), 1);
    EXPECT_TRUE(refusals[0].contains("a file of the same name is picked already")) << refusals[0].toStdString();
    ASSERT_EQ(files.tools().size(), 1u);
    EXPECT_EQ(files.tools()[0].name, "read_file");
    EXPECT_NE(files.tools()[0].parameters_json.find(R"("enum":["notes.txt","big.log","image.bin","latin1.txt"])"),
              std::string::npos)
        << files.tools()[0].parameters_json;

    auto read = [&](const char* name) {
        return QCoro::waitFor(files.call({"r", "read_file", std::string(R"({"name": ")") + name + "\"}"}));
    };
    const ToolResult notes = read("notes.txt");
    EXPECT_TRUE(notes.ok);
    EXPECT_EQ(notes.text, QString::fromUtf8("héllo\nworld\n"));
    EXPECT_EQ(read("big.log").text, "big.log is 2.0 KiB; read_file reads files up to 1 KiB");
    EXPECT_EQ(read("image.bin").text, "image.bin is not a text file (it holds NUL bytes)");
    EXPECT_EQ(read("latin1.txt").text, "latin1.txt is not UTF-8 text");
    const ToolResult secret = read("secret.txt");
    EXPECT_FALSE(secret.ok);
    EXPECT_EQ(secret.text, "secret.txt is not among the files the user picked; only those can be read");
    EXPECT_FALSE(read("../secret.txt").ok);

    files.removeFile("notes.txt");
    EXPECT_FALSE(read("notes.txt").ok);
}

} // namespace
} // namespace cflow::ui
