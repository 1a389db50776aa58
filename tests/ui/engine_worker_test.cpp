// EngineWorker on its own thread, driven the way the GUI drives it (queued slot calls,
// queued signals into this thread). Replies are compared with a direct engine run.
#include <atomic>
#include <chrono>
#include <mutex>
#include <filesystem>
#include <string>
#include <thread>

#include <QMetaObject>
#include <QObject>
#include <QSemaphore>
#include <QTest>

#include <gtest/gtest.h>

#include "cflow/engine/chat/chat_template.h"
#include "cflow/engine/generation/generate.h"
#include "cflow/engine/forward/load_policy.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/ui/engine_worker.h"
#include "cflow/engine/chat/chat_session.h"
#include "ui_test_models.h"

namespace {

using cflow::ui::Conversation;
using cflow::ui::EngineThread;
using cflow::ui::EngineWorker;
using cflow::ui::GenerationSettings;
using cflow::ui::test::chatml_model;
using cflow::ui::test::moe_chatml_model;
using cflow::ui::test::qpath;

constexpr int kWorkerTimeoutMs = 60000;

// Receives the worker's signals on the test (GUI) thread.
struct Collector {
    QObject context;
    bool loaded = false;
    std::vector<cflow::ui::ModelInfo> infos;
    QString loadError;
    cflow::ErrorKind loadErrorKind = cflow::ErrorKind::Internal;
    std::vector<cflow::ui::RenderedPrompt> prompts;
    QString text;
    int batches = 0;
    int tokens = 0;
    std::vector<cflow::ui::ReplyStats> finished;
    QStringList errors;
    std::vector<cflow::ErrorKind> errorKinds;

    explicit Collector(EngineWorker* worker) {
        QObject::connect(worker, &EngineWorker::modelLoaded, &context, [this](const cflow::ui::ModelInfo& info) {
            loaded = true;
            infos.push_back(info);
        });
        QObject::connect(worker, &EngineWorker::loadFailed, &context, [this](const QString&, const cflow::ui::WorkerError& e) {
            loadError = e.message;
            loadErrorKind = e.kind;
        });
        QObject::connect(worker, &EngineWorker::promptReady, &context,
                         [this](const cflow::ui::RenderedPrompt& p) { prompts.push_back(p); });
        QObject::connect(worker, &EngineWorker::tokensReady, &context, [this](const QString& t, int n) {
            text += t;
            tokens += n;
            ++batches;
        });
        QObject::connect(worker, &EngineWorker::finished, &context,
                         [this](const cflow::ui::ReplyStats& s) { finished.push_back(s); });
        QObject::connect(worker, &EngineWorker::error, &context, [this](const cflow::ui::WorkerError& e) {
            errors << e.message;
            errorKinds.push_back(e.kind);
        });
    }
    void resetReply() {
        text.clear();
        batches = 0;
        tokens = 0;
    }
    bool waitReplies(size_t n) {
        return QTest::qWaitFor([&] { return finished.size() >= n || !errors.isEmpty(); }, kWorkerTimeoutMs) &&
               finished.size() >= n;
    }
};

bool load(EngineWorker* worker, Collector& c, const QString& path) {
    QMetaObject::invokeMethod(worker, [worker, path] { worker->loadModel(path, 2); });
    return QTest::qWaitFor([&] { return c.loaded || !c.loadError.isEmpty(); }, kWorkerTimeoutMs) && c.loaded;
}

void post_generate(EngineWorker* worker, const Conversation& conversation, const GenerationSettings& settings) {
    QMetaObject::invokeMethod(worker, [worker, conversation, settings] { worker->generate(conversation, settings); });
}

GenerationSettings greedy_settings(int maxTokens) {
    GenerationSettings s;
    s.sampling.temperature = 0;
    s.maxTokens = maxTokens;
    s.threads = 2;
    s.ignoreEos = true;
    return s;
}

// The reference: the engine called directly on a fresh session with the same prompt text.
std::string direct_reply(const std::string& prompt, int maxTokens) {
    auto model = cflow::Model::load(chatml_model().string());
    EXPECT_TRUE(model) << model.error();
    cflow::SessionOptions options;
    options.threads = 2;
    options.kv_cache = GenerationSettings{}.kvCache;  // the worker's cache type
    auto session = cflow::Session::create(*model, options);
    EXPECT_TRUE(session) << session.error();
    cflow::GenerateRequest request;
    request.prompt = (*model)->tokenizer().encode(prompt, true, true);
    request.sampling.temperature = 0;
    request.max_tokens = maxTokens;
    request.stop_at_end_of_generation = false;
    std::string text;
    auto stats = cflow::generate(**session, request, [&](int32_t, std::string_view t) {
        text += t;
        return true;
    });
    EXPECT_TRUE(stats) << stats.error();
    return text;
}

const char* kHelloPrompt = "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n";

TEST(EngineWorkerTest, StreamsTheSameReplyAsTheEngineWithTheModelsTemplate) {
    EngineThread engine;
    Collector c(engine.worker());
    std::atomic<int> steps{0}, stepTokens{0};
    engine.worker()->setTelemetrySink([&](const cflow::TokenTelemetry& t) {
        EXPECT_EQ(t.layers.size(), 2u);
        steps.fetch_add(1);
        stepTokens.fetch_add(int(t.tokens));
    });
    ASSERT_TRUE(load(engine.worker(), c, qpath(chatml_model()))) << c.loadError.toStdString();

    post_generate(engine.worker(), {{QStringLiteral("user"), QStringLiteral("Hello")}}, greedy_settings(40));
    ASSERT_TRUE(c.waitReplies(1)) << c.errors.join(u'\n').toStdString();

    ASSERT_EQ(c.prompts.size(), 1u);
    EXPECT_EQ(c.prompts[0].kind, cflow::ui::TemplateKind::Model);
    EXPECT_EQ(c.prompts[0].text.toStdString(), kHelloPrompt);
    EXPECT_EQ(c.prompts[0].reusedTokens, 0);
    EXPECT_EQ(c.prompts[0].contextLength, 1024);
    const cflow::ui::ReplyStats& stats = c.finished[0];
    EXPECT_EQ(stats.generatedTokens, 40);
    EXPECT_FALSE(stats.cancelled);
    EXPECT_EQ(stats.stopReason, cflow::StopReason::MaxTokens);
    EXPECT_EQ(c.tokens, 40) << "the batches must carry every token";
    EXPECT_GE(c.batches, 1);
    EXPECT_LE(c.batches, 40);
    EXPECT_EQ(c.text.toStdString(), direct_reply(kHelloPrompt, 40));
    EXPECT_EQ(stats.contextUsed, c.prompts[0].promptTokens + 40);
    // One telemetry record per forward step: the prompt as batched chunks, then one per token.
    const int promptChunks = (c.prompts[0].promptTokens + int(cflow::Session::kPrefillChunk) - 1) / int(cflow::Session::kPrefillChunk);
    EXPECT_EQ(steps.load(), promptChunks + 40) << "one telemetry record per forward step";
    EXPECT_EQ(stepTokens.load(), c.prompts[0].promptTokens + 40) << "the records cover every token fed";
    EXPECT_GT(stats.mappedBytes, 0u);
    // Loaded as --load auto would load it: the lanes copy (the whole file) exactly where it chooses that.
    const bool lanes = cflow::choose_load_options(chatml_model().string(), false).options.lanes;
    EXPECT_EQ(stats.lanesCopyBytes, lanes ? stats.mappedBytes : 0u);
    EXPECT_GT(stats.timeToFirstTokenMs, 0);
    EXPECT_GT(stats.decodeTokensPerS, 0);
}

// The sampling panel's Expert reads and Expert cache reach the session: staged reads with a cache
// answer as mapped reads do, and the reply's stats carry the cache's budget and hit counts
// (every routed expert is a hit or a miss); mapped reads have no cache whatever the setting.
TEST(EngineWorkerTest, ExpertCacheSettingReachesTheSessionAndItsStats) {
    EngineThread engine;
    Collector c(engine.worker());
    ASSERT_TRUE(load(engine.worker(), c, qpath(moe_chatml_model()))) << c.loadError.toStdString();
    const Conversation hello{{QStringLiteral("user"), QStringLiteral("Hello")}};
    GenerationSettings mapped = greedy_settings(24);
    mapped.expertCacheMiB = 16;  // ignored: the page cache is mapped's cache
    post_generate(engine.worker(), hello, mapped);
    ASSERT_TRUE(c.waitReplies(1)) << c.errors.join(u'\n').toStdString();
    const QString mappedText = c.text;
    EXPECT_EQ(c.finished[0].expertFetch, QStringLiteral("mapped"));
    EXPECT_EQ(c.finished[0].expertCacheBytes, 0u);
    EXPECT_EQ(c.finished[0].expertCacheHits + c.finished[0].expertCacheMisses, 0u);

    c.resetReply();
    GenerationSettings staged = mapped;
    staged.expertFetch = cflow::ExpertFetch::Staged;
    post_generate(engine.worker(), hello, staged);
    ASSERT_TRUE(c.waitReplies(2)) << c.errors.join(u'\n').toStdString();
    const cflow::ui::ReplyStats& s = c.finished[1];
    EXPECT_EQ(c.text, mappedText) << "the same reply from the disk as from the mapping";
    EXPECT_EQ(s.expertFetch, QStringLiteral("staged"));
    EXPECT_EQ(s.expertCacheBytes, 16ull << 20);
    EXPECT_GT(s.expertCacheHits + s.expertCacheMisses, 0u);
    EXPECT_GT(s.expertCacheHits, 0u) << "24 tokens over 4 experts route some of them twice";
}

TEST(EngineWorkerTest, StopEndsGenerationWithinOneToken) {
    EngineThread engine;
    Collector c(engine.worker());
    // A slow consumer of telemetry slows every step, so the reply is surely mid-stream when stopped.
    engine.worker()->setTelemetrySink([](const cflow::TokenTelemetry&) { std::this_thread::sleep_for(std::chrono::milliseconds(2)); });
    ASSERT_TRUE(load(engine.worker(), c, qpath(chatml_model())));
    post_generate(engine.worker(), {{QStringLiteral("user"), QStringLiteral("Tell me a long story")}}, greedy_settings(900));
    ASSERT_TRUE(QTest::qWaitFor([&] { return engine.worker()->tokensGenerated() >= 10; }, kWorkerTimeoutMs));
    const int atStop = engine.worker()->stop();
    ASSERT_TRUE(c.waitReplies(1)) << c.errors.join(u'\n').toStdString();
    const cflow::ui::ReplyStats& stats = c.finished[0];
    EXPECT_TRUE(stats.cancelled);
    EXPECT_EQ(cflow::ui::reply_end_name(stats), QStringLiteral("cancelled"));
    EXPECT_GE(stats.generatedTokens, atStop);
    EXPECT_LE(stats.generatedTokens, atStop + 1) << "stopped at " << atStop << " tokens";
    EXPECT_LT(stats.generatedTokens, 900);
    EXPECT_EQ(c.tokens, stats.generatedTokens);
}

TEST(EngineWorkerTest, FollowUpTurnReusesTheCacheAndMatchesAFreshRun) {
    EngineThread engine;
    Collector c(engine.worker());
    ASSERT_TRUE(load(engine.worker(), c, qpath(chatml_model())));
    Conversation conversation{{QStringLiteral("user"), QStringLiteral("Hello")}};
    post_generate(engine.worker(), conversation, greedy_settings(16));
    ASSERT_TRUE(c.waitReplies(1));
    const QString reply = c.text;
    conversation.push_back({QStringLiteral("assistant"), reply});
    conversation.push_back({QStringLiteral("user"), QStringLiteral("And then?")});
    c.resetReply();
    post_generate(engine.worker(), conversation, greedy_settings(16));
    ASSERT_TRUE(c.waitReplies(2)) << c.errors.join(u'\n').toStdString();
    ASSERT_EQ(c.prompts.size(), 2u);
    // The cache held turn 1's prompt and its 16 reply tokens: at least the prompt is kept (the
    // reply only as far as it re-encodes to the same ids), only the rest was fed.
    EXPECT_GE(c.prompts[1].reusedTokens, c.prompts[0].promptTokens);
    EXPECT_LE(c.prompts[1].reusedTokens, c.prompts[0].promptTokens + 16);
    EXPECT_EQ(c.finished[1].promptTokens, c.prompts[1].promptTokens - c.prompts[1].reusedTokens);
    EXPECT_TRUE(c.prompts[1].text.startsWith(c.prompts[0].text + reply));

    // Reference: one session continued directly by the engine with the same ids.
    auto model = cflow::Model::load(chatml_model().string());
    ASSERT_TRUE(model);
    cflow::SessionOptions options;
    options.threads = 2;
    options.kv_cache = GenerationSettings{}.kvCache;  // the worker's cache type
    auto session = cflow::Session::create(*model, options);
    ASSERT_TRUE(session) << session.error();
    cflow::GenerateRequest request;
    request.sampling.temperature = 0;
    request.max_tokens = 16;
    request.stop_at_end_of_generation = false;
    request.prompt = cflow::encode_chat_prompt((*model)->tokenizer(), c.prompts[0].text.toStdString());
    std::string first, second;
    ASSERT_TRUE(cflow::generate(**session, request, [&](int32_t, std::string_view t) { first += t; return true; }));
    EXPECT_EQ(QString::fromStdString(first), reply);
    const std::vector<int32_t> whole = cflow::encode_chat_prompt((*model)->tokenizer(), c.prompts[1].text.toStdString());
    session.value()->truncate(uint32_t(c.prompts[1].reusedTokens));
    request.prompt.assign(whole.begin() + c.prompts[1].reusedTokens, whole.end());
    ASSERT_FALSE(request.prompt.empty());
    ASSERT_TRUE(cflow::generate(**session, request, [&](int32_t, std::string_view t) { second += t; return true; }));
    EXPECT_EQ(c.text.toStdString(), second) << "the reply on the reused cache must equal the engine's own continuation";
}

TEST(EngineWorkerTest, TheFirstReplyUsesTheSessionBuiltAtLoad) {
    EngineThread engine;
    Collector c(engine.worker());
    ASSERT_TRUE(load(engine.worker(), c, qpath(chatml_model())));
    EXPECT_EQ(engine.worker()->sessionsCreated(), 1);
    GenerationSettings settings;  // what a send starts with
    settings.maxTokens = 4;
    post_generate(engine.worker(), {{QStringLiteral("user"), QStringLiteral("Hi")}}, settings);
    ASSERT_TRUE(c.waitReplies(1)) << c.errors.join(u'\n').toStdString();
    EXPECT_EQ(engine.worker()->sessionsCreated(), 1) << "the first send rebuilt the session made at load";
    settings.kvCache = settings.kvCache == cflow::KvCacheType::F16 ? cflow::KvCacheType::F32 : cflow::KvCacheType::F16;
    post_generate(engine.worker(), {{QStringLiteral("user"), QStringLiteral("Hi")}}, settings);
    ASSERT_TRUE(c.waitReplies(2)) << c.errors.join(u'\n').toStdString();
    EXPECT_EQ(engine.worker()->sessionsCreated(), 2) << "another KV cache type needs its own session";
}

TEST(EngineWorkerTest, BrokenTemplateFallsBackVisibly) {
    const auto path = cflow::ui::test::model_with_template("broken", "{% for m in messages %}{{ m.content ");
    EngineThread engine;
    Collector c(engine.worker());
    ASSERT_TRUE(load(engine.worker(), c, qpath(path)));
    post_generate(engine.worker(), {{QStringLiteral("user"), QStringLiteral("Hello")}}, greedy_settings(4));
    ASSERT_TRUE(c.waitReplies(1)) << c.errors.join(u'\n').toStdString();
    ASSERT_EQ(c.prompts.size(), 1u);
    EXPECT_EQ(c.prompts[0].kind, cflow::ui::TemplateKind::Fallback);
    EXPECT_TRUE(c.prompts[0].templateNote.contains(QStringLiteral("does not compile"))) << c.prompts[0].templateNote.toStdString();
    EXPECT_EQ(c.prompts[0].text.toStdString(), cflow::render_fallback_chat({{"user", "Hello", ""}}, true));
}

TEST(EngineWorkerTest, ConversationLongerThanTheContextIsReported) {
    EngineThread engine;
    Collector c(engine.worker());
    ASSERT_TRUE(load(engine.worker(), c, qpath(chatml_model())));
    post_generate(engine.worker(), {{QStringLiteral("user"), QString(1500, u'x')}}, greedy_settings(4));
    ASSERT_TRUE(QTest::qWaitFor([&] { return !c.errors.isEmpty(); }, kWorkerTimeoutMs));
    EXPECT_TRUE(c.errors[0].contains(QStringLiteral("context is full"))) << c.errors[0].toStdString();
    EXPECT_TRUE(c.errors[0].contains(QStringLiteral("1024"))) << c.errors[0].toStdString();
    EXPECT_EQ(c.errorKinds[0], cflow::ErrorKind::ContextFull) << "the kind crosses the thread with the text";
    EXPECT_TRUE(c.finished.empty());
}

TEST(EngineWorkerTest, MissingModelReportsThePath) {
    EngineThread engine;
    Collector c(engine.worker());
    const QString missing = QStringLiteral("/nonexistent/model.cflow");
    QMetaObject::invokeMethod(engine.worker(), [w = engine.worker(), missing] { w->loadModel(missing, 1); });
    ASSERT_TRUE(QTest::qWaitFor([&] { return !c.loadError.isEmpty(); }, kWorkerTimeoutMs));
    EXPECT_TRUE(c.loadError.contains(missing)) << c.loadError.toStdString();
    auto direct = cflow::Model::load(missing.toStdString());
    ASSERT_FALSE(direct);
    EXPECT_EQ(c.loadErrorKind, direct.kind()) << "the engine's kind, not a string";
    EXPECT_EQ(c.loadError, QString::fromStdString(direct.error())) << "the engine's text unchanged";
}

// Issue 36: the worker's one open of the file gives the Model panel its rows and card (the window
// used to read the file a second time for them).
TEST(EngineWorkerTest, TheLoadedModelCarriesItsSummaryAndCard) {
    EngineThread engine;
    Collector c(engine.worker());
    ASSERT_TRUE(load(engine.worker(), c, qpath(chatml_model()))) << c.loadError.toStdString();
    ASSERT_EQ(c.infos.size(), 1u);
    const cflow::ui::ModelInfo& info = c.infos[0];
    ASSERT_NE(info.model, nullptr);
    const cflow::ui::ModelSummary expected = cflow::ui::summarize_model(info.model->file());
    ASSERT_EQ(info.summary.size(), expected.size());
    ASSERT_FALSE(info.summary.empty());
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(info.summary[i].title, expected[i].title);
        ASSERT_EQ(info.summary[i].fields.size(), expected[i].fields.size()) << expected[i].title.toStdString();
        for (size_t f = 0; f < expected[i].fields.size(); ++f) {
            EXPECT_EQ(info.summary[i].fields[f].name, expected[i].fields[f].name);
            EXPECT_EQ(info.summary[i].fields[f].value, expected[i].fields[f].value);
        }
    }
    const cflow::ui::ModelCard card = cflow::ui::read_model_card(info.model->file(), qpath(chatml_model()));
    EXPECT_EQ(info.card.name, card.name);
    EXPECT_FALSE(info.card.name.isEmpty());
    EXPECT_EQ(info.card.capabilities, card.capabilities);
    EXPECT_FALSE(info.card.capabilities.isEmpty());
}

// A load asked for while an older one still waited in the queue makes the worker skip the older:
// its file is never opened and only the newer model arrives.
TEST(EngineWorkerTest, ALoadOvertakenInTheQueueIsNotOpened) {
    EngineThread engine;
    Collector c(engine.worker());
    std::atomic<int> opens{0};
    std::vector<std::string> opened;
    std::mutex openedMutex;
    engine.worker()->setModelLoader([&](const std::string& path, const cflow::LoadOptions& options) {
        opens.fetch_add(1);
        {
            std::lock_guard lock(openedMutex);
            opened.push_back(path);
        }
        return cflow::Model::load(path, options);
    });
    // Holds the worker's thread so that both requests are queued before either starts.
    QSemaphore holding, release;
    QMetaObject::invokeMethod(engine.worker(), [&] {
        holding.release();
        release.acquire();
    });
    ASSERT_TRUE(holding.tryAcquire(1, kWorkerTimeoutMs));
    EngineWorker* worker = engine.worker();
    const QString older = qpath(moe_chatml_model()), newer = qpath(chatml_model());
    const uint64_t olderSerial = worker->postLoadRequest();
    QMetaObject::invokeMethod(worker, [worker, older, olderSerial] { worker->loadModel(older, 2, olderSerial); });
    const uint64_t newerSerial = worker->postLoadRequest();
    QMetaObject::invokeMethod(worker, [worker, newer, newerSerial] { worker->loadModel(newer, 2, newerSerial); });
    release.release();
    ASSERT_TRUE(QTest::qWaitFor([&] { return c.loaded || !c.loadError.isEmpty(); }, kWorkerTimeoutMs)) << c.loadError.toStdString();
    // Signals from one thread arrive in order: a load of the older file would have come first.
    ASSERT_EQ(c.infos.size(), 1u);
    EXPECT_EQ(c.infos[0].path, newer);
    EXPECT_EQ(opens.load(), 1);
    std::lock_guard lock(openedMutex);
    ASSERT_EQ(opened.size(), 1u);
    EXPECT_EQ(opened[0], newer.toStdString());
}

// Issue 38: the model file truncated while the app has it loaded killed the whole app with SIGBUS.
// Now the next reply fails with an error naming the file, and the worker lives on.
TEST(EngineWorkerTest, AModelFileTruncatedWhileLoadedFailsTheReplyNotTheApp) {
    const auto path = cflow::ui::test::model_with_template(
        "truncated", "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}");
    EngineThread engine;
    Collector c(engine.worker());
    ASSERT_TRUE(load(engine.worker(), c, qpath(path)));
    post_generate(engine.worker(), {{QStringLiteral("user"), QStringLiteral("Hello")}}, greedy_settings(4));
    ASSERT_TRUE(c.waitReplies(1)) << c.errors.join(u'\n').toStdString();

    std::filesystem::resize_file(path, 4096);
    post_generate(engine.worker(), {{QStringLiteral("user"), QStringLiteral("Hello again")}}, greedy_settings(4));
    ASSERT_TRUE(QTest::qWaitFor([&] { return !c.errors.isEmpty(); }, kWorkerTimeoutMs));
    EXPECT_TRUE(c.errors[0].contains(QStringLiteral("changed on disk while in use"))) << c.errors[0].toStdString();
    EXPECT_TRUE(c.errors[0].contains(qpath(path))) << c.errors[0].toStdString();
    EXPECT_EQ(c.finished.size(), 1u);
}

} // namespace
