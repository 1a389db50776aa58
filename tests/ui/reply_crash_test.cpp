// A desktop killed (SIGKILL) while a reply streams keeps that reply in its store up to about the
// last second (ChatController::kPersistIntervalMs; issue 36): the real chat controller runs in a
// child process (tests/ui/reply_writer) against a loopback endpoint that records when it sent each
// chunk, and the test kills the child mid-reply and reads the store it leaves.
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

#include <QProcess>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include "cflow/ui/chat_controller.h"
#include "cflow/ui/conversation_store.h"
#include "loopback_server.h"

namespace cflow::ui {
namespace {

using CrashClock = std::chrono::steady_clock;

TEST(ReplyCrash, AKilledDesktopKeepsTheStreamingReplyUpToAboutTheLastSecond) {
    cflow::test::LoopbackServer server;
    std::mutex sentMutex;
    std::vector<CrashClock::time_point> sentAt;  // [chunks sent] when each left the server
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        res.set_chunked_content_provider("text/event-stream", [&](size_t, httplib::DataSink& sink) {
            for (int i = 0; i < 3000 && !server.release; ++i) {
                const std::string e = cflow::test::chunk_event("w");
                if (!sink.write(e.data(), e.size())) return false;
                {
                    std::lock_guard lock(sentMutex);
                    sentAt.push_back(CrashClock::now());
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            sink.done();
            return true;
        });
    });
    server.start();
    QTemporaryDir dir;
    const QString db = dir.filePath(QStringLiteral("studio.sqlite"));
    QProcess child;
    child.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    child.start(QStringLiteral(CFLOW_UI_REPLY_WRITER_PATH), {db, QString::fromStdString(server.base_url())});
    ASSERT_TRUE(child.waitForStarted(10000)) << child.errorString().toStdString();
    // 2.5 s of streaming: two persist intervals and more.
    const auto streamingSince = [&]() -> double {
        std::lock_guard lock(sentMutex);
        return sentAt.empty() ? 0.0 : std::chrono::duration<double>(CrashClock::now() - sentAt.front()).count();
    };
    while (streamingSince() < 2.5 && child.state() == QProcess::Running) child.waitForReadyRead(50);
    ASSERT_EQ(child.state(), QProcess::Running) << "the child ended early: " << child.readAllStandardOutput().toStdString();
    const auto killedAt = CrashClock::now();
    child.kill();  // SIGKILL: no destructors, no last write
    ASSERT_TRUE(child.waitForFinished(10000));
    EXPECT_EQ(child.exitStatus(), QProcess::CrashExit);
    server.release = true;

    // The promise is one second; one more allows for a loaded CI machine's scheduling.
    constexpr auto kAllowed = std::chrono::milliseconds(ChatController::kPersistIntervalMs + 1000);
    size_t sentBeforeAllowance = 0, sentInAll = 0;
    {
        std::lock_guard lock(sentMutex);
        for (const auto& t : sentAt) {
            if (t <= killedAt) ++sentInAll;
            if (t <= killedAt - kAllowed) ++sentBeforeAllowance;
        }
    }
    ASSERT_GT(sentBeforeAllowance, 20u);
    auto store = ConversationStore::open(db);
    ASSERT_TRUE(store) << store.error();
    EXPECT_EQ(*(*store)->integrityCheck(), QStringLiteral("ok"));
    auto conversations = (*store)->conversations();
    ASSERT_TRUE(conversations && conversations->size() == 1u);
    auto messages = (*store)->messages(conversations->at(0).id);
    ASSERT_TRUE(messages && !messages->empty());
    const StoredMessage& reply = messages->back();
    EXPECT_EQ(reply.role, QStringLiteral("assistant"));
    EXPECT_FALSE(reply.complete);
    const qsizetype kept = reply.content.size();
    EXPECT_EQ(reply.content, QString(kept, QLatin1Char('w'))) << "the kept text is the stream's start";
    EXPECT_GE(size_t(kept), sentBeforeAllowance) << "lost text sent more than " << kAllowed.count() << " ms before the kill ("
                                                 << sentInAll << " chunks sent in all)";
    EXPECT_LE(size_t(kept), sentInAll);
}

} // namespace
} // namespace cflow::ui
#endif
