// The desktop chat past the context (issue 37): on a model with a 512-token context, a 2000-token
// reply with "Sliding window" or "Drop oldest turns" keeps streaming through context shifts to its
// last token (the reply stats say how many tokens were left out); with "Stop" it ends at the
// context, as the chat panel's error then explains.
#include <QMetaObject>
#include <QObject>
#include <QTest>

#include <gtest/gtest.h>

#include "cflow/formats/converter.h"
#include "cflow/ui/chat_controller.h"
#include "cflow/ui/chat_panel.h"
#include "cflow/ui/context_gauge.h"
#include "cflow/ui/engine_worker.h"
#include "cflow/ui/main_window.h"
#include "cflow/ui/sampling_panel.h"
#include "ui_test_models.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace {

using cflow::ui::Conversation;
using cflow::ui::EngineThread;
using cflow::ui::EngineWorker;

constexpr int kShiftWorkerTimeoutMs = 120000;
constexpr int kShiftWorkerReply = 2000;  // the case: a 2000-token reply in a 512-token context

std::string shift_worker_model() {
    cflow::test::SyntheticSpec spec;
    spec.vocab = 320;
    spec.seed = 13;
    spec.max_seq_len = 512;
    cflow::SourceModel source = cflow::test::make_synthetic_model(spec);
    source.metadata.set("tokenizer.chat_template",
                        std::string("{% for m in messages %}{{ m['role'] + ': ' + m['content'] + '\\n' }}{% endfor %}"
                                    "{% if add_generation_prompt %}assistant: {% endif %}"));
    const auto path = cflow::test::temp_dir("context_shift_worker") / "m.cflow";
    cflow::ConvertOptions options;
    options.weight_quant = cflow::DType::F32;
    auto converted = cflow::convert_to_cflow(source, path.string(), options);
    EXPECT_TRUE(converted.ok()) << (converted.ok() ? "" : converted.error());
    return path.string();
}

TEST(ContextShiftWorker, ALongReplyKeepsStreamingUnderTheShiftingPolicies) {
    const QString path = QString::fromStdString(shift_worker_model());
    for (cflow::ContextPolicy policy :
         {cflow::ContextPolicy::Stop, cflow::ContextPolicy::SlidingWindow, cflow::ContextPolicy::DropOldest}) {
        SCOPED_TRACE(std::string(cflow::context_policy_name(policy)));
        EngineThread engine;
        EngineWorker* worker = engine.worker();
        QObject context;
        bool loaded = false, finished = false;
        QStringList errors;
        int streamed = 0;
        cflow::ui::ReplyStats stats;
        QObject::connect(worker, &EngineWorker::modelLoaded, &context, [&](const cflow::ui::ModelInfo&) { loaded = true; });
        QObject::connect(worker, &EngineWorker::loadFailed, &context, [&](const QString&, const cflow::ui::WorkerError& e) { errors << e.message; });
        QObject::connect(worker, &EngineWorker::tokensReady, &context, [&](const QString&, int n) { streamed += n; });
        QObject::connect(worker, &EngineWorker::finished, &context, [&](const cflow::ui::ReplyStats& s) {
            stats = s;
            finished = true;
        });
        QObject::connect(worker, &EngineWorker::error, &context, [&](const cflow::ui::WorkerError& e) { errors << e.message; });
        QMetaObject::invokeMethod(worker, [worker, path] { worker->loadModel(path, 1); });
        ASSERT_TRUE(QTest::qWaitFor([&] { return loaded || !errors.isEmpty(); }, kShiftWorkerTimeoutMs) && loaded)
            << errors.join(u'\n').toStdString();

        cflow::ui::GenerationSettings settings;
        settings.sampling.temperature = 0;
        settings.maxTokens = kShiftWorkerReply;
        settings.threads = 1;
        settings.ignoreEos = true;
        settings.contextPolicy = policy;
        Conversation conversation;
        conversation.push_back({QStringLiteral("system"), QStringLiteral("be brief")});
        conversation.push_back({QStringLiteral("user"), QStringLiteral("hello the cat")});
        QMetaObject::invokeMethod(worker, [worker, conversation, settings] { worker->generate(conversation, settings); });
        ASSERT_TRUE(QTest::qWaitFor([&] { return finished || !errors.isEmpty(); }, kShiftWorkerTimeoutMs));
        ASSERT_TRUE(errors.isEmpty()) << errors.join(u'\n').toStdString();
        EXPECT_EQ(stats.contextLength, 512);
        EXPECT_LE(stats.contextUsed, 512);
        if (policy == cflow::ContextPolicy::Stop) {
            EXPECT_EQ(stats.stopReason, cflow::StopReason::ContextFull);
            EXPECT_LT(stats.generatedTokens, 512);
            EXPECT_EQ(stats.contextShifts, 0);
        } else {
            EXPECT_EQ(stats.stopReason, cflow::StopReason::MaxTokens) << "the reply stopped at the context";
            EXPECT_EQ(stats.generatedTokens, kShiftWorkerReply);
            EXPECT_GE(stats.contextShifts, 2);
            EXPECT_GT(stats.shiftDroppedTokens, 0);
        }
    }
}

// The same reply in the window: it streams to its 2000th token with the policy the user chose,
// the gauge never reads more than the context, and no "context is full" error is shown (the
// issue: a red error naming the policy already chosen, and a gauge reading "256 / 512").
TEST(ContextShiftWindow, ALongReplyRunsToItsEndAndTheGaugeStaysWithinTheContext) {
    cflow::ui::test::ScopedDb db("context_shift_window");
    const QString path = QString::fromStdString(shift_worker_model());
    cflow::ui::MainWindow window;
    window.openModel(path);
    ASSERT_TRUE(QTest::qWaitFor([&] { return window.controller()->modelReady(); }, kShiftWorkerTimeoutMs));
    ASSERT_EQ(window.controller()->contextLength(), 512);
    window.controller()->setContextPolicy(cflow::ContextPolicy::DropOldest);
    cflow::ui::GenerationSettings settings;
    settings.sampling.temperature = 0;
    settings.maxTokens = kShiftWorkerReply;
    settings.threads = 1;
    settings.ignoreEos = true;
    window.samplingPanel()->setSettings(settings);
    ASSERT_EQ(window.samplingPanel()->settings().maxTokens, kShiftWorkerReply) << "a shifting policy does not cap it";
    EXPECT_TRUE(window.samplingPanel()->maxTokensNote().contains(QStringLiteral("Longer than the 512-token context")))
        << window.samplingPanel()->maxTokensNote().toStdString();

    int mostUsed = 0, mostShown = 0;
    QObject::connect(window.controller(), &cflow::ui::ChatController::contextChanged, &window, [&](int used, int) {
        mostUsed = std::max(mostUsed, used);
        const cflow::ui::ContextGauge* gauge = window.chatPanel()->contextGauge();
        mostShown = std::max(mostShown, gauge->promptTokens() + gauge->replyTokens());
    });
    cflow::ui::ReplyStats stats;
    QObject::connect(window.controller(), &cflow::ui::ChatController::replyFinished, &window,
                     [&](const cflow::ui::ReplyStats& s) { stats = s; });
    ASSERT_TRUE(window.chatPanel()->send(QStringLiteral("hello the cat")));
    ASSERT_TRUE(QTest::qWaitFor([&] { return !window.controller()->isGenerating(); }, kShiftWorkerTimeoutMs));
    EXPECT_EQ(stats.generatedTokens, kShiftWorkerReply);
    EXPECT_EQ(stats.stopReason, cflow::StopReason::MaxTokens);
    EXPECT_GE(stats.contextShifts, 2);
    EXPECT_LE(mostUsed, 512) << "the controller's count follows the engine's shifts";
    EXPECT_LE(mostShown, 512);
    EXPECT_FALSE(window.chatPanel()->noticeText().contains(QStringLiteral("context is full")))
        << window.chatPanel()->noticeText().toStdString();
    EXPECT_LE(window.controller()->contextUsed(), 512);
}

} // namespace
