// One chat core for every front end: the same two-turn conversation through `cflow chat` (a
// child process fed on stdin) and through the desktop app's EngineWorker (queued calls on its
// thread) gives the same prompt token counts, the same KV reuse, the same reply bytes, and
// stops at the same place — for ChatML, Llama-3, Gemma and Phi-3 (synthetic models whose
// vocabulary has the template's control tokens) and the bundled story model's template.
//
// To make "stops at the same place" a real check, each synthetic model is built twice: once
// to find the token greedy decoding picks at step 3 of the first reply, then again with the
// end-of-turn token's output row set to 3x that token's row, so the reply must end on the
// end-of-turn token (no later than step 3) — unless a front end fails to stop there.
#include <cstring>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include <QMetaObject>
#include <QObject>
#include <QTest>

#include <gtest/gtest.h>

#include "cflow/engine/chat/chat_session.h"
#include "cflow/formats/converter.h"
#include "cflow/ui/engine_worker.h"
#include "cli_runner.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace {

using cflow::ui::Conversation;
using cflow::ui::EngineThread;
using cflow::ui::EngineWorker;

constexpr int kParityTimeoutMs = 120000;
constexpr int kMaxTokens = 24;
constexpr uint32_t kVocab = 320;
const std::vector<std::string> kUserTurns = {"hello the cat", "and the dog"};

struct Family {
    std::string name;
    std::string chat_template;
    std::vector<std::string> control_tokens;  // become the last ids of the vocabulary
    std::string end_of_turn;                  // the one the reply is steered to end on
};

const std::vector<Family>& families() {
    static const std::vector<Family> all = {
        {"chatml",
         "{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
         "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
         {"<|im_start|>", "<|im_end|>"},
         "<|im_end|>"},
        {"llama3",
         "{{ bos_token }}{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\\n\\n' + "
         "m['content'] | trim + '<|eot_id|>' }}{% endfor %}"
         "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}",
         {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"},
         "<|eot_id|>"},
        {"gemma",
         "{{ bos_token }}{% for m in messages %}{% set role = 'model' if m['role'] == 'assistant' else m['role'] %}"
         "{{ '<start_of_turn>' + role + '\\n' + m['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}"
         "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}",
         {"<start_of_turn>", "<end_of_turn>"},
         "<end_of_turn>"},
        {"phi3",
         "{% for m in messages %}{{ '<|' + m['role'] + '|>' + '\\n' + m['content'] + '<|end|>' + '\\n' }}{% endfor %}"
         "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}",
         {"<|user|>", "<|assistant|>", "<|end|>"},
         "<|end|>"},
    };
    return all;
}

int32_t control_id(const Family& family, const std::string& token) {
    for (size_t i = 0; i < family.control_tokens.size(); ++i)
        if (family.control_tokens[i] == token)
            return static_cast<int32_t>(kVocab - family.control_tokens.size() + i);
    return -1;
}

// steer: {end-of-turn id, id whose output row it copies x3}; {-1, -1} = unchanged weights.
std::string build_model(const Family& family, const std::string& file, std::pair<int32_t, int32_t> steer) {
    cflow::test::SyntheticSpec spec;
    spec.vocab = kVocab;
    spec.seed = 7;
    spec.weight_std = 0.2f;  // peaked logits: greedy replies do not hinge on float rounding
    cflow::SourceModel source = cflow::test::make_synthetic_model(spec);
    auto tokens = *source.metadata.get_strings("tokenizer.ggml.tokens");
    auto types = *source.metadata.get_ints("tokenizer.ggml.token_type");
    for (const std::string& token : family.control_tokens) {
        const int32_t id = control_id(family, token);
        tokens[static_cast<size_t>(id)] = token;
        types[static_cast<size_t>(id)] = 3;  // control
    }
    source.metadata.set("tokenizer.ggml.tokens", std::move(tokens));
    source.metadata.set("tokenizer.ggml.token_type", std::move(types));
    source.metadata.set("tokenizer.chat_template", family.chat_template);
    if (steer.first >= 0) {
        // [vocab, d_model] f32 rows in the synthetic model's own memory (tests only).
        const cflow::TensorView* output = source.find("output.weight");
        EXPECT_NE(output, nullptr);
        auto* rows = reinterpret_cast<float*>(const_cast<uint8_t*>(output->data));
        const size_t d = spec.d_model;
        for (size_t c = 0; c < d; ++c)
            rows[size_t(steer.first) * d + c] = 3.0f * rows[size_t(steer.second) * d + c];
    }
    const auto out = cflow::test::temp_dir("chat_parity_" + family.name) / file;
    cflow::ConvertOptions options;
    options.weight_quant = cflow::DType::F32;
    auto converted = cflow::convert_to_cflow(source, out.string(), options);
    EXPECT_TRUE(converted.ok()) << (converted.ok() ? "" : converted.error());
    return out.string();
}

// The token the chat core picks greedily at reply step `step` of the first turn (no stops).
int32_t greedy_token_at(const std::string& model_path, size_t step) {
    auto model = cflow::Model::load(model_path);
    EXPECT_TRUE(model.ok());
    if (!model) return -1;
    cflow::SessionOptions options;
    options.threads = 1;
    options.kv_cache = cflow::ui::GenerationSettings{}.kvCache;  // as both front ends decode by default
    auto session = cflow::Session::create(*model, options);
    EXPECT_TRUE(session.ok());
    if (!session) return -1;
    cflow::ChatSession chat(*model, std::move(session).value());
    auto turn = chat.prepare({{"user", kUserTurns[0], ""}});
    EXPECT_TRUE(turn.ok());
    cflow::ReplyOptions reply;
    reply.sampling.temperature = 0;
    reply.max_tokens = static_cast<int32_t>(step + 1);
    reply.ignore_end_of_turn = true;
    cflow::ChatTurnOutcome outcome;
    EXPECT_TRUE(chat.reply(*turn, reply, {}, nullptr, outcome).ok());
    return outcome.tokens.size() > step ? outcome.tokens[step] : -1;
}

struct FrontEndRun {
    std::string replies;                      // every reply followed by "\n", as `cflow chat` prints them
    std::vector<std::pair<int, int>> prompts; // per turn: prompt tokens, reused from the KV cache
    std::vector<QString> stop_reasons;        // GUI only
    std::vector<int> generated;               // GUI only
};

FrontEndRun run_cli(const std::string& model) {
    std::string input;
    for (const auto& turn : kUserTurns) input += turn + "\n";
    const auto r = cflow::test::run_cflow_with_input(
        {"chat", model, "-n", std::to_string(kMaxTokens), "--temp", "0", "--threads", "1", "--show-prompt"}, input);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    FrontEndRun run;
    run.replies = r.out;
    static const std::regex line(R"(end of prompt; (\d+) tokens, (\d+) reused from the KV cache)");
    for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), line); it != std::sregex_iterator(); ++it)
        run.prompts.emplace_back(std::stoi((*it)[1]), std::stoi((*it)[2]));
    return run;
}

FrontEndRun run_gui(const std::string& model) {
    EngineThread engine;
    EngineWorker* worker = engine.worker();
    QObject context;
    bool loaded = false;
    QString text;
    QStringList errors;
    FrontEndRun run;
    QObject::connect(worker, &EngineWorker::modelLoaded, &context, [&](const cflow::ui::ModelInfo&) { loaded = true; });
    QObject::connect(worker, &EngineWorker::loadFailed, &context, [&](const QString&, const cflow::ui::WorkerError& e) { errors << e.message; });
    QObject::connect(worker, &EngineWorker::promptReady, &context, [&](const cflow::ui::RenderedPrompt& p) {
        run.prompts.emplace_back(p.promptTokens, p.reusedTokens);
    });
    QObject::connect(worker, &EngineWorker::tokensReady, &context, [&](const QString& t, int) { text += t; });
    QObject::connect(worker, &EngineWorker::finished, &context, [&](const cflow::ui::ReplyStats& s) {
        run.stop_reasons.push_back(cflow::ui::reply_end_name(s));
        run.generated.push_back(s.generatedTokens);
    });
    QObject::connect(worker, &EngineWorker::error, &context, [&](const cflow::ui::WorkerError& e) { errors << e.message; });

    const QString path = QString::fromStdString(model);
    QMetaObject::invokeMethod(worker, [worker, path] { worker->loadModel(path, 1); });
    EXPECT_TRUE(QTest::qWaitFor([&] { return loaded || !errors.isEmpty(); }, kParityTimeoutMs) && loaded)
        << errors.join(u'\n').toStdString();
    if (!loaded) return run;

    cflow::ui::GenerationSettings settings;
    settings.sampling.temperature = 0;
    settings.maxTokens = kMaxTokens;
    settings.threads = 1;
    Conversation conversation;
    for (const auto& user : kUserTurns) {
        conversation.push_back({QStringLiteral("user"), QString::fromStdString(user)});
        text.clear();
        const size_t before = run.stop_reasons.size();
        QMetaObject::invokeMethod(worker, [worker, conversation, settings] { worker->generate(conversation, settings); });
        EXPECT_TRUE(QTest::qWaitFor([&] { return run.stop_reasons.size() > before || !errors.isEmpty(); }, kParityTimeoutMs))
            << "no reply within the time limit";
        EXPECT_TRUE(errors.isEmpty()) << errors.join(u'\n').toStdString();
        if (!errors.isEmpty()) break;
        run.replies += text.toStdString() + "\n";
        conversation.push_back({QStringLiteral("assistant"), text});
    }
    return run;
}

void expect_same(const FrontEndRun& cli, const FrontEndRun& gui) {
    EXPECT_EQ(cli.replies, gui.replies) << "the two front ends replied differently";
    ASSERT_EQ(cli.prompts.size(), kUserTurns.size());
    ASSERT_EQ(gui.prompts.size(), kUserTurns.size());
    for (size_t t = 0; t < kUserTurns.size(); ++t) {
        EXPECT_EQ(cli.prompts[t].first, gui.prompts[t].first) << "prompt tokens of turn " << t + 1;
        EXPECT_EQ(cli.prompts[t].second, gui.prompts[t].second) << "KV-cache tokens reused in turn " << t + 1;
    }
}

class ChatFrontEndParity : public ::testing::TestWithParam<size_t> {};

TEST_P(ChatFrontEndParity, CliAndGuiGiveTheSameTurnsAndStopAtTheSamePlace) {
    const Family& family = families()[GetParam()];
    const std::string probe = build_model(family, "probe.cflow", {-1, -1});
    const int32_t steered = greedy_token_at(probe, 3);
    ASSERT_GE(steered, 0);
    const int32_t end = control_id(family, family.end_of_turn);
    ASSERT_NE(steered, end);
    const std::string model = build_model(family, "steered.cflow", {end, steered});

    const FrontEndRun cli = run_cli(model);
    const FrontEndRun gui = run_gui(model);
    expect_same(cli, gui);
    ASSERT_EQ(gui.stop_reasons.size(), kUserTurns.size());
    EXPECT_EQ(gui.stop_reasons[0], QStringLiteral("stop_token")) << "the first reply must end on " << family.end_of_turn;
    EXPECT_LE(gui.generated[0], 3);
    EXPECT_GT(gui.prompts[1].second, 0) << "the second turn reuses the first turn's KV cache";
}

INSTANTIATE_TEST_SUITE_P(Templates, ChatFrontEndParity, ::testing::Range<size_t>(0, 4),
                         [](const ::testing::TestParamInfo<size_t>& param) { return families()[param.param].name; });

// The bundled story model: its template joins the turns with spaces after BOS and the reply
// ends at EOS (or the token limit); both front ends must agree on all of it.
TEST(ChatFrontEndParity, StoryTemplateOfTheBundledModel) {
    const std::filesystem::path model = std::filesystem::path(CFLOW_SOURCE_DIR) / "resources" / "default-model.cflow";
    if (!std::filesystem::exists(model)) GTEST_SKIP() << "the bundled model is missing: " << model;
    const FrontEndRun cli = run_cli(model.string());
    const FrontEndRun gui = run_gui(model.string());
    expect_same(cli, gui);
    ASSERT_EQ(gui.stop_reasons.size(), kUserTurns.size());
    for (const QString& reason : gui.stop_reasons)
        EXPECT_TRUE(reason == QStringLiteral("end_of_generation") || reason == QStringLiteral("max_tokens"))
            << reason.toStdString();
}

} // namespace
