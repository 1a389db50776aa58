// Remote endpoints in the chat (issue 34): a conversation replied to by an endpoint goes through
// the same ChatController, transcript, store and export as the local engine. The endpoint is a real
// `cflow serve` (tests/remote/serve_process.h, the bundled model) on loopback.
#if CFLOW_HAVE_QT_NETWORK_TRANSPORT
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <atomic>
#include <functional>

#include <QAction>
#include <QComboBox>
#include <QDialog>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include <gtest/gtest.h>

#include "cflow/ui/chat_controller.h"
#include "cflow/ui/chat_panel.h"
#include "cflow/ui/chat_view.h"
#include "cflow/ui/compare_wizard.h"
#include "cflow/ui/default_model.h"
#include "cflow/ui/main_window.h"
#include "cflow/ui/remote/connect_dialog.h"
#include "cflow/ui/remote/memory_secret_store.h"
#include "cflow/ui/sampling_panel.h"
#include "cflow/ui/context_gauge.h"
#include "cflow/ui/conversation_store.h"
#include "cflow/ui/engine_worker.h"
#include "cflow/ui/inspector/inspector_dock.h"
#include "cflow/ui/inspector/latency_timeline.h"
#include "cflow/ui/inspector/routing_panel.h"
#include "cflow/ui/status_area.h"
#include "cflow/ui/telemetry_ring.h"
#include "cflow/ui/remote/remote_worker.h"
#include "loopback_server.h"
#include "serve_process.h"
#include "ui_test_models.h"

namespace cflow::ui {
namespace {

constexpr int kReplyTimeoutMs = 60'000;

// cflow serve arguments for replies that go on until Stop (or the kill): the synthetic ChatML test
// model (random weights: an end-of-turn token is rare) with a sliding window past its context.
// The bundled model ends its stories within a few batches, sometimes before a Stop arrives.
std::vector<std::string> endless_replies(std::vector<std::string> extra = {}) {
    for (const char* arg : {"--context-policy", "sliding-window", "--threads", "1"}) extra.emplace_back(arg);
    extra.push_back(test::chatml_model().string());
    return extra;
}

// Sends (through send) until a reply is still streaming after `batches` batches: the random-weight
// model ends a reply now and then (it samples its end-of-turn token), which would leave nothing to
// stop or cut. At most 8 tries; false when no reply kept going.
bool streaming_reply(ChatController* controller, const std::function<void()>& send, int batches) {
    for (int attempt = 0; attempt < 8; ++attempt) {
        QSignalSpy streamed(controller, &ChatController::replyStreamed);
        send();
        if (!controller->isGenerating()) return false;  // refused
        (void)QTest::qWaitFor([&] { return streamed.count() >= batches || !controller->isGenerating(); }, kReplyTimeoutMs);
        if (controller->isGenerating() && streamed.count() >= batches) return true;
        (void)QTest::qWaitFor([&] { return !controller->isGenerating(); }, kReplyTimeoutMs);
    }
    return false;
}

EndpointProfile profile_for(const cflow::test::ServeProcess& serve) {
    EndpointProfile profile;
    profile.id = QStringLiteral("test-profile");
    profile.name = QStringLiteral("loopback serve");
    profile.baseUrl = QString::fromStdString(serve.base_url());
    profile.readTimeoutS = 30;
    return profile;
}

TEST(RemoteChatRequest, MapsTheConversationAndTheSampling) {
    EndpointProfile profile;
    profile.model = QStringLiteral("qwen");
    Conversation conversation = {{QStringLiteral("system"), QStringLiteral("Be brief.")},
                                 {QStringLiteral("user"), QStringLiteral("What is 2+2?")},
                                 {QStringLiteral("assistant"), QStringLiteral("<call>"), QStringLiteral("{\"tool_calls\":[]}")},
                                 {QStringLiteral("tool"), QStringLiteral("4")},
                                 {QStringLiteral("assistant"), QStringLiteral("4")}};
    GenerationSettings settings;
    settings.sampling.temperature = 0.5f;
    settings.sampling.top_k = 0;       // disabled: left out
    settings.sampling.top_p = 0.9f;
    settings.sampling.min_p = 0.0f;    // disabled: left out
    settings.sampling.repeat_penalty = 1.1f;
    settings.sampling.seed = 7;
    settings.maxTokens = 0;  // the local context's quarter means nothing to a server: left out
    const remote::RemoteChatRequest request = remote_chat_request(profile, conversation, settings);
    EXPECT_EQ(request.model, "qwen");
    ASSERT_EQ(request.messages.size(), 4u) << "the tool result is not sent (tools are not offered to servers)";
    EXPECT_EQ(request.messages[0].role, "system");
    EXPECT_EQ(request.messages[1].content, "What is 2+2?");
    EXPECT_EQ(request.messages[3].content, "4");
    EXPECT_FLOAT_EQ(*request.sampling.temperature, 0.5f);
    EXPECT_FALSE(request.sampling.top_k);
    EXPECT_FLOAT_EQ(*request.sampling.top_p, 0.9f);
    EXPECT_FALSE(request.sampling.min_p);
    EXPECT_FLOAT_EQ(*request.sampling.repeat_penalty, 1.1f);
    EXPECT_EQ(*request.sampling.seed, 7u);
    EXPECT_FALSE(request.max_tokens);
    settings.maxTokens = 64;
    EXPECT_EQ(*remote_chat_request(profile, conversation, settings).max_tokens, 64);
}

TEST(RemoteReplyStats, CarriesUsageTimingsAndTheCut) {
    remote::RemoteReply reply;
    reply.text = "abc";
    reply.attempts = 2;
    reply.first_token_ms = 12.5;
    reply.usage = remote::RemoteUsage{10, 3};
    reply.timings = remote::RemoteTimings{10, 5.0, 3, 30.0, 100.0};
    reply.complete = false;
    reply.incomplete_reason = "the server closed the connection in the middle of the reply";
    const ReplyStats stats = remote_reply_stats(reply, {20.f, 30.f, 40.f});
    EXPECT_TRUE(stats.remote);
    EXPECT_EQ(stats.attempts, 2);
    EXPECT_EQ(stats.chunks, 3);
    EXPECT_DOUBLE_EQ(stats.timeToFirstTokenMs, 12.5);
    EXPECT_NEAR(stats.receivedChunksPerS, 100.0, 1e-3) << "2 gaps in 20 ms";
    EXPECT_EQ(stats.usagePromptTokens, 10);
    EXPECT_EQ(stats.usageCompletionTokens, 3);
    EXPECT_EQ(stats.contextUsed, 13) << "what the gauge shows: the server's count";
    EXPECT_TRUE(stats.hasServerTimings);
    EXPECT_DOUBLE_EQ(stats.serverPredictedPerS, 100.0);
    EXPECT_NEAR(stats.promptTokensPerS, 2000.0, 1e-6);
    EXPECT_EQ(stats.cutReason, QString::fromStdString(reply.incomplete_reason));
    EXPECT_FALSE(stats.cancelled);
    reply.cancelled = true;  // a Stop is not a cut
    EXPECT_TRUE(remote_reply_stats(reply, {}).cutReason.isEmpty());
}

TEST(RemoteReplyStats, TheStatusLineSaysWhatTheServerReported) {
    ReplyStats stats;
    stats.remote = true;
    stats.timeToFirstTokenMs = 87;
    stats.chunks = 40;
    stats.receivedChunksPerS = 120.5;
    stats.attempts = 3;
    stats.stopReason = StopReason::EndOfGeneration;
    QString line = remote_reply_metrics_text(stats);
    EXPECT_TRUE(line.contains(QStringLiteral("first text 87 ms"))) << line.toStdString();
    EXPECT_TRUE(line.contains(QStringLiteral("40 chunks at 120.5/s as received"))) << line.toStdString();
    EXPECT_TRUE(line.contains(QStringLiteral("no usage reported"))) << line.toStdString();
    EXPECT_TRUE(line.contains(QStringLiteral("3 attempts"))) << line.toStdString();
    EXPECT_FALSE(line.contains(QStringLiteral("KV"))) << "the engine's figures are not the server's";
    stats.usagePromptTokens = 12;
    stats.usageCompletionTokens = 40;
    stats.hasServerTimings = true;
    stats.serverPromptTokens = 12;
    stats.serverPromptMs = 9;
    stats.serverPredictedPerS = 250;
    stats.attempts = 1;
    stats.cutReason = QStringLiteral("gone");
    line = remote_reply_metrics_text(stats);
    EXPECT_TRUE(line.contains(QStringLiteral("usage: prompt 12 + reply 40 tokens"))) << line.toStdString();
    EXPECT_TRUE(line.contains(QStringLiteral("server timings: prompt 12 tok in 9 ms, decode 250.0 tok/s"))) << line.toStdString();
    EXPECT_FALSE(line.contains(QStringLiteral("attempts")));
    EXPECT_TRUE(line.endsWith(QStringLiteral("cut"))) << line.toStdString();
}

TEST(RemoteContextGauge, SaysTheServerCountsInsteadOfAFullGauge) {
    ContextGauge gauge;
    gauge.setUsage(0, 0, 0);
    EXPECT_EQ(gauge.text(), QStringLiteral("Context: no model"));
    gauge.setCountedByServer(true);
    EXPECT_EQ(gauge.text(), QStringLiteral("Context: counted by the server"));
    gauge.setUsage(0, 52, 0);
    EXPECT_TRUE(gauge.text().contains(QStringLiteral("52 tokens (the server's count"))) << gauge.text().toStdString();
    gauge.setCountedByServer(false);
    EXPECT_EQ(gauge.text(), QStringLiteral("Context: no model"));
}

int count_color(const QImage& image, QRgb rgb) {
    int n = 0;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) n += (image.pixel(x, y) & 0xffffff) == (rgb & 0xffffff);
    return n;
}

TEST(LatencyTimeline, PaintsATickPerChunkAndTheGapsFromTheData) {
    const QRgb tickRgb = qRgb(0x4e, 0x79, 0xa7);  // chart_colors::kCompute
    const QRgb gapRgb = qRgb(0xe1, 0x57, 0x59);   // chart_colors::kStall
    LatencyTimeline timeline;
    timeline.resize(400, 160);
    EXPECT_EQ(count_color(timeline.grab().toImage(), tickRgb), 0) << "nothing before a reply";
    EXPECT_TRUE(timeline.summaryText().contains(QStringLiteral("No reply from a server yet")));

    // 10 chunks 10 ms apart after 100 ms, then one 300 ms stall before the last.
    std::vector<float> arrivals;
    for (int i = 0; i < 10; ++i) arrivals.push_back(100.f + 10.f * float(i));
    arrivals.push_back(490.f);
    timeline.setReply(arrivals, 100);
    EXPECT_EQ(timeline.chunks(), 11);
    EXPECT_DOUBLE_EQ(timeline.largestGapMs(), 300.0);
    EXPECT_DOUBLE_EQ(timeline.largestGapAtMs(), 490.0);
    EXPECT_TRUE(timeline.summaryText().contains(QStringLiteral("First text after 100 ms · 11 chunks over 0.49 s")))
        << timeline.summaryText().toStdString();
    const QImage image = timeline.grab().toImage();
    EXPECT_GT(count_color(image, tickRgb), 10 * 8) << "a tick per chunk";
    // The tallest gap bar is at the last chunk, on the right edge; the 10 ms gaps are short.
    int tallestX = -1, tallest = 0;
    for (int x = 0; x < image.width(); ++x) {
        int h = 0;
        for (int y = 0; y < image.height(); ++y) h += (image.pixel(x, y) & 0xffffff) == (gapRgb & 0xffffff);
        if (h > tallest) {
            tallest = h;
            tallestX = x;
        }
    }
    EXPECT_GT(tallestX, image.width() * 9 / 10) << "the stall is drawn where it happened";
    EXPECT_GT(tallest, 20);

    // Streaming: arrivals are appended, and repainted only by the refresh timer's call.
    timeline.clear();
    timeline.appendArrivals({50.f, 60.f});
    timeline.appendArrivals({400.f});
    EXPECT_EQ(timeline.chunks(), 3);
    EXPECT_DOUBLE_EQ(timeline.largestGapMs(), 340.0);
    EXPECT_TRUE(timeline.summaryText().contains(QStringLiteral("First text after 50 ms"))) << timeline.summaryText().toStdString();
    EXPECT_TRUE(timeline.refreshIfChanged());
    EXPECT_FALSE(timeline.refreshIfChanged()) << "nothing new since";
}

TEST(RemoteInspector, TheLocalPanelsSayWhyTheyAreEmptyAndTheTimelineShowsTheReply) {
    TelemetryRing ring;
    InspectorOptions options;
    options.measureBandwidthAtStart = false;
    InspectorDock dock(&ring, nullptr, options);
    EXPECT_TRUE(dock.endpointNote().isEmpty());
    dock.setEndpoint(QStringLiteral("qwen @ gpu-box:8080"));
    EXPECT_TRUE(dock.endpointNote().contains(QStringLiteral("measured inside the local engine"))) << dock.endpointNote().toStdString();
    EXPECT_TRUE(dock.endpointNote().contains(QStringLiteral("qwen @ gpu-box:8080")));
    EXPECT_TRUE(dock.statusText().contains(QStringLiteral("qwen @ gpu-box:8080 (server)"))) << dock.statusText().toStdString();
    auto* note = dock.findChild<QLabel*>(QStringLiteral("endpointNote"));
    ASSERT_NE(note, nullptr);
    dock.show();
    dock.tabs()->setCurrentWidget(dock.routingPanel());
    EXPECT_TRUE(note->isVisible()) << "said on a local-only panel";
    dock.tabs()->setCurrentWidget(dock.latencyTimeline());
    EXPECT_FALSE(note->isVisible()) << "the timeline is the server's own";
    dock.showRemoteReply({5.f, 6.f, 7.f}, 5);
    EXPECT_EQ(dock.latencyTimeline()->chunks(), 3);
    dock.setEndpoint(QString());
    dock.tabs()->setCurrentWidget(dock.routingPanel());
    EXPECT_FALSE(note->isVisible());
    EXPECT_TRUE(dock.endpointNote().isEmpty());
}

// The endpoint's /metrics line sits under the Server latency tab while on that endpoint only.
TEST(RemoteInspector, TheServersMetricsLineShowsOnTheLatencyTabWhileOnTheEndpoint) {
    TelemetryRing ring;
    InspectorOptions options;
    options.measureBandwidthAtStart = false;
    InspectorDock dock(&ring, nullptr, options);
    auto* line = dock.findChild<QLabel*>(QStringLiteral("serverMetrics"));
    ASSERT_NE(line, nullptr);
    dock.show();
    dock.setEndpoint(QStringLiteral("qwen @ gpu-box:8000"));
    dock.tabs()->setCurrentWidget(dock.latencyTimeline());
    EXPECT_FALSE(line->isVisible()) << "nothing reported yet";
    dock.setServerMetrics(QStringLiteral("vLLM: 2 running, 0 waiting"));
    EXPECT_TRUE(line->isVisible());
    EXPECT_EQ(dock.serverMetricsText(), QStringLiteral("vLLM: 2 running, 0 waiting"));
    dock.tabs()->setCurrentWidget(dock.routingPanel());
    EXPECT_FALSE(line->isVisible()) << "a local panel is not the server's";
    dock.tabs()->setCurrentWidget(dock.latencyTimeline());
    EXPECT_TRUE(line->isVisible());
    dock.setEndpoint(QString());
    EXPECT_FALSE(line->isVisible());
    EXPECT_TRUE(dock.serverMetricsText().isEmpty()) << "the local engine has no server metrics";
}

// The controller with the engine and an endpoint, over a store of the test's own.
struct RemoteChat {
    QTemporaryDir dir;
    EngineThread engine;
    std::unique_ptr<ConversationStore> store;
    std::unique_ptr<ChatController> controller;
    GenerationSettings settings;

    RemoteChat() {
        auto opened = ConversationStore::open(dir.filePath(QStringLiteral("chat.sqlite")));
        EXPECT_TRUE(opened) << opened.error();
        store = std::move(opened).value();
        controller = std::make_unique<ChatController>(engine.worker(), store.get());
        settings.sampling.temperature = 0;
        settings.threads = 1;
        controller->setSettingsSource([this] { return settings; });
    }
    bool connect(const EndpointProfile& profile) {
        controller->connectEndpoint(profile, QStringLiteral("sk-test"));
        return QTest::qWaitFor([&] { return controller->modelReady() && controller->onEndpoint(); }, kReplyTimeoutMs);
    }
    bool idle() {
        return QTest::qWaitFor([&] { return !controller->isGenerating() && !controller->switchPending(); }, kReplyTimeoutMs);
    }
    StoredMessage storedReply() {
        auto messages = store->messages(controller->conversationId());
        return messages && !messages->empty() ? messages->back() : StoredMessage{};
    }
};

TEST(RemoteChat, AReplyFromAServerStreamsIntoTheTranscriptAndTheStoreWithTheEndpointIdentity) {
    cflow::test::ServeProcess serve({}, "127.0.0.1");
    ASSERT_TRUE(serve.started()) << serve.log();
    RemoteChat chat;
    const EndpointProfile profile = profile_for(serve);
    ASSERT_TRUE(chat.connect(profile));
    EXPECT_EQ(chat.controller->model().path, endpoint_identity(profile));
    EXPECT_EQ(chat.controller->model().contextLength, 0) << "the server's business";
    EXPECT_TRUE(chat.controller->visiblePrompt().byServer || chat.controller->entries().empty());

    chat.settings.maxTokens = 200;
    QSignalSpy streamed(chat.controller.get(), &ChatController::replyStreamed);
    QSignalSpy finished(chat.controller.get(), &ChatController::replyFinished);
    ASSERT_TRUE(chat.controller->send(QStringLiteral("Tell me a story about a cat.")));
    ASSERT_TRUE(chat.idle());
    ASSERT_EQ(finished.count(), 1);
    const auto stats = finished.at(0).at(0).value<ReplyStats>();
    EXPECT_TRUE(stats.remote);
    EXPECT_GE(stats.attempts, 1);
    EXPECT_GT(stats.chunks, 1);
    EXPECT_EQ(stats.chunkArrivalMs.size(), size_t(stats.chunks));
    EXPECT_GT(stats.usageCompletionTokens, 0) << "cflow serve reports usage";
    EXPECT_GT(chat.controller->contextUsed(), stats.usageCompletionTokens) << "prompt + reply, as the server counted";
    EXPECT_TRUE(chat.controller->lastSentPrompt().byServer);
    EXPECT_TRUE(chat.controller->lastSentPrompt().text.contains(QStringLiteral("Tell me a story about a cat.")))
        << "the raw prompt view shows the request sent";

    ASSERT_EQ(chat.controller->entries().size(), 2u);
    const ChatEntry& reply = chat.controller->entries().back();
    EXPECT_FALSE(reply.content.isEmpty());
    EXPECT_EQ(reply.modelPath, endpoint_identity(profile));
    QString joined;
    for (const QList<QVariant>& batch : streamed) joined += batch.at(1).toString();
    EXPECT_EQ(joined, reply.content) << "every streamed batch reached the transcript";
    const StoredMessage stored = chat.storedReply();
    EXPECT_EQ(stored.content, reply.content);
    EXPECT_EQ(stored.modelPath, endpoint_identity(profile));
    EXPECT_TRUE(stored.complete);
    EXPECT_FALSE(stored.stopped);

    // Regenerate goes to the endpoint too and keeps the first version.
    ASSERT_TRUE(chat.controller->regenerate());
    ASSERT_TRUE(chat.idle());
    EXPECT_EQ(chat.controller->entries().back().versions.size(), 2);
}

TEST(RemoteChat, StopKeepsTheReplyMarkedStoppedAndAKilledServerLeavesAMarkedPartialReply) {
    cflow::test::ServeProcess serve({}, "127.0.0.1", endless_replies());
    ASSERT_TRUE(serve.started()) << serve.log();
    RemoteChat chat;
    const EndpointProfile profile = profile_for(serve);
    ASSERT_TRUE(chat.connect(profile));
    chat.settings.maxTokens = 100000;  // longer than the context: the Stop comes first

    ASSERT_TRUE(streaming_reply(chat.controller.get(), [&] { chat.controller->send(QStringLiteral("Tell me a long story.")); }, 2));
    chat.controller->stop();
    ASSERT_TRUE(chat.idle());
    const ChatEntry stoppedReply = chat.controller->entries().back();
    EXPECT_TRUE(stoppedReply.stopped);
    EXPECT_TRUE(stoppedReply.complete);
    EXPECT_FALSE(stoppedReply.content.isEmpty());
    EXPECT_TRUE(chat.storedReply().stopped);
    EXPECT_EQ(chat.storedReply().content, stoppedReply.content);
    // The exports name the server that wrote it, and that it was stopped.
    const QString label = endpoint_identity_label(endpoint_identity(profile));
    const QString markdownPath = chat.dir.filePath(QStringLiteral("chat.md"));
    ASSERT_TRUE(chat.store->exportMarkdown(chat.controller->conversationId(), markdownPath));
    QFile markdown(markdownPath);
    ASSERT_TRUE(markdown.open(QIODevice::ReadOnly));
    const QString md = QString::fromUtf8(markdown.readAll());
    EXPECT_TRUE(md.contains(QStringLiteral("## Assistant (%1) (stopped)").arg(label))) << md.toStdString();
    EXPECT_TRUE(md.contains(stoppedReply.content));
    const QString jsonPath = chat.dir.filePath(QStringLiteral("chat.json"));
    ASSERT_TRUE(chat.store->exportJson(chat.controller->conversationId(), jsonPath));
    QFile json(jsonPath);
    ASSERT_TRUE(json.open(QIODevice::ReadOnly));
    const QJsonObject reply = QJsonDocument::fromJson(json.readAll()).object().value(QStringLiteral("messages")).toArray().last().toObject();
    EXPECT_EQ(reply.value(QStringLiteral("server")).toString(), label);
    EXPECT_EQ(reply.value(QStringLiteral("model_path")).toString(), endpoint_identity(profile));
    EXPECT_TRUE(reply.value(QStringLiteral("stopped")).toBool());

    // The server dies mid-reply: what came is kept, marked, and the reason is said.
    QSignalSpy failed(chat.controller.get(), &ChatController::replyFailed);
    ASSERT_TRUE(streaming_reply(chat.controller.get(), [&] { chat.controller->send(QStringLiteral("Tell me another story.")); }, 2));
    serve.kill_now();
    ASSERT_TRUE(chat.idle());
    ASSERT_EQ(failed.count(), 1);
    EXPECT_TRUE(failed.at(0).at(0).toString().contains(QStringLiteral("cut"))) << failed.at(0).at(0).toString().toStdString();
    const ChatEntry cut = chat.controller->entries().back();
    EXPECT_FALSE(cut.content.isEmpty()) << "the partial reply is kept";
    EXPECT_FALSE(cut.complete) << "and marked";
    EXPECT_FALSE(cut.stopped);
    EXPECT_FALSE(chat.storedReply().complete);
    EXPECT_EQ(chat.storedReply().content, cut.content);
    EXPECT_EQ(chat.storedReply().modelPath, endpoint_identity(profile));

    // Back to the local engine: its replies record the model file again.
    const QString local = test::qpath(test::chatml_model());
    chat.controller->loadModel(local, 1);
    ASSERT_TRUE(QTest::qWaitFor([&] { return chat.controller->modelReady() && chat.controller->model().path == local; },
                                kReplyTimeoutMs));
    EXPECT_FALSE(chat.controller->onEndpoint());
    chat.settings.maxTokens = 8;
    ASSERT_TRUE(chat.controller->send(QStringLiteral("Hello")));
    ASSERT_TRUE(chat.idle());
    EXPECT_EQ(chat.controller->entries().back().modelPath, local);
    EXPECT_EQ(chat.storedReply().modelPath, local);
}

TEST(RemoteChat, ConnectingWhileALocalReplyStreamsStopsItFirst) {
    cflow::test::ServeProcess serve({}, "127.0.0.1");
    ASSERT_TRUE(serve.started()) << serve.log();
    RemoteChat chat;
    const QString local = test::qpath(test::chatml_model());
    chat.controller->loadModel(local, 1);
    ASSERT_TRUE(QTest::qWaitFor([&] { return chat.controller->modelReady(); }, kReplyTimeoutMs));
    chat.settings.maxTokens = 100000;
    chat.settings.ignoreEos = true;  // with drop-oldest, a local reply that goes on until stopped
    QSignalSpy streamed(chat.controller.get(), &ChatController::replyStreamed);
    ASSERT_TRUE(chat.controller->send(QStringLiteral("Hello")));
    ASSERT_TRUE(QTest::qWaitFor([&] { return streamed.count() >= 1; }, kReplyTimeoutMs));
    const EndpointProfile profile = profile_for(serve);
    chat.controller->connectEndpoint(profile, QString());
    EXPECT_TRUE(chat.controller->switchPending()) << "queued behind the streaming reply";
    ASSERT_TRUE(QTest::qWaitFor([&] { return chat.controller->onEndpoint() && chat.controller->modelReady(); }, kReplyTimeoutMs));
    const ChatEntry stopped = chat.controller->entries().back();
    EXPECT_TRUE(stopped.stopped) << "the local reply was stopped and kept";
    EXPECT_EQ(stopped.modelPath, local);
    chat.settings.maxTokens = 8;
    chat.settings.ignoreEos = false;
    // A new conversation: the local reply's random text is past the served model's 512 tokens (the
    // server answers that with a 400 naming both counts, and nothing is lost).
    chat.controller->newConversation();
    QSignalSpy failed(chat.controller.get(), &ChatController::replyFailed);
    ASSERT_TRUE(chat.controller->send(QStringLiteral("And now the server")));
    ASSERT_TRUE(chat.idle());
    ASSERT_EQ(failed.count(), 0) << failed.at(0).at(0).toString().toStdString();
    EXPECT_EQ(chat.controller->entries().back().modelPath, endpoint_identity(profile));
    EXPECT_EQ(chat.storedReply().modelPath, endpoint_identity(profile));
}

TEST(RemoteChatRequest, TheReplyFormatGoesAsResponseFormat) {
    EndpointProfile profile;
    const Conversation conversation = {{QStringLiteral("user"), QStringLiteral("hi")}};
    GenerationSettings settings;
    const auto body = [&] {
        return QJsonDocument::fromJson(
                   QByteArray::fromStdString(remote::chat_request_json(remote_chat_request(profile, conversation, settings))))
            .object();
    };
    EXPECT_FALSE(body().contains(QStringLiteral("response_format"))) << "free text";
    settings.replyFormat.kind = ReplyFormatKind::JsonObject;
    EXPECT_EQ(body().value(QStringLiteral("response_format")).toObject().value(QStringLiteral("type")).toString(),
              QStringLiteral("json_object"));
    settings.replyFormat.kind = ReplyFormatKind::JsonSchema;
    settings.replyFormat.schema = QStringLiteral(R"({"type":"object","properties":{"n":{"type":"integer"}}})");
    QJsonObject format = body().value(QStringLiteral("response_format")).toObject();
    EXPECT_EQ(format.value(QStringLiteral("type")).toString(), QStringLiteral("json_schema"));
    const QJsonObject schema = format.value(QStringLiteral("json_schema")).toObject();
    EXPECT_EQ(schema.value(QStringLiteral("name")).toString(), QStringLiteral("reply"));
    EXPECT_EQ(schema.value(QStringLiteral("schema")).toObject().value(QStringLiteral("type")).toString(), QStringLiteral("object"))
        << "the schema is sent as an object, not as its text";
    settings.replyFormat.schema = QStringLiteral("{not json");
    format = body().value(QStringLiteral("response_format")).toObject();
    EXPECT_EQ(format.value(QStringLiteral("json_schema")).toObject().value(QStringLiteral("schema")).toString(),
              QStringLiteral("{not json"))
        << "unreadable text goes as a string for the server to refuse, nothing throws";
}

TEST(RemoteChat, ToolsAreNotSentAndTheReplySaysSoAndTheReplyFormatIsHeldByTheServer) {
    cflow::test::ServeProcess serve({}, "127.0.0.1");
    ASSERT_TRUE(serve.started()) << serve.log();
    RemoteChat chat;
    ASSERT_TRUE(chat.connect(profile_for(serve)));
    chat.settings.maxTokens = 8;
    cflow::ToolDefinition clock;
    clock.name = "clock";
    chat.controller->setToolsSource([clock] { return std::vector<cflow::ToolDefinition>{clock}; });
    chat.controller->setToolsChosenSource([] { return true; });
    ReplyFormat json;
    json.kind = ReplyFormatKind::JsonObject;
    ASSERT_TRUE(chat.controller->setReplyFormat(json));
    ASSERT_TRUE(chat.controller->send(QStringLiteral("What time is it?")));
    ASSERT_TRUE(chat.idle());
    const QString note = chat.controller->entries().back().toolsNote;
    EXPECT_TRUE(note.contains(QStringLiteral("Tools are not sent to a server"))) << note.toStdString();
    EXPECT_FALSE(chat.controller->lastSentPrompt().text.contains(QStringLiteral("clock"))) << "no tools in the request";
    EXPECT_TRUE(chat.controller->lastSentPrompt().text.contains(QStringLiteral("json_object")))
        << chat.controller->lastSentPrompt().text.toStdString();
    EXPECT_EQ(chat.controller->entries().back().replyFormat, reply_format_mark(json));
    // cflow serve holds the reply to one JSON object under its grammar (the start of one when
    // max_tokens cuts it: 8 tokens here).
    EXPECT_TRUE(chat.controller->entries().back().content.trimmed().startsWith(u'{'))
        << chat.controller->entries().back().content.toStdString();
}

TEST(RemoteChat, AServerSilentMidReplyEndsInTheTimeOutWithThePartialReplyKept) {
    cflow::test::LoopbackServer server;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        cflow::test::stream_events(res, {cflow::test::chunk_event("Once"), cflow::test::chunk_event(" upon")}, true,
                                   [&] { server.stall(10'000); });
    });
    server.start();
    RemoteChat chat;
    EndpointProfile profile;
    profile.baseUrl = QString::fromStdString(server.base_url());
    profile.readTimeoutS = 1;
    ASSERT_TRUE(chat.connect(profile));
    QSignalSpy failed(chat.controller.get(), &ChatController::replyFailed);
    ASSERT_TRUE(chat.controller->send(QStringLiteral("Tell me a story.")));
    ASSERT_TRUE(chat.idle());
    ASSERT_EQ(failed.count(), 1);
    const QString message = failed.at(0).at(0).toString();
    EXPECT_TRUE(message.contains(QStringLiteral("time-out"))) << message.toStdString();
    EXPECT_EQ(chat.controller->entries().back().content, QStringLiteral("Once upon"));
    EXPECT_FALSE(chat.controller->entries().back().complete);
    EXPECT_EQ(chat.storedReply().content, QStringLiteral("Once upon"));
    EXPECT_FALSE(chat.storedReply().complete);
    // The reason is kept with the reply: a reopened conversation still says why it was cut.
    const QString reason = chat.controller->entries().back().cutReason;
    EXPECT_TRUE(reason.contains(QStringLiteral("time-out"))) << reason.toStdString();
    EXPECT_EQ(chat.storedReply().cutReason, reason);
    const qint64 conversation = chat.controller->conversationId();
    chat.controller->newConversation();
    ASSERT_TRUE(chat.controller->openConversation(conversation));
    EXPECT_EQ(chat.controller->entries().back().cutReason, reason);
}

// A reply's text reaches the store about once a second, not at every ~30 ms batch (issue 36:
// the whole text was rewritten on the GUI thread ~33 times a second), and never more than a
// second after it arrived: a server sending 90 chunks over ~1.4 s, then falling silent for 1.5 s
// before its last chunk, gives a handful of writes, and the store holds the text sent before
// the silence while the reply still streams.
TEST(RemoteChat, TheStreamingTextReachesTheStoreAboutOnceASecond) {
    cflow::test::LoopbackServer server;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        cflow::test::paced_events(res, server, 90, 15, "w", [&] {
            server.stall(1500);
            return cflow::test::chunk_event("!") + cflow::test::kEndEvents;
        });
    });
    server.start();
    RemoteChat chat;
    EndpointProfile profile;
    profile.baseUrl = QString::fromStdString(server.base_url());
    profile.readTimeoutS = 10;
    ASSERT_TRUE(chat.connect(profile));
    ASSERT_TRUE(chat.controller->send(QStringLiteral("Tell me a story.")));
    // Inside the silence: every chunk before it arrived more than a second ago.
    ASSERT_TRUE(QTest::qWaitFor([&] { return chat.controller->entries().back().content.size() >= 90; }, 20000));
    QTest::qWait(ChatController::kPersistIntervalMs + 200);
    ASSERT_TRUE(chat.controller->isGenerating()) << "the server is still silent";
    EXPECT_EQ(chat.storedReply().content, QString(90, QLatin1Char('w'))) << "the text before the silence is in the store";
    ASSERT_TRUE(chat.idle());
    EXPECT_EQ(chat.storedReply().content, QString(90, QLatin1Char('w')) + QLatin1Char('!'));
    EXPECT_GE(chat.controller->replyStoreWrites(), 2) << "written while it streamed, not only at the end";
    EXPECT_LE(chat.controller->replyStoreWrites(), 5) << "about once a second over ~3 s, not once per batch";
}

// After each reply the controller passes on the server's /metrics line; a server without
// /metrics (404) is said once and not asked again until the next connect.
TEST(RemoteChat, TheServersMetricsFollowEachReplyAndAServerWithoutThemIsAskedOnce) {
    cflow::test::LoopbackServer server;
    std::atomic<int> metricsAsked{0};
    std::atomic<bool> hasMetrics{true};
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        cflow::test::stream_events(res, {cflow::test::chunk_event("Hi"), cflow::test::kEndEvents}, true);
    });
    server.http.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
        ++metricsAsked;
        if (!hasMetrics) {
            res.status = 404;
            return;
        }
        res.set_content("vllm:num_requests_running{model_name=\"m\"} 2\nvllm:num_requests_waiting{model_name=\"m\"} 1\n"
                        "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\n",
                        "text/plain");
    });
    server.start();
    RemoteChat chat;
    EndpointProfile profile;
    profile.baseUrl = QString::fromStdString(server.base_url());
    ASSERT_TRUE(chat.connect(profile));
    QSignalSpy metrics(chat.controller.get(), &ChatController::remoteServerMetrics);
    const auto reply = [&](int expectedLines, int waitMs = kReplyTimeoutMs) {
        EXPECT_TRUE(chat.controller->send(QStringLiteral("Hello")));
        EXPECT_TRUE(chat.idle());
        return QTest::qWaitFor([&] { return metrics.count() >= expectedLines; }, waitMs);
    };
    ASSERT_TRUE(reply(1));
    EXPECT_EQ(metrics.at(0).at(0).toString(), QStringLiteral("vLLM: 2 running, 1 waiting, KV cache 50.0% used"));
    hasMetrics = false;
    ASSERT_TRUE(reply(2));
    EXPECT_TRUE(metrics.at(1).at(0).toString().contains(QStringLiteral("reports no metrics"))) << metrics.at(1).at(0).toString().toStdString();
    EXPECT_EQ(metricsAsked.load(), 2);
    EXPECT_FALSE(reply(3, 1500)) << "asked again after the server said it has none";
    EXPECT_EQ(metricsAsked.load(), 2);
    hasMetrics = true;
    ASSERT_TRUE(chat.connect(profile));  // a new connect asks again
    ASSERT_TRUE(reply(3));
    EXPECT_EQ(metricsAsked.load(), 3);
}

TEST(RemoteChat, StopEndsAReplyWhileTheServerIsStillSilent) {
    // A long prefill: the server says nothing for 10 s. Stop must not wait for its first byte.
    cflow::test::LoopbackServer server;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        server.stall(10'000);
        cflow::test::stream_events(res, {cflow::test::chunk_event("late")}, true);
    });
    server.start();
    RemoteChat chat;
    EndpointProfile profile;
    profile.baseUrl = QString::fromStdString(server.base_url());
    ASSERT_TRUE(chat.connect(profile));
    QSignalSpy finished(chat.controller.get(), &ChatController::replyFinished);
    ASSERT_TRUE(chat.controller->send(QStringLiteral("A long prompt")));
    QTest::qWait(300);
    QElapsedTimer sinceStop;
    sinceStop.start();
    chat.controller->stop();
    ASSERT_TRUE(QTest::qWaitFor([&] { return !chat.controller->isGenerating(); }, 9'000)) << "Stop waited for the server";
    EXPECT_LT(sinceStop.elapsed(), 5'000);
    ASSERT_EQ(finished.count(), 1);
    EXPECT_TRUE(finished.at(0).at(0).value<ReplyStats>().cancelled);
    ASSERT_EQ(chat.controller->entries().size(), 2u);
    EXPECT_TRUE(chat.controller->entries().back().stopped);
    EXPECT_EQ(chat.controller->entries().front().content, QStringLiteral("A long prompt"));
}

TEST(RemoteChat, AnUnreachableServerIsAnErrorAndLosesNothing) {
    RemoteChat chat;
    EndpointProfile profile;
    profile.baseUrl = QStringLiteral("http://127.0.0.1:1/v1");  // nothing listens on port 1
    ASSERT_TRUE(chat.connect(profile));
    QSignalSpy failed(chat.controller.get(), &ChatController::replyFailed);
    ASSERT_TRUE(chat.controller->send(QStringLiteral("Anyone there?")));
    ASSERT_TRUE(chat.idle());
    ASSERT_EQ(failed.count(), 1);
    EXPECT_TRUE(failed.at(0).at(0).toString().contains(QStringLiteral("127.0.0.1:1"))) << failed.at(0).at(0).toString().toStdString();
    ASSERT_EQ(chat.controller->entries().size(), 1u) << "the message stays; the empty reply row goes";
    EXPECT_EQ(chat.controller->entries().front().content, QStringLiteral("Anyone there?"));
}

// The whole path a user takes, on the real window: Model > Connect to a server… → the profile
// typed with a key (a test keychain) → Test connection → the model list → Connect → a streamed
// reply → Stop → export; then a server killed mid-reply, and back to the local model.
TEST(RemoteChatWindow, ConnectSendStopExportKillAndBackToTheLocalModel) {
    const QString key = QStringLiteral("e2e-key-5150");
    cflow::test::ServeProcess serve({}, "127.0.0.1", endless_replies({"--api-key", key.toStdString()}));
    ASSERT_TRUE(serve.started()) << serve.log();
    const QString url = QString::fromStdString(serve.base_url());
    test::ScopedDb db("remote_chat_window");
    test::IsolatedSettings isolated("remote_chat_window");
    QTemporaryDir dir;
    MainWindowOptions options;
    auto secrets = std::make_shared<MemorySecretStore>();
    options.secretStore = secrets;
    options.endpointSettingsFile = dir.filePath(QStringLiteral("endpoints.ini"));
    options.bundledModelsFolder = QString();
    MainWindow window(nullptr, options);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    ChatController* controller = window.controller();

    // Model > Connect to a server…
    auto* connectAction = window.findChild<QAction*>(QStringLiteral("connectServerAction"));
    ASSERT_NE(connectAction, nullptr);
    ASSERT_TRUE(connectAction->isEnabled());
    connectAction->trigger();
    auto* dialog = window.findChild<ConnectDialog*>();
    ASSERT_NE(dialog, nullptr);
    ASSERT_TRUE(QTest::qWaitForWindowExposed(dialog));
    dialog->findChild<QLineEdit*>(QStringLiteral("endpointName"))->setText(QStringLiteral("loopback serve"));
    dialog->findChild<QLineEdit*>(QStringLiteral("baseUrl"))->setText(url);
    dialog->findChild<QLineEdit*>(QStringLiteral("apiKey"))->setText(key);
    QSignalSpy tested(dialog, &ConnectDialog::testFinished);
    dialog->findChild<QPushButton*>(QStringLiteral("testConnection"))->click();
    ASSERT_TRUE(tested.wait(kReplyTimeoutMs));
    ASSERT_TRUE(tested.at(0).at(0).toBool()) << dialog->statusText().toStdString();
    auto* models = dialog->findChild<QComboBox*>(QStringLiteral("model"));
    ASSERT_EQ(models->count(), 1) << "cflow serve lists its one model";
    EXPECT_FALSE(models->currentText().isEmpty());
    const QString served = models->currentText();
    dialog->findChild<QPushButton*>(QStringLiteral("connectButton"))->click();
    ASSERT_TRUE(QTest::qWaitFor([&] { return controller->onEndpoint() && controller->modelReady(); }, kReplyTimeoutMs))
        << dialog->statusText().toStdString();
    EndpointProfile profile;
    profile.baseUrl = url;
    profile.model = served;
    const QString identity = endpoint_identity(profile);
    const QString label = endpoint_identity_label(identity);
    EXPECT_EQ(controller->model().path, identity);
    EXPECT_TRUE(window.windowTitle().contains(label)) << window.windowTitle().toStdString();
    EXPECT_TRUE(window.statusArea()->message().contains(QStringLiteral("Connected to"))) << window.statusArea()->message().toStdString();
    EXPECT_FALSE(window.inspector()->endpointNote().isEmpty());

    // A long reply streams in batches into the transcript; Stop keeps it, marked.
    GenerationSettings settings = window.samplingPanel()->settings();
    settings.maxTokens = 100000;
    settings.sampling.temperature = 0.8f;
    window.samplingPanel()->setSettings(settings);
    auto* send = window.chatPanel()->findChild<QPushButton*>(QStringLiteral("sendButton"));
    const auto type_and_send = [&](const QString& text) {
        window.chatPanel()->input()->setPlainText(text);
        EXPECT_TRUE(send->isEnabled());
        send->click();
    };
    ASSERT_TRUE(streaming_reply(controller, [&] { type_and_send(QStringLiteral("Tell me a long story about a dog.")); }, 3))
        << "a reply streaming in more than one batch";
    EXPECT_GT(window.inspector()->latencyTimeline()->chunks(), 0) << "the timeline follows the reply as it streams";
    window.chatPanel()->findChild<QPushButton*>(QStringLiteral("stopButton"))->click();
    ASSERT_TRUE(QTest::qWaitFor([&] { return !controller->isGenerating(); }, kReplyTimeoutMs));
    ASSERT_GE(controller->entries().size(), 2u);
    const int replyIndex = int(controller->entries().size()) - 1;
    const ChatEntry reply = controller->entries().back();
    EXPECT_TRUE(reply.stopped);
    EXPECT_EQ(reply.modelPath, identity);
    EXPECT_FALSE(reply.content.isEmpty());
    ChatView* view = window.chatPanel()->view();
    ASSERT_EQ(view->count(), replyIndex + 1);
    EXPECT_EQ(view->card(replyIndex)->text(), reply.content) << "the transcript shows what the server sent";
    EXPECT_TRUE(view->card(replyIndex)->isStopped());
    EXPECT_EQ(view->card(replyIndex)->heading(), QStringLiteral("assistant · %1").arg(label)) << "the transcript names the server";
    EXPECT_TRUE(window.metricsText().contains(QStringLiteral("server · first text"))) << window.metricsText().toStdString();
    EXPECT_GT(window.inspector()->latencyTimeline()->chunks(), 1);
    // The gauge and the raw prompt say the server counts and renders; no "0 / 0" context.
    const QString gauge = window.chatPanel()->contextGauge()->text();
    // A stopped stream carries no usage: the gauge says the server counts rather than a figure.
    EXPECT_TRUE(gauge.contains(QStringLiteral("server"))) << gauge.toStdString();
    EXPECT_FALSE(gauge.contains(QStringLiteral("/ 0"))) << gauge.toStdString();
    window.chatPanel()->showRawPrompt();
    auto* rawDialog = window.chatPanel()->findChild<QDialog*>(QStringLiteral("rawPromptDialog"));
    ASSERT_NE(rawDialog, nullptr);
    const QString rawSummary = rawDialog->findChild<QLabel*>(QStringLiteral("rawPromptSummary"))->text();
    EXPECT_TRUE(rawSummary.contains(QStringLiteral("The server renders this conversation"))) << rawSummary.toStdString();
    rawDialog->close();

    // The export names the server; the key is in the test keychain, not in the settings.
    const QString exported = dir.filePath(QStringLiteral("remote.md"));
    ASSERT_TRUE(window.store()->exportMarkdown(controller->conversationId(), exported));
    QFile markdown(exported);
    ASSERT_TRUE(markdown.open(QIODevice::ReadOnly));
    const QString md = QString::fromUtf8(markdown.readAll());
    EXPECT_TRUE(md.contains(QStringLiteral("(%1) (stopped)").arg(label))) << md.toStdString();
    EXPECT_TRUE(md.contains(reply.content));
    QFile ini(options.endpointSettingsFile);
    ASSERT_TRUE(ini.open(QIODevice::ReadOnly));
    const QByteArray iniBytes = ini.readAll();
    EXPECT_TRUE(iniBytes.contains(url.toUtf8())) << iniBytes.toStdString();
    EXPECT_FALSE(iniBytes.contains(key.toUtf8()));
    EXPECT_EQ(secrets->keys().size(), 1);
    EXPECT_EQ(secrets->keys().first(), key);

    // The server dies mid-reply: the partial reply stays, marked, and the error is shown.
    ASSERT_TRUE(streaming_reply(controller, [&] { type_and_send(QStringLiteral("And another one.")); }, 2));
    serve.kill_now();
    ASSERT_TRUE(QTest::qWaitFor([&] { return !controller->isGenerating(); }, kReplyTimeoutMs));
    const int cutIndex = int(controller->entries().size()) - 1;
    EXPECT_FALSE(controller->entries().back().content.isEmpty());
    EXPECT_FALSE(controller->entries().back().complete);
    EXPECT_EQ(controller->entries().back().modelPath, identity);
    ASSERT_EQ(view->count(), cutIndex + 1);
    EXPECT_EQ(view->card(cutIndex)->text(), controller->entries().back().content) << "the partial reply stays shown";
    EXPECT_TRUE(view->card(cutIndex)->isInterrupted()) << "marked in the transcript";
    EXPECT_TRUE(view->card(cutIndex)->interruptedReason().contains(QStringLiteral("closed the connection")))
        << "with the diagnosis: " << view->card(cutIndex)->interruptedReason().toStdString();
    EXPECT_TRUE(window.statusArea()->showsError());
    EXPECT_TRUE(window.statusArea()->message().contains(QStringLiteral("cut"))) << window.statusArea()->message().toStdString();

    // Back to the local default model: its replies record the model file again.
    const QString local = default_model_path(QFileInfo(QStringLiteral(CFLOW_CLI_PATH)).absolutePath());
    ASSERT_FALSE(local.isEmpty()) << "no default model beside the CLI";
    window.openModel(local);
    ASSERT_TRUE(QTest::qWaitFor([&] { return controller->modelReady() && controller->model().path == local; }, kReplyTimeoutMs));
    EXPECT_FALSE(controller->onEndpoint());
    EXPECT_TRUE(window.inspector()->endpointNote().isEmpty());
    settings.maxTokens = 8;
    window.samplingPanel()->setSettings(settings);
    const size_t before = controller->entries().size();
    type_and_send(QStringLiteral("Hello again"));
    ASSERT_TRUE(QTest::qWaitFor([&] { return controller->entries().size() == before + 2 && !controller->isGenerating(); },
                                kReplyTimeoutMs));
    EXPECT_EQ(controller->entries().back().modelPath, local);
    EXPECT_EQ(view->card(view->count() - 1)->heading(), QStringLiteral("assistant")) << "a local reply as before";
    EXPECT_FALSE(window.metricsText().contains(QStringLiteral("server ·"))) << window.metricsText().toStdString();
}

// Tools > Compare models… offers the window's saved endpoints as entries (the same profile store
// and keychain as Model > Connect to a server…).
TEST(RemoteChatWindow, TheComparisonWizardOffersTheSavedEndpoints) {
    test::ScopedDb db("remote_compare_window");
    test::IsolatedSettings isolated("remote_compare_window");
    QTemporaryDir dir;
    MainWindowOptions options;
    options.secretStore = std::make_shared<MemorySecretStore>();
    options.endpointSettingsFile = dir.filePath(QStringLiteral("endpoints.ini"));
    options.bundledModelsFolder = QString();
    EndpointProfile profile;
    profile.name = QStringLiteral("GPU box");
    profile.baseUrl = QStringLiteral("http://10.0.0.2:8080/v1");
    profile.model = QStringLiteral("big-model");
    auto saved = EndpointProfileStore(options.endpointSettingsFile).save(profile);
    ASSERT_TRUE(saved) << saved.error();
    MainWindow window(nullptr, options);
    auto* action = window.findChild<QAction*>(QStringLiteral("compareModelsAction"));
    ASSERT_NE(action, nullptr);
    action->trigger();
    auto* wizard = window.findChild<CompareWizard*>();
    ASSERT_NE(wizard, nullptr);
    EXPECT_TRUE(wizard->endpointEntries().isEmpty());
    EXPECT_FALSE(wizard->addEndpointEntry(QStringLiteral("no-such-profile")));
    ASSERT_TRUE(wizard->addEndpointEntry(saved->id)) << "the wizard sees the window's saved profiles";
    EXPECT_EQ(wizard->endpointEntries(), QStringList{saved->id});
    wizard->close();
}

} // namespace
} // namespace cflow::ui
#endif
