// The conversation database at start when it cannot be used as it is (issue 38). Before: an
// unreadable file (truncated, bad header) made the app fall back to an in-memory database whose
// conversations vanished at exit, with a status message gone in half a second and a stray `:`
// folder in the working directory; damaged pages in the middle went unnoticed and the app wrote on
// into the file; a reply cut by kill -9 came back without a mark. Now the user is asked, naming
// the file and the problem, and the choice holds.
#include <filesystem>
#include <fstream>
#include <vector>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLabel>

#include <gtest/gtest.h>

#include "cflow/ui/chat_panel.h"
#include "cflow/ui/chat_view.h"
#include "cflow/ui/conversation_store.h"
#include "cflow/ui/database_recovery.h"
#include "cflow/ui/main_window.h"
#include "test_support.h"
#include "ui_test_models.h"

namespace {

using cflow::ui::ConversationStore;
using cflow::ui::DamagedDatabaseChoice;
using cflow::ui::test::qpath;

// A database of `conversations` conversations of 20 messages of 1 KB each (many pages), closed
// so that its journal is folded into the file.
QString write_database(const std::string& name, int conversations) {
    const QString path = qpath(cflow::test::temp_dir(name) / "studio.sqlite");
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) QFile::remove(path + QLatin1String(suffix));
    QDir dir(QFileInfo(path).absolutePath());
    for (const QString& stale : dir.entryList({QStringLiteral("studio.sqlite.damaged-*")})) QFile::remove(dir.filePath(stale));
    auto store = ConversationStore::open(path);
    EXPECT_TRUE(store) << store.error();
    for (int c = 0; c < conversations; ++c) {
        auto id = (*store)->createConversation(QStringLiteral("Conversation %1").arg(c));
        EXPECT_TRUE(id);
        for (int m = 0; m < 20; ++m)
            EXPECT_TRUE((*store)->addMessage(*id, m % 2 ? QStringLiteral("assistant") : QStringLiteral("user"),
                                             QString(1000, QChar(u'a' + m))));
    }
    return path;
}

std::vector<char> bytes_of(const QString& path) {
    std::ifstream in(path.toStdString(), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Records each question and answers with `choice`.
struct Asker {
    DamagedDatabaseChoice choice;
    QStringList paths, problems;
    cflow::ui::DamagedDatabaseAsk ask() {
        return [this](const QString& path, const QString& problem) {
            paths << path;
            problems << problem;
            return choice;
        };
    }
};

TEST(DatabaseRecovery, ASoundFileOpensWithoutAQuestion) {
    const QString path = write_database("db-sound", 2);
    Asker asker{DamagedDatabaseChoice::Quit};
    auto opened = cflow::ui::open_conversation_store(path, asker.ask());
    ASSERT_TRUE(opened.store);
    EXPECT_TRUE(opened.notice.isEmpty());
    EXPECT_TRUE(asker.problems.isEmpty());
}

TEST(DatabaseRecovery, ATruncatedFileIsAskedAboutAndMovedAsideOnRequest) {
    const QString path = write_database("db-truncated", 3);
    ASSERT_TRUE(QFile::resize(path, 100));  // the header is cut: "file is not a database"
    Asker asker{DamagedDatabaseChoice::MoveAsideAndStartNew};
    auto opened = cflow::ui::open_conversation_store(path, asker.ask());
    ASSERT_EQ(asker.problems.size(), 1);
    EXPECT_EQ(asker.paths[0], path);
    EXPECT_FALSE(asker.problems[0].isEmpty());
    ASSERT_TRUE(opened.store);
    EXPECT_FALSE(opened.store->readOnly());
    auto list = opened.store->conversations();
    ASSERT_TRUE(list);
    EXPECT_TRUE(list->empty()) << "a new, empty database";
    ASSERT_TRUE(opened.store->createConversation(QStringLiteral("kept")));
    // The damaged file is kept, byte for byte, beside the new one, and the notice says where.
    const QStringList aside = QDir(QFileInfo(path).absolutePath()).entryList({QStringLiteral("studio.sqlite.damaged-*")});
    ASSERT_EQ(aside.size(), 1) << aside.join(u' ').toStdString();
    EXPECT_EQ(QFileInfo(QFileInfo(path).absolutePath() + u'/' + aside[0]).size(), 100);
    EXPECT_TRUE(opened.notice.contains(aside[0])) << opened.notice.toStdString();
}

TEST(DatabaseRecovery, DamagedPagesInTheMiddleAreFoundAndTheCopyIsReadOnly) {
    const QString path = write_database("db-garbage", 12);
    const qint64 size = QFileInfo(path).size();
    ASSERT_GT(size, 40 * 4096);
    {
        QFile f(path);
        ASSERT_TRUE(f.open(QIODevice::ReadWrite));
        for (qint64 page = 10; page < 14; ++page) {  // four b-tree pages, header and cells overwritten
            f.seek(page * 4096);
            f.write(QByteArray(300, '\xA5'));
        }
    }
    const std::vector<char> damaged = bytes_of(path);
    Asker asker{DamagedDatabaseChoice::OpenCopyReadOnly};
    auto opened = cflow::ui::open_conversation_store(path, asker.ask());
    ASSERT_EQ(asker.problems.size(), 1);
    EXPECT_TRUE(asker.problems[0].contains(QStringLiteral("damaged"))) << asker.problems[0].toStdString();
    ASSERT_TRUE(opened.store);
    EXPECT_TRUE(opened.store->readOnly());
    EXPECT_TRUE(opened.notice.contains(QStringLiteral("Read-only copy"))) << opened.notice.toStdString();
    EXPECT_TRUE(opened.notice.contains(QDir::toNativeSeparators(path))) << opened.notice.toStdString();
    EXPECT_FALSE(opened.store->createConversation(QStringLiteral("not kept"))) << "nothing is written";
    opened.store.reset();
    EXPECT_EQ(bytes_of(path), damaged) << "the damaged original is untouched";
}

TEST(DatabaseRecovery, QuitOpensNothing) {
    const QString path = write_database("db-quit", 1);
    ASSERT_TRUE(QFile::resize(path, 100));
    Asker asker{DamagedDatabaseChoice::Quit};
    auto opened = cflow::ui::open_conversation_store(path, asker.ask());
    EXPECT_FALSE(opened.store);
    EXPECT_EQ(asker.problems.size(), 1);
    EXPECT_EQ(QFileInfo(path).size(), 100) << "the file is left as it was";
}

TEST(DatabaseRecovery, TheWindowShowsTheNoticeAndLeavesNoStrayFolder) {
    cflow::ui::test::ScopedDb db("db-window");
    {
        const QString sound = write_database("db-window", 1);
        ASSERT_EQ(sound, db.path);
    }
    ASSERT_TRUE(QFile::resize(db.path, 100));
    // Qt reads a path starting with ':' as a resource; the folder is on disk in the working directory.
    const std::filesystem::path strayFolder = std::filesystem::current_path() / ":";
    std::error_code ignored;
    std::filesystem::remove(strayFolder, ignored);
    Asker asker{DamagedDatabaseChoice::MoveAsideAndStartNew};
    cflow::ui::MainWindowOptions options;
    options.onDamagedDatabase = asker.ask();
    cflow::ui::MainWindow window(nullptr, options);
    EXPECT_EQ(asker.problems.size(), 1);
    EXPECT_FALSE(window.quitRequested());
    EXPECT_TRUE(window.chatPanel()->noticeText().contains(QStringLiteral("was moved to")))
        << window.chatPanel()->noticeText().toStdString();
    EXPECT_FALSE(std::filesystem::exists(strayFolder));
}

TEST(DatabaseRecovery, AReplyCutByACrashIsMarkedInterrupted) {
    cflow::ui::test::ScopedDb db("db-interrupted");
    for (const char* suffix : {"", "-wal", "-shm"}) QFile::remove(db.path + QLatin1String(suffix));
    qint64 conversation = 0;
    {
        auto store = ConversationStore::open(db.path);
        ASSERT_TRUE(store);
        conversation = *(*store)->createConversation(QStringLiteral("cut"));
        ASSERT_TRUE((*store)->addMessage(conversation, QStringLiteral("user"), QStringLiteral("Tell me a story")));
        ASSERT_TRUE((*store)->addMessage(conversation, QStringLiteral("assistant"), QStringLiteral("Once upon a"), false));
        ASSERT_TRUE((*store)->addMessage(conversation, QStringLiteral("user"), QStringLiteral("Go on")));
        ASSERT_TRUE((*store)->addMessage(conversation, QStringLiteral("assistant"), QStringLiteral("The end."), true));
    }
    cflow::ui::MainWindow window;
    ASSERT_TRUE(window.chatPanel()->openConversation(conversation));
    cflow::ui::ChatView* view = window.chatPanel()->view();
    ASSERT_EQ(view->count(), 4);
    EXPECT_TRUE(view->card(1)->isInterrupted());
    EXPECT_FALSE(view->card(3)->isInterrupted());
    EXPECT_FALSE(view->card(0)->isInterrupted());
    auto* marker = view->card(1)->findChild<QLabel*>(QStringLiteral("interruptedMarker"));
    ASSERT_TRUE(marker);
    EXPECT_FALSE(marker->isHidden());
    EXPECT_EQ(marker->text(), QStringLiteral("interrupted"));
}

} // namespace
