// ConversationStore on real SQLite files: schema, CRUD, search, persistence across store
// instances, exports, and a writer process killed with SIGKILL in the middle of a reply.
#include <filesystem>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSqlDatabase>
#include <QSqlQuery>

#include <gtest/gtest.h>

#include "cflow/ui/conversation_store.h"
#include "test_support.h"
#include "ui_test_models.h"

namespace {

using cflow::ui::ConversationStore;
using cflow::ui::test::qpath;

std::unique_ptr<ConversationStore> open_store(const QString& path) {
    auto store = ConversationStore::open(path);
    EXPECT_TRUE(store) << store.error();
    return store ? std::move(store).value() : nullptr;
}

QString fresh_db(const std::string& name) { return qpath(cflow::test::temp_dir(name) / "studio.sqlite"); }

TEST(ConversationStoreTest, UsesWalAndSurvivesReopening) {
    const QString path = fresh_db("store_reopen");
    qint64 first = 0, second = 0, reply = 0;
    {
        auto store = open_store(path);
        ASSERT_TRUE(store);
        auto a = store->createConversation(QStringLiteral("Pipelines"), QStringLiteral("/models/a.cflow"),
                                           QStringLiteral("{\"temperature\":0.7}"));
        ASSERT_TRUE(a) << a.error();
        first = *a;
        auto b = store->createConversation(QStringLiteral("Cats"));
        ASSERT_TRUE(b);
        second = *b;
        ASSERT_TRUE(store->addMessage(first, QStringLiteral("user"), QStringLiteral("What is a tile?")));
        auto r = store->addMessage(first, QStringLiteral("assistant"), QString(), false);
        ASSERT_TRUE(r);
        reply = *r;
        ASSERT_TRUE(store->updateMessage(reply, QStringLiteral("A block of weights."), true));
        ASSERT_TRUE(store->addMessage(second, QStringLiteral("user"), QStringLiteral("Meow")));
    }
    auto store = open_store(path);
    ASSERT_TRUE(store);
    auto list = store->conversations();
    ASSERT_TRUE(list) << list.error();
    ASSERT_EQ(list->size(), 2u);
    EXPECT_EQ(list->at(0).title, QStringLiteral("Cats")) << "most recently updated first";
    EXPECT_EQ(list->at(1).title, QStringLiteral("Pipelines"));
    EXPECT_EQ(list->at(1).modelPath, QStringLiteral("/models/a.cflow"));
    EXPECT_EQ(list->at(1).settingsJson, QStringLiteral("{\"temperature\":0.7}"));
    auto messages = store->messages(first);
    ASSERT_TRUE(messages);
    ASSERT_EQ(messages->size(), 2u);
    EXPECT_EQ(messages->at(0).role, QStringLiteral("user"));
    EXPECT_EQ(messages->at(0).content, QStringLiteral("What is a tile?"));
    EXPECT_EQ(messages->at(1).id, reply);
    EXPECT_EQ(messages->at(1).content, QStringLiteral("A block of weights."));
    EXPECT_TRUE(messages->at(1).complete);

    QSqlDatabase raw = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("raw-check"));
    raw.setDatabaseName(path);
    ASSERT_TRUE(raw.open());
    {
        QSqlQuery q(raw);
        ASSERT_TRUE(q.exec(QStringLiteral("PRAGMA journal_mode")) && q.next());
        EXPECT_EQ(q.value(0).toString(), QStringLiteral("wal"));
    }
    raw.close();
    raw = QSqlDatabase();
    QSqlDatabase::removeDatabase(QStringLiteral("raw-check"));
}

TEST(ConversationStoreTest, RenameDeleteSearchAndTruncate) {
    auto store = open_store(fresh_db("store_crud"));
    ASSERT_TRUE(store);
    const qint64 a = *store->createConversation(QStringLiteral("Alpha"));
    const qint64 b = *store->createConversation(QStringLiteral("Beta"));
    ASSERT_TRUE(store->addMessage(b, QStringLiteral("user"), QStringLiteral("Explain the KV cache")));
    ASSERT_TRUE(store->renameConversation(a, QStringLiteral("Renamed alpha")));
    EXPECT_EQ(store->conversation(a)->title, QStringLiteral("Renamed alpha"));
    EXPECT_FALSE(store->renameConversation(9999, QStringLiteral("x"))) << "renaming a missing id must fail";

    auto byTitle = store->conversations(QStringLiteral("ALPHA"));
    ASSERT_TRUE(byTitle);
    ASSERT_EQ(byTitle->size(), 1u);
    EXPECT_EQ(byTitle->at(0).id, a);
    auto byContent = store->conversations(QStringLiteral("kv cache"));
    ASSERT_EQ(byContent->size(), 1u);
    EXPECT_EQ(byContent->at(0).id, b);
    EXPECT_TRUE(store->conversations(QStringLiteral("nothing like this"))->empty());

    const qint64 m1 = *store->addMessage(a, QStringLiteral("user"), QStringLiteral("one"));
    const qint64 m2 = *store->addMessage(a, QStringLiteral("assistant"), QStringLiteral("two"));
    ASSERT_TRUE(store->addMessage(a, QStringLiteral("user"), QStringLiteral("three")));
    ASSERT_TRUE(store->deleteMessagesFrom(a, m2));
    auto left = store->messages(a);
    ASSERT_EQ(left->size(), 1u);
    EXPECT_EQ(left->at(0).id, m1);

    ASSERT_TRUE(store->setModel(a, QStringLiteral("/m.cflow")));
    ASSERT_TRUE(store->setSettings(a, QStringLiteral("{\"top_k\":5}")));
    EXPECT_EQ(store->conversation(a)->modelPath, QStringLiteral("/m.cflow"));
    EXPECT_EQ(store->conversation(a)->settingsJson, QStringLiteral("{\"top_k\":5}"));

    ASSERT_TRUE(store->deleteConversation(b));
    EXPECT_FALSE(store->conversation(b));
    EXPECT_TRUE(store->messages(b)->empty()) << "messages are deleted with their conversation";
    EXPECT_EQ(*store->integrityCheck(), QStringLiteral("ok"));
}

TEST(ConversationStoreTest, ExportsMarkdownAndJson) {
    const auto dir = cflow::test::temp_dir("store_export");
    auto store = open_store(qpath(dir / "studio.sqlite"));
    ASSERT_TRUE(store);
    const qint64 id = *store->createConversation(QStringLiteral("Export me"), QStringLiteral("/m/x.cflow"),
                                                 QStringLiteral("{\"seed\":42}"));
    ASSERT_TRUE(store->addMessage(id, QStringLiteral("system"), QStringLiteral("Be brief.")));
    ASSERT_TRUE(store->addMessage(id, QStringLiteral("user"), QStringLiteral("Show code")));
    ASSERT_TRUE(store->addMessage(id, QStringLiteral("assistant"), QStringLiteral("```cpp\nint x = 1;\n```")));

    const QString md = qpath(dir / "chat.md");
    ASSERT_TRUE(store->exportMarkdown(id, md));
    QFile mdFile(md);
    ASSERT_TRUE(mdFile.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(mdFile.readAll());
    EXPECT_TRUE(text.startsWith(QStringLiteral("# Export me\n"))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("Model: `/m/x.cflow`")));
    const qsizetype sys = text.indexOf(QStringLiteral("## System\n\nBe brief.\n"));
    const qsizetype user = text.indexOf(QStringLiteral("## User\n\nShow code\n"));
    const qsizetype assistant = text.indexOf(QStringLiteral("## Assistant\n\n```cpp\nint x = 1;\n```\n"));
    EXPECT_GE(sys, 0);
    EXPECT_GT(user, sys);
    EXPECT_GT(assistant, user) << text.toStdString();

    const QString json = qpath(dir / "chat.json");
    ASSERT_TRUE(store->exportJson(id, json));
    QFile jsonFile(json);
    ASSERT_TRUE(jsonFile.open(QIODevice::ReadOnly));
    const QJsonObject root = QJsonDocument::fromJson(jsonFile.readAll()).object();
    EXPECT_EQ(root.value(QStringLiteral("title")).toString(), QStringLiteral("Export me"));
    EXPECT_EQ(root.value(QStringLiteral("model_path")).toString(), QStringLiteral("/m/x.cflow"));
    EXPECT_EQ(root.value(QStringLiteral("settings")).toObject().value(QStringLiteral("seed")).toInt(), 42);
    const QJsonArray messages = root.value(QStringLiteral("messages")).toArray();
    ASSERT_EQ(messages.size(), 3);
    EXPECT_EQ(messages[1].toObject().value(QStringLiteral("role")).toString(), QStringLiteral("user"));
    EXPECT_EQ(messages[2].toObject().value(QStringLiteral("content")).toString(), QStringLiteral("```cpp\nint x = 1;\n```"));
    EXPECT_TRUE(messages[2].toObject().value(QStringLiteral("complete")).toBool());
    // No temporary file is left beside the exports.
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        if (entry.path().extension() != ".sqlite" && entry.path().string().find("sqlite-") == std::string::npos) ++files;
    EXPECT_EQ(files, 2);

    EXPECT_FALSE(store->exportJson(id, qpath(dir / "no-such-dir" / "x.json")));
    EXPECT_FALSE(store->exportMarkdown(9999, qpath(dir / "missing.md")));
}

TEST(ConversationStoreTest, KilledWriterLosesNoCompletedMessage) {
    const QString path = fresh_db("store_crash");
    QProcess writer;
    writer.setProcessChannelMode(QProcess::SeparateChannels);
    writer.start(QStringLiteral(CFLOW_UI_DB_WRITER_PATH), {path});
    ASSERT_TRUE(writer.waitForStarted(10000)) << writer.errorString().toStdString();

    // Read progress lines until the reply has streamed a while, then SIGKILL mid-stream.
    int completed = 0;
    int streamed = -1;
    QByteArray buffer;
    while (streamed < 200) {
        if (!writer.waitForReadyRead(30000)) break;
        buffer += writer.readAllStandardOutput();
        qsizetype nl;
        while ((nl = buffer.indexOf('\n')) >= 0) {
            const QByteArray line = buffer.left(nl);
            buffer.remove(0, nl + 1);
            if (line.startsWith("committed ")) completed = line.mid(10).toInt();
            if (line.startsWith("streamed ")) streamed = line.mid(9).toInt();
        }
    }
    ASSERT_GE(streamed, 200) << "the writer stopped early: " << writer.readAllStandardError().toStdString();
    writer.kill();  // SIGKILL on POSIX: no destructors, no SQLite close
    ASSERT_TRUE(writer.waitForFinished(10000));
    EXPECT_EQ(writer.exitStatus(), QProcess::CrashExit);
    ASSERT_EQ(completed, 6);

    auto store = open_store(path);
    ASSERT_TRUE(store);
    EXPECT_EQ(*store->integrityCheck(), QStringLiteral("ok"));
    auto list = store->conversations();
    ASSERT_EQ(list->size(), 1u);
    auto messages = store->messages(list->at(0).id);
    ASSERT_TRUE(messages);
    ASSERT_EQ(messages->size(), 7u);
    for (int i = 0; i < 6; ++i) {
        EXPECT_TRUE(messages->at(size_t(i)).complete);
        EXPECT_EQ(messages->at(size_t(i)).content, QStringLiteral("message %1").arg(i));
    }
    // The reply in flight: not complete, and holding at least every chunk reported as committed.
    const cflow::ui::StoredMessage& inFlight = messages->back();
    EXPECT_FALSE(inFlight.complete);
    QString expected;
    for (int i = 0; i <= streamed; ++i) expected += QStringLiteral("tok%1 ").arg(i);
    EXPECT_TRUE(inFlight.content.startsWith(expected)) << "lost committed text; have " << inFlight.content.size()
                                                       << " chars, expected at least " << expected.size();
}

} // namespace

namespace {

// Issue 33: a reply's tool calls and a tool result's call id live in the messages column `extra`,
// which a database made before it gets on open; the exports carry them.
TEST(ConversationStoreTest, ToolCallsAreStoredInAnOlderDatabaseAndExported) {
    const auto dir = cflow::test::temp_dir("store_tool_calls");
    const QString path = qpath(dir / "studio.sqlite");
    {
        // The first release's schema: no model_path / stopped / versions / version / extra columns.
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("old_schema"));
        db.setDatabaseName(path);
        ASSERT_TRUE(db.open());
        QSqlQuery q(db);
        ASSERT_TRUE(q.exec(QStringLiteral("CREATE TABLE conversations (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, "
                                          "model_path TEXT NOT NULL DEFAULT '', settings TEXT NOT NULL DEFAULT '{}', "
                                          "created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL)")));
        ASSERT_TRUE(q.exec(QStringLiteral("CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, conversation_id INTEGER "
                                          "NOT NULL REFERENCES conversations(id) ON DELETE CASCADE, role TEXT NOT NULL, "
                                          "content TEXT NOT NULL, created_ms INTEGER NOT NULL, complete INTEGER NOT NULL DEFAULT 1)")));
        ASSERT_TRUE(q.exec(QStringLiteral("INSERT INTO conversations (title, created_ms, updated_ms) VALUES ('old', 1, 1)")));
        ASSERT_TRUE(q.exec(QStringLiteral("INSERT INTO messages (conversation_id, role, content, created_ms) VALUES (1, 'user', 'hi', 1)")));
        q.finish();
        db.close();
    }
    QSqlDatabase::removeDatabase(QStringLiteral("old_schema"));
    auto store = open_store(path);
    ASSERT_TRUE(store);
    auto before = store->messages(1);
    ASSERT_TRUE(before) << before.error();
    ASSERT_EQ(before->size(), 1u);
    EXPECT_TRUE((*before)[0].extraJson.isEmpty());

    const QString calls = QStringLiteral(
        R"({"tool_calls":[{"id":"call_1","type":"function","function":{"name":"calculator","arguments":{"expression":"2+3"}}}]})");
    auto reply = store->addMessage(1, QStringLiteral("assistant"), QStringLiteral("Let me compute."), false);
    ASSERT_TRUE(reply);
    ASSERT_TRUE(store->setExtra(*reply, calls));
    ASSERT_TRUE(store->setReplyDetails(*reply, QStringLiteral("endpoint:http://h:8000/v1#m"), false,
                                       QStringLiteral("the server closed the connection")));
    const QString result = QStringLiteral(R"({"tool_call_id":"call_1","name":"calculator"})");
    ASSERT_TRUE(store->addMessage(1, QStringLiteral("tool"), QStringLiteral("5"), true, result));
    EXPECT_FALSE(store->setExtra(9999, calls)) << "no such message";
    store.reset();

    store = open_store(path);  // a restart
    ASSERT_TRUE(store);
    auto after = store->messages(1);
    ASSERT_TRUE(after);
    ASSERT_EQ(after->size(), 3u);
    EXPECT_EQ((*after)[1].extraJson, calls);
    EXPECT_EQ((*after)[1].cutReason, QStringLiteral("the server closed the connection")) << "the added cut_reason column";
    EXPECT_TRUE((*after)[0].cutReason.isEmpty());
    EXPECT_EQ((*after)[2].role, QStringLiteral("tool"));
    EXPECT_EQ((*after)[2].extraJson, result);

    const QString md = qpath(dir / "chat.md");
    ASSERT_TRUE(store->exportMarkdown(1, md));
    QFile mdFile(md);
    ASSERT_TRUE(mdFile.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(mdFile.readAll());
    EXPECT_TRUE(text.contains(QStringLiteral("Let me compute.\n\n**Tool call:** `calculator`\n\n```json\n{\n    \"expression\": \"2+3\"\n}\n```\n")))
        << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("## Tool (calculator)\n\n5\n"))) << text.toStdString();

    const QString json = qpath(dir / "chat.json");
    ASSERT_TRUE(store->exportJson(1, json));
    QFile jsonFile(json);
    ASSERT_TRUE(jsonFile.open(QIODevice::ReadOnly));
    const QJsonArray messages = QJsonDocument::fromJson(jsonFile.readAll()).object().value(QStringLiteral("messages")).toArray();
    ASSERT_EQ(messages.size(), 3);
    const QJsonObject call = messages[1].toObject().value(QStringLiteral("tool_calls")).toArray().at(0).toObject();
    EXPECT_EQ(call.value(QStringLiteral("id")).toString(), QStringLiteral("call_1"));
    EXPECT_EQ(call.value(QStringLiteral("function")).toObject().value(QStringLiteral("name")).toString(), QStringLiteral("calculator"));
    EXPECT_EQ(messages[2].toObject().value(QStringLiteral("tool_call_id")).toString(), QStringLiteral("call_1"));
    EXPECT_EQ(messages[2].toObject().value(QStringLiteral("content")).toString(), QStringLiteral("5"));
    EXPECT_FALSE(messages[0].toObject().contains(QStringLiteral("tool_calls")));
}

} // namespace
