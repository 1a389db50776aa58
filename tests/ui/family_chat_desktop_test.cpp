// The desktop app holds a conversation with a random-weight model of every chat family (issue 31):
// the GGUFs of tests/reference/make_ggml_fixtures.py's chat_<family>/ fixtures (Llama 3.1, Qwen3,
// SmolLM3, Gemma 3, Phi-4-mini, gpt-oss), converted to F32 and driven through the EngineWorker on
// its own thread with queued calls, as the chat window drives it: the model's own template, the
// fixture's fixed strftime_now() clock, greedy. Each reply is the float64 reference's (the fixture's
// reply_text), ends on the family's end-of-turn token with the family's stop reason, and the second
// turn reuses the first prompt from the KV cache. tests/parity/ggml/family_chat_test.cpp holds the
// same conversations against ChatSession and `cflow chat`.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <QMetaObject>
#include <QObject>
#include <QTest>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cflow/formats/converter.h"
#include "cflow/formats/source_model.h"
#include "cflow/ui/engine_worker.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using cflow::ui::Conversation;
using cflow::ui::EngineThread;
using cflow::ui::EngineWorker;

constexpr int kDesktopChatTimeoutMs = 120000;
constexpr int32_t kDesktopMaxReplyTokens = 32;  // far past the longest expected reply (8 tokens)
constexpr cflow::TemplateTime kDesktopChatClock{2025, 3, 7, 14, 5, 9};  // expected.json "template_time"

struct TurnSeen {
    int promptTokens = 0;
    int reusedTokens = 0;
    QString reply;
    QString stopReason;
};

class DesktopFamilyChat : public ::testing::TestWithParam<const char*> {};

TEST_P(DesktopFamilyChat, TwoTurnsAsTheReferenceEndOnTheEndOfTurnToken) {
    const std::string name = GetParam();
    const fs::path dir = fs::path(CFLOW_GGML_FIXTURES_DIR) / ("chat_" + name);
    std::error_code ec;
    if (!fs::exists(dir / "expected.json", ec))
        GTEST_SKIP() << dir.string() << " is absent: the family chat fixtures need ../shared's templates and torch";
    std::ifstream in(dir / "expected.json");
    const nlohmann::json expected = nlohmann::json::parse(in);
    ASSERT_EQ(expected.at("template_time").get<std::string>(), "2025-03-07 14:05:09");

    auto source = cflow::read_gguf_model((dir / "model.gguf").string());
    ASSERT_TRUE(source.ok()) << source.error();
    cflow::ConvertOptions options;
    options.weight_quant = cflow::DType::F32;
    options.embedding_quant = cflow::DType::F32;
    const fs::path model = cflow::test::temp_dir("desktop-family-chat-" + name) / "m.cflow";
    auto converted = cflow::convert_to_cflow(*source, model.string(), options);
    ASSERT_TRUE(converted.ok()) << converted.error();

    EngineThread engine;
    EngineWorker* worker = engine.worker();
    QObject context;
    bool loaded = false;
    QStringList errors;
    std::vector<TurnSeen> turns;
    TurnSeen current;
    bool finished = false;
    QObject::connect(worker, &EngineWorker::modelLoaded, &context, [&](const cflow::ui::ModelInfo&) { loaded = true; });
    QObject::connect(worker, &EngineWorker::loadFailed, &context, [&](const QString&, const cflow::ui::WorkerError& e) { errors << e.message; });
    QObject::connect(worker, &EngineWorker::promptReady, &context, [&](const cflow::ui::RenderedPrompt& p) {
        current.promptTokens = p.promptTokens;
        current.reusedTokens = p.reusedTokens;
    });
    QObject::connect(worker, &EngineWorker::tokensReady, &context, [&](const QString& t, int) { current.reply += t; });
    QObject::connect(worker, &EngineWorker::finished, &context, [&](const cflow::ui::ReplyStats& s) {
        current.stopReason = cflow::ui::reply_end_name(s);
        finished = true;
    });
    QObject::connect(worker, &EngineWorker::error, &context, [&](const cflow::ui::WorkerError& e) { errors << e.message; });

    const QString path = QString::fromStdString(model.string());
    QMetaObject::invokeMethod(worker, [worker, path] { worker->loadModel(path, 2); });
    ASSERT_TRUE(QTest::qWaitFor([&] { return loaded || !errors.isEmpty(); }, kDesktopChatTimeoutMs) && loaded)
        << errors.join(u'\n').toStdString();

    cflow::ui::GenerationSettings settings;
    settings.sampling.temperature = 0;
    settings.maxTokens = kDesktopMaxReplyTokens;
    settings.threads = 2;
    settings.kvCache = cflow::KvCacheType::F32;
    settings.templateClock = kDesktopChatClock;
    Conversation conversation;
    conversation.push_back({QStringLiteral("system"), QString::fromStdString(expected.at("system").get<std::string>())});
    for (const auto& user : expected.at("users")) {
        conversation.push_back({QStringLiteral("user"), QString::fromStdString(user.get<std::string>())});
        current = {};
        finished = false;
        QMetaObject::invokeMethod(worker, [worker, conversation, settings] { worker->generate(conversation, settings); });
        ASSERT_TRUE(QTest::qWaitFor([&] { return finished || !errors.isEmpty(); }, kDesktopChatTimeoutMs))
            << "no reply within the time limit";
        ASSERT_TRUE(errors.isEmpty()) << errors.join(u'\n').toStdString();
        turns.push_back(current);
        conversation.push_back({QStringLiteral("assistant"), current.reply});
    }

    const auto& want = expected.at("turns");
    ASSERT_EQ(turns.size(), want.size());
    const QString stop = QString::fromStdString(expected.at("stop_reason").get<std::string>());
    for (size_t t = 0; t < turns.size(); ++t) {
        const std::string label = name + " turn " + std::to_string(t + 1);
        EXPECT_EQ(turns[t].reply.toStdString(), want[t].at("reply_text").get<std::string>())
            << label << ": not the float64 reference's greedy reply";
        EXPECT_EQ(turns[t].stopReason, stop) << label;
        EXPECT_EQ(size_t(turns[t].promptTokens), want[t].at("prompt_ids").size()) << label << ": not jinja2's prompt";
    }
    EXPECT_EQ(turns[0].reusedTokens, 0);
    EXPECT_GE(size_t(turns[1].reusedTokens), want[0].at("prompt_ids").size())
        << name << ": the second turn does not reuse the first prompt";
}

INSTANTIATE_TEST_SUITE_P(Families, DesktopFamilyChat,
                         ::testing::Values("llama3", "qwen3", "smollm3", "gemma3", "phi4mini", "gpt_oss"),
                         [](const ::testing::TestParamInfo<const char*>& param) { return std::string(param.param); });

} // namespace
