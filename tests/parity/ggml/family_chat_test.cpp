// A conversation end to end with a random-weight model of every chat family (issue 31): Llama 3.1,
// Qwen3, SmolLM3, Gemma 3, Phi-4-mini and gpt-oss (harmony), each the GGUF llama.cpp's converter writes (fixtures
// chat_<family>/ of tests/reference/make_ggml_fixtures.py): the toy vocabulary plus the family's
// control tokens (and Qwen3 / SmolLM3's <think> / </think> as user-defined tokens), its bos / eos /
// eot ids, its real chat template from ../shared (rendered with the fixture's fixed clock: gpt-oss
// writes today's date), and an output path that ends every greedy reply
// with the family's end-of-turn token after a few ordinary tokens.
//
// Converted to F32 and run through ChatSession on the scalar f32 path: the model's own template is
// used and survives the conversion byte for byte; the reply stops on the family's end-of-turn token
// (end_of_turn_tokens() or EOS, whichever the family's vocabulary makes it); each prompt is the
// jinja2 rendering and its ids are the Python tokenisation (every control token one id); the greedy
// reply is the float64 numpy forward's, token for token, ending with the stop reason the family
// gives (EOS: end_of_generation, another end-of-turn token: stop_token); the second user turn reuses
// the KV cache (at least the whole first prompt) and ends the same way. Then the same two turns
// through `cflow convert` and `cflow chat` from a pipe.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cflow/engine/chat/chat_session.h"
#include "cflow/engine/generation/generate.h"
#include "cflow/formats/source_model.h"
#include "family_reference.h"
#include "ggml_fixtures.h"
#include "test_support.h"

namespace cflow {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kFamilies[] = {"llama3", "qwen3", "smollm3", "gemma3", "phi4mini", "gpt_oss"};
constexpr int32_t kMaxReplyTokens = 32;  // far past the longest expected reply (8 tokens)
constexpr int32_t kTokenControl = 3, kTokenUserDefined = 4;

// Skips when the generator could not write the chat fixtures (no ../shared for the templates, or
// no torch); fails when it ran and left one out.
#define REQUIRE_CHAT_FIXTURE(name)                                                                     \
    do {                                                                                               \
        const std::string rel_ = std::string("chat_") + (name) + "/expected.json";                    \
        std::error_code ec_;                                                                           \
        if (!fs::exists(test::ggml_fixtures_dir() / rel_, ec_) && test::shared_dir().empty())          \
            GTEST_SKIP() << "the family chat fixtures need the chat templates of ../shared (absent)"; \
        CFLOW_REQUIRE_GGML_FIXTURE(rel_);                                                              \
        CFLOW_REQUIRE_GGML_FIXTURE(std::string("chat_") + (name) + "/model.gguf");                     \
    } while (0)

json load_expected(const std::string& name) {
    std::ifstream in(test::ggml_fixtures_dir() / ("chat_" + name) / "expected.json");
    return json::parse(in);
}

std::vector<ChatMessage> messages_of(const json& turn) {
    std::vector<ChatMessage> out;
    for (const auto& m : turn.at("messages")) out.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>(), ""});
    return out;
}

std::vector<int32_t> ids_of(const json& j) { return j.get<std::vector<int32_t>>(); }

bool contains(const std::vector<int32_t>& ids, int32_t id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

size_t occurrences(const std::string& text, const std::string& piece) {
    size_t n = 0;
    for (size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + piece.size())) ++n;
    return n;
}

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    return n;
}

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The family's template as ../shared holds it (expected.json names the file and, for a JSON file, the key).
std::string shared_template(const json& expected) {
    const fs::path path = test::shared_asset(expected.at("template").get<std::string>());
    if (path.empty()) return {};
    const std::string text = read_text(path);
    if (expected.at("template_key").is_null()) return text;
    return json::parse(text).at(expected.at("template_key").get<std::string>()).get<std::string>();
}

std::shared_ptr<const Model> convert_and_load(const std::string& name) {
    auto source = read_gguf_model((test::ggml_fixtures_dir() / ("chat_" + name) / "model.gguf").string());
    EXPECT_TRUE(source.ok()) << (source.ok() ? "" : source.error());
    if (!source) return nullptr;
    auto model = test::convert_f32_and_load(*source, test::temp_dir("family-chat-" + name) / "m.cflow");
    EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error());
    if (!model) return nullptr;
    return *model;
}

// The fixture's strftime_now() clock (expected.json "template_time", as --template-time takes it).
constexpr TemplateTime kChatFixtureTime{2025, 3, 7, 14, 5, 9};
constexpr const char* kChatFixtureTimeText = "2025-03-07 14:05:09";

ChatSession scalar_chat(const std::shared_ptr<const Model>& model) {
    auto session = test::scalar_f32_session(model);
    ChatSession chat(model, std::move(session));
    chat.set_template_clock(kChatFixtureTime);
    return chat;
}

ReplyOptions greedy_reply(bool ignore_end_of_turn = false, int32_t max_tokens = kMaxReplyTokens) {
    ReplyOptions options;
    options.sampling.temperature = 0.0f;
    options.max_tokens = max_tokens;
    options.ignore_end_of_turn = ignore_end_of_turn;
    return options;
}

// Every special token of the family is one id in the prompt, as often as the rendering writes it.
void expect_special_tokens_parsed(const json& expected, const PreparedTurn& turn, const std::string& label) {
    for (const auto& [piece, token] : expected.at("special_tokens").items()) {
        const auto id = token.at("id").get<int32_t>();
        const size_t in_text = occurrences(turn.text, piece);
        const auto in_ids = size_t(std::count(turn.ids.begin(), turn.ids.end(), id));
        // BOS that the vocabulary adds (add_bos_token) when the template does not write it first.
        const bool added = id == expected.at("bos_id").get<int32_t>() && !turn.ids.empty() && turn.ids.front() == id &&
                           turn.text.rfind(piece, 0) != 0;
        EXPECT_EQ(in_ids, in_text + (added ? 1 : 0)) << label << ": '" << piece << "' (id " << id << ") is written " << in_text
                                           << " times, the prompt holds its id " << in_ids << " times";
    }
}

class FamilyChat : public ::testing::TestWithParam<const char*> {};

TEST_P(FamilyChat, ModelTemplateAndEndOfTurnTokens) {
    const std::string name = GetParam();
    REQUIRE_CHAT_FIXTURE(name);
    const json expected = load_expected(name);
    const std::string family = expected.at("family");
    auto model = convert_and_load(name);
    ASSERT_NE(model, nullptr);

    const std::string original = shared_template(expected);
    if (!original.empty()) {
        EXPECT_EQ(model->chat_template(), original) << family << ": the template changed on the way";
    }
    EXPECT_FALSE(model->chat_template().empty());

    const Tokenizer& tokenizer = model->tokenizer();
    EXPECT_EQ(tokenizer.bos_id(), expected.at("bos_id").get<int32_t>()) << family;
    EXPECT_EQ(tokenizer.eos_id(), expected.at("eos_id").get<int32_t>()) << family;
    for (const auto& [piece, token] : expected.at("special_tokens").items()) {
        const auto id = token.at("id").get<int32_t>();
        EXPECT_EQ(tokenizer.piece(id), piece) << family;
        // The type the engine gives it: the GGUF's, except gpt-oss's channel framing (user-defined text).
        const auto type = token.value("engine_type", token.at("type").get<int32_t>());
        EXPECT_EQ(tokenizer.is_control(id), type == kTokenControl) << family << ": " << piece;
        // Special text in a rendered prompt is one id (what the template writes is parsed).
        EXPECT_EQ(tokenizer.encode(piece, /*add_special=*/false, /*parse_special=*/true), std::vector<int32_t>{id})
            << family << ": " << piece;
    }

    ChatSession chat = scalar_chat(model);
    EXPECT_TRUE(chat.has_model_template()) << family << ": " << chat.template_note();
    EXPECT_EQ(chat.template_note(), "");
    EXPECT_EQ(chat.template_choice().kind, TemplateChoice::Kind::Model);

    // What a reply stops on: the end-of-turn tokens, and EOS (generate() ends there too).
    std::vector<int32_t> stops = chat.end_of_turn_tokens();
    stops.push_back(tokenizer.eos_id());
    std::string listed;
    for (int32_t id : chat.end_of_turn_tokens()) listed += " " + tokenizer.piece(id);
    std::printf("[%s] end-of-turn tokens:%s; EOS %s\n", family.c_str(), listed.c_str(),
                tokenizer.piece(tokenizer.eos_id()).c_str());
    for (const auto& id : expected.at("end_of_turn_ids"))
        EXPECT_TRUE(contains(stops, id.get<int32_t>()))
            << family << ": a reply does not stop on " << tokenizer.piece(id.get<int32_t>()) << " (id " << id << ")";
    const auto eot = expected.at("eot_id").get<int32_t>();
    if (expected.at("stop_reason") == "stop_token") {
        EXPECT_TRUE(contains(chat.end_of_turn_tokens(), eot)) << family << ": " << tokenizer.piece(eot);
    } else {
        EXPECT_EQ(eot, tokenizer.eos_id()) << family << ": the end-of-turn token is EOS";
    }
    // A user-defined token (Qwen3 / SmolLM3's <think>) is text the model writes inside a turn.
    for (const auto& [piece, token] : expected.at("special_tokens").items())
        if (token.value("engine_type", token.at("type").get<int32_t>()) == kTokenUserDefined) {
            EXPECT_FALSE(contains(stops, token.at("id").get<int32_t>())) << family << ": a reply would stop on " << piece;
        }
}

TEST_P(FamilyChat, TwoTurnsEndOnTheEndOfTurnToken) {
    const std::string name = GetParam();
    REQUIRE_CHAT_FIXTURE(name);
    const json expected = load_expected(name);
    const std::string family = expected.at("family");
    auto model = convert_and_load(name);
    ASSERT_NE(model, nullptr);
    const auto eot = expected.at("eot_id").get<int32_t>();
    const StopReason want_stop =
        expected.at("stop_reason") == "stop_token" ? StopReason::StopToken : StopReason::EndOfGeneration;
    const json& turns = expected.at("turns");
    ASSERT_EQ(turns.size(), 2u);

    ChatSession chat = scalar_chat(model);
    std::vector<int32_t> cache;  // what the KV cache holds after each reply: prompt + reply tokens
    std::vector<ChatMessage> conversation;
    for (size_t t = 0; t < turns.size(); ++t) {
        const json& want = turns[t];
        const std::string label = family + " turn " + std::to_string(t + 1);
        // The conversation so far as the CLI keeps it: the replies as streamed.
        std::vector<ChatMessage> messages = messages_of(want);
        if (t > 0) {
            ASSERT_EQ(messages.size(), conversation.size() + 1) << label;
            for (size_t m = 0; m < conversation.size(); ++m) {
                EXPECT_EQ(messages[m].role, conversation[m].role) << label;
                EXPECT_EQ(messages[m].content, conversation[m].content) << label << ": message " << m;
            }
        }
        auto prepared = chat.prepare(messages);
        ASSERT_TRUE(prepared.ok()) << label << ": " << prepared.error();
        EXPECT_EQ(prepared->source, PromptSource::ModelTemplate) << label << ": " << prepared->note;
        EXPECT_EQ(prepared->text, want.at("prompt_text").get<std::string>()) << label << ": not jinja2's rendering";
        expect_special_tokens_parsed(expected, *prepared, label);
        const std::vector<int32_t> prompt_ids = ids_of(want.at("prompt_ids"));
        EXPECT_EQ(prepared->ids, prompt_ids) << label << ": not the Python tokenisation";
        ASSERT_TRUE(prepared->fits());
        const size_t reusable = std::min(common_prefix(cache, prepared->ids), prepared->ids.size() - 1);
        EXPECT_EQ(prepared->reused_tokens, reusable) << label;
        if (t > 0) {
            EXPECT_GT(prepared->reused_tokens, 0u) << label << ": the second turn starts over";
            EXPECT_GE(prepared->reused_tokens, ids_of(turns[t - 1].at("prompt_ids")).size())
                << label << ": the first turn's prompt is not reused whole";
        }

        ChatTurnOutcome outcome;
        const Status status = chat.reply(*prepared, greedy_reply(), nullptr, nullptr, outcome);
        ASSERT_TRUE(status.ok()) << label << ": " << status.error();
        const std::vector<int32_t> reply_ids = ids_of(want.at("reply_ids"));
        EXPECT_EQ(outcome.tokens, reply_ids) << label << ": not the float64 reference's greedy reply";
        EXPECT_EQ(outcome.text, want.at("reply_text").get<std::string>()) << label;
        EXPECT_EQ(outcome.stats.stop_reason, want_stop)
            << label << ": stopped with " << stop_reason_name(outcome.stats.stop_reason) << " after "
            << outcome.tokens.size() << " tokens";
        EXPECT_EQ(outcome.stats.prompt_tokens, prepared->ids.size() - prepared->reused_tokens)
            << label << ": the planned reuse did not happen";
        EXPECT_EQ(outcome.context_used, prepared->ids.size() + reply_ids.size()) << label;
        EXPECT_EQ(chat.cached_tokens().size(), outcome.context_used) << label;
        std::printf("[%s] %zu prompt tokens (%zu reused), reply of %zu tokens '%s', then %s\n", label.c_str(),
                    prepared->ids.size(), prepared->reused_tokens, outcome.tokens.size(), outcome.text.c_str(),
                    std::string(stop_reason_name(outcome.stats.stop_reason)).c_str());

        // The token it stopped on is the end-of-turn token: past it, the same prompt goes on with it.
        ChatSession past = scalar_chat(model);
        auto again = past.prepare(messages);
        ASSERT_TRUE(again.ok());
        ChatTurnOutcome through;
        ASSERT_TRUE(past.reply(*again, greedy_reply(true, int32_t(reply_ids.size()) + 1), nullptr, nullptr, through).ok());
        std::vector<int32_t> want_through = reply_ids;
        want_through.push_back(eot);
        EXPECT_EQ(through.tokens, want_through) << label << ": the token after the reply is not the end-of-turn token";

        cache = prepared->ids;
        cache.insert(cache.end(), outcome.tokens.begin(), outcome.tokens.end());
        conversation = messages;
        conversation.push_back({"assistant", outcome.text, ""});
    }
}

#ifdef CFLOW_CLI_PATH
// `cflow convert` then `cflow chat` from a pipe (the system prompt by --system, one user message a
// line), greedy on the scalar path with an f32 KV cache: each reply is the reference's and ends where
// the end-of-turn token comes (the next turn's prompt follows at once, -n allows 32 tokens).
TEST_P(FamilyChat, CliChatRepliesEndOnTheEndOfTurnToken) {
    const std::string name = GetParam();
    REQUIRE_CHAT_FIXTURE(name);
    const json expected = load_expected(name);
    const std::string family = expected.at("family");
    const json& turns = expected.at("turns");
    const fs::path dir = test::temp_dir("family-chat-cli-" + name);
    const std::string cli = std::string("'") + CFLOW_CLI_PATH + "'";
    const fs::path gguf = test::ggml_fixtures_dir() / ("chat_" + name) / "model.gguf", model = dir / "model.cflow";
    ASSERT_EQ(std::system((cli + " convert '" + gguf.string() + "' -o '" + model.string() +
                           "' --quant f32 --embedding-quant f32 --quiet >/dev/null 2>&1").c_str()), 0);
    std::string input;
    for (const auto& user : expected.at("users")) input += user.get<std::string>() + "\n";
    std::ofstream(dir / "in.txt", std::ios::binary) << input;
    const std::string system = expected.at("system");
    ASSERT_EQ(system.find('\''), std::string::npos);
    EXPECT_EQ(expected.at("template_time").get<std::string>(), kChatFixtureTimeText);
    const std::string command = "CFLOW_ISA=scalar " + cli + " chat '" + model.string() + "' --system '" + system +
                                "' -n " + std::to_string(kMaxReplyTokens) +
                                " --temp 0 --seed 1 --threads 2 --kv-cache f32 --show-prompt --template-time '" +
                                kChatFixtureTimeText + "' < '" +
                                (dir / "in.txt").string() + "' > '" + (dir / "out.txt").string() + "' 2> '" +
                                (dir / "err.txt").string() + "'";
    const int rc = std::system(command.c_str());
    const std::string out = read_text(dir / "out.txt"), err = read_text(dir / "err.txt");
    ASSERT_EQ(rc, 0) << err;

    std::string want_out;
    for (const auto& turn : turns) want_out += turn.at("reply_text").get<std::string>() + "\n";
    EXPECT_EQ(out, want_out) << family << ": cflow chat's replies";
    for (const auto& turn : turns)
        EXPECT_NE(err.find(turn.at("prompt_text").get<std::string>()), std::string::npos)
            << family << ": --show-prompt does not show jinja2's rendering\n" << err;
    static const std::regex line(R"(end of prompt; (\d+) tokens, (\d+) reused from the KV cache, (\d+) to prefill)");
    std::vector<std::array<size_t, 2>> seen;
    for (auto it = std::sregex_iterator(err.begin(), err.end(), line); it != std::sregex_iterator(); ++it)
        seen.push_back({std::stoul((*it)[1]), std::stoul((*it)[2])});
    ASSERT_EQ(seen.size(), turns.size()) << err;
    for (size_t t = 0; t < turns.size(); ++t)
        EXPECT_EQ(seen[t][0], turns[t].at("prompt_ids").size()) << family << " turn " << t + 1;
    EXPECT_EQ(seen[0][1], 0u);
    EXPECT_GE(seen[1][1], turns[0].at("prompt_ids").size()) << family << ": the second turn does not reuse the first prompt";
}
#endif

INSTANTIATE_TEST_SUITE_P(Families, FamilyChat, ::testing::ValuesIn(kFamilies),
                         [](const ::testing::TestParamInfo<const char*>& param) { return std::string(param.param); });

} // namespace
} // namespace cflow
