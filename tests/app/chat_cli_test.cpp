// `cflow chat` driven through a pipe: multi-turn replies equal a fresh greedy generation over
// the whole rendered conversation (so the KV-cache reuse between turns changes nothing but
// speed), /reset and /system forget the conversation, replies stop at the template's
// end-of-turn token, EOF exits 0, and a model without a template uses the visible fallback.
#include <algorithm>
#include <fstream>
#include <regex>

#include "cflow/engine/chat/chat_template.h"
#include "cflow/engine/generation/generate.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/formats/converter.h"
#include "cli_runner.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

constexpr const char* kChatMl =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
constexpr uint32_t kVocab = 320;
constexpr int32_t kImStart = kVocab - 2, kImEnd = kVocab - 1;  // the last two ids become ChatML's control tokens

// The synthetic model with <|im_start|> / <|im_end|> as control tokens and the ChatML template
// (or no template at all).
std::string chat_model(const std::filesystem::path& dir, bool with_template) {
    SyntheticSpec spec;
    spec.vocab = kVocab;
    spec.seed = 7;
    spec.weight_std = 0.2f;  // peaked logits: greedy replies do not hinge on float rounding
    SourceModel source = make_synthetic_model(spec);
    auto tokens = *source.metadata.get_strings("tokenizer.ggml.tokens");
    auto types = *source.metadata.get_ints("tokenizer.ggml.token_type");
    tokens[kImStart] = "<|im_start|>";
    tokens[kImEnd] = "<|im_end|>";
    types[kImStart] = types[kImEnd] = 3;  // control
    source.metadata.set("tokenizer.ggml.tokens", std::move(tokens));
    source.metadata.set("tokenizer.ggml.token_type", std::move(types));
    if (with_template) source.metadata.set("tokenizer.chat_template", std::string(kChatMl));
    else source.metadata.erase("tokenizer.chat_template");
    const std::string out = (dir / (with_template ? "chatml.cflow" : "plain.cflow")).string();
    ConvertOptions options;
    options.weight_quant = DType::F32;
    auto converted = convert_to_cflow(source, out, options);
    EXPECT_TRUE(converted.ok()) << (converted.ok() ? "" : converted.error());
    return out;
}

struct GreedyTurn {
    std::string reply;                 // as the CLI prints it
    std::vector<int32_t> prompt_ids;   // the rendered conversation, BOS first
    std::vector<int32_t> reply_ids;    // the generated ids (end-of-turn token excluded)
};

// What a fresh session does for the whole conversation, greedily.
GreedyTurn fresh_greedy_turn(const std::string& model_path, const std::vector<ChatMessage>& messages, int32_t max_tokens) {
    GreedyTurn turn;
    auto model = Model::load(model_path);
    EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error());
    if (!model) return turn;
    auto tmpl = ChatTemplate::compile(kChatMl);
    EXPECT_TRUE(tmpl.ok());
    if (!tmpl) return turn;
    auto prompt = tmpl->render(messages, TemplateOptions{});
    EXPECT_TRUE(prompt.ok()) << (prompt.ok() ? "" : prompt.error());
    if (!prompt) return turn;
    SessionOptions options;
    options.threads = 1;
    options.kv_cache = KvCacheType::F16;  // as `cflow chat` decodes unless --kv-cache f32
    auto session = Session::create(model.value(), options);
    EXPECT_TRUE(session.ok());
    if (!session) return turn;
    GenerateRequest request;
    // The vocabulary adds BOS; the ChatML rendering does not write it.
    request.prompt = (*model)->tokenizer().encode(*prompt, /*add_special=*/true, /*parse_special=*/true);
    EXPECT_EQ(request.prompt.front(), (*model)->tokenizer().bos_id());
    turn.prompt_ids = request.prompt;
    request.sampling.temperature = 0;
    request.max_tokens = max_tokens;
    request.stop_tokens = {kImStart, kImEnd};
    auto stats = generate(**session, request, [&](int32_t id, std::string_view text) {
        if (id >= 0) turn.reply_ids.push_back(id);
        turn.reply.append(text);
        return true;
    });
    EXPECT_TRUE(stats.ok());
    return turn;
}

std::string fresh_greedy_reply(const std::string& model_path, const std::vector<ChatMessage>& messages, int32_t max_tokens) {
    return fresh_greedy_turn(model_path, messages, max_tokens).reply;
}

// "[cflow] end of prompt; T tokens, R reused from the KV cache, F to prefill" lines, per turn.
struct TurnLine {
    size_t tokens, reused, prefilled;
};
std::vector<TurnLine> turn_lines(const std::string& err) {
    static const std::regex line(R"(end of prompt; (\d+) tokens, (\d+) reused from the KV cache, (\d+) to prefill)");
    std::vector<TurnLine> turns;
    for (auto it = std::sregex_iterator(err.begin(), err.end(), line); it != std::sregex_iterator(); ++it)
        turns.push_back({std::stoul((*it)[1]), std::stoul((*it)[2]), std::stoul((*it)[3])});
    return turns;
}

const std::vector<std::string> kGreedy = {"--temp", "0", "--threads", "1", "--seed", "1"};

std::vector<std::string> chat_args(const std::string& model, int n, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"chat", model, "-n", std::to_string(n)};
    args.insert(args.end(), kGreedy.begin(), kGreedy.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
}

TEST(ChatCli, ResetStartsEachTurnFresh) {
    const std::string model = chat_model(temp_dir("chat-reset"), true);
    auto r = run_cflow_with_input(chat_args(model, 12, {"--show-prompt"}), "hello\n/reset\nhi again\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string first = fresh_greedy_reply(model, {{"user", "hello", ""}}, 12);
    const std::string second = fresh_greedy_reply(model, {{"user", "hi again", ""}}, 12);
    EXPECT_FALSE(first.empty() && second.empty());
    EXPECT_EQ(r.out, first + "\n" + second + "\n");
    EXPECT_NE(r.err.find("conversation reset"), std::string::npos) << r.err;
    const auto turns = turn_lines(r.err);
    ASSERT_EQ(turns.size(), 2u) << r.err;
    EXPECT_EQ(turns[1].reused, 0u);  // nothing survives /reset
    EXPECT_EQ(turns[1].prefilled, turns[1].tokens);
    EXPECT_NE(r.err.find("<|im_start|>user\nhi again<|im_end|>\n<|im_start|>assistant\n"), std::string::npos) << r.err;
}

TEST(ChatCli, SecondTurnContinuesTheConversation) {
    const std::string model = chat_model(temp_dir("chat-multi"), true);
    auto r = run_cflow_with_input(chat_args(model, 10, {"--show-prompt"}), "hello\nhi again\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string first = fresh_greedy_reply(model, {{"user", "hello", ""}}, 10);
    const std::string second =
        fresh_greedy_reply(model, {{"user", "hello", ""}, {"assistant", first, ""}, {"user", "hi again", ""}}, 10);
    EXPECT_EQ(r.out, first + "\n" + second + "\n");
    // The whole conversation is rendered for turn 2.
    const std::string convo = "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n" + first +
                              "<|im_end|>\n<|im_start|>user\nhi again<|im_end|>\n<|im_start|>assistant\n";
    EXPECT_NE(r.err.find(convo), std::string::npos) << r.err;
}

TEST(ChatCli, RepliesThatReencodeIdenticallyKeepTheirCache) {
    // One-token replies: whenever turn N's prompt ids extend turn N-1's prompt + reply ids, the
    // CLI must prefill only the difference, and the replies must still equal fresh generations.
    const std::string model = chat_model(temp_dir("chat-reuse-reply"), true);
    auto r = run_cflow_with_input(chat_args(model, 1, {"--show-prompt"}), "hello\nhi again\nand more\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto turns = turn_lines(r.err);
    ASSERT_EQ(turns.size(), 3u) << r.err;
    std::vector<ChatMessage> messages;
    std::string expected_out;
    std::vector<int32_t> cached;  // what the KV cache holds after the previous turn
    size_t reusing_turns = 0;
    for (size_t i = 0; i < 3; ++i) {
        messages.push_back({"user", std::vector<std::string>{"hello", "hi again", "and more"}[i], ""});
        const GreedyTurn turn = fresh_greedy_turn(model, messages, 1);
        expected_out += turn.reply + "\n";
        // The chat core keeps the longest common token prefix (at least one prompt token is fed).
        const size_t limit = std::min(cached.size(), turn.prompt_ids.size() - 1);
        const size_t common = size_t(std::mismatch(cached.begin(), cached.begin() + std::ptrdiff_t(limit),
                                                   turn.prompt_ids.begin()).first - cached.begin());
        const bool extends = common == cached.size() && !cached.empty();
        EXPECT_EQ(turns[i].tokens, turn.prompt_ids.size()) << "turn " << i + 1;
        EXPECT_EQ(turns[i].reused, common) << "turn " << i + 1;
        reusing_turns += extends;
        cached = turn.prompt_ids;
        cached.insert(cached.end(), turn.reply_ids.begin(), turn.reply_ids.end());
        messages.push_back({"assistant", turn.reply, ""});
    }
    EXPECT_EQ(r.out, expected_out);
    EXPECT_EQ(reusing_turns, 2u);  // this model's one-token replies re-encode to themselves
}

TEST(ChatCli, EmptyRepliesReuseTheCachedPrefix) {
    // With -n 0 the reply is empty, so turn 2's prompt extends turn 1's token for token.
    const std::string model = chat_model(temp_dir("chat-reuse"), true);
    auto r = run_cflow_with_input(chat_args(model, 0, {"--show-prompt", "--system", "be brief"}), "hello\nhi again\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "\n\n");
    const auto turns = turn_lines(r.err);
    ASSERT_EQ(turns.size(), 2u) << r.err;
    EXPECT_EQ(turns[0].reused, 0u);
    EXPECT_EQ(turns[1].reused, turns[0].tokens);
    EXPECT_EQ(turns[1].prefilled, turns[1].tokens - turns[0].tokens);
    EXPECT_GT(turns[1].prefilled, 0u);
    EXPECT_NE(r.err.find("<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhello"), std::string::npos) << r.err;
}

TEST(ChatCli, SystemCommandResetsAndQuitStops) {
    const std::string model = chat_model(temp_dir("chat-system"), true);
    auto r = run_cflow_with_input(chat_args(model, 6, {"--show-prompt"}), "hello\n/system talk like a cat\nmeow\n/quit\nnever sent\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string second = fresh_greedy_reply(model, {{"system", "talk like a cat", ""}, {"user", "meow", ""}}, 6);
    const std::string first = fresh_greedy_reply(model, {{"user", "hello", ""}}, 6);
    EXPECT_EQ(r.out, first + "\n" + second + "\n");
    EXPECT_EQ(r.err.find("never sent"), std::string::npos);
    const auto turns = turn_lines(r.err);
    ASSERT_EQ(turns.size(), 2u);
    EXPECT_EQ(turns[1].reused, 0u);
}

TEST(ChatCli, ModelWithoutTemplateUsesTheFallback) {
    const std::string model = chat_model(temp_dir("chat-plain"), false);
    auto r = run_cflow_with_input(chat_args(model, 4, {"--show-prompt"}), "hello\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("model has no chat template; using the plain 'role: content' fallback"), std::string::npos);
    EXPECT_NE(r.err.find("user: hello\nassistant: "), std::string::npos) << r.err;
    EXPECT_FALSE(r.out.empty());
}

TEST(ChatCli, TemplateAndContextPolicyOptionsDriveTheChatCore) {
    const auto dir = temp_dir("chat-template-policy");
    const std::string plain = chat_model(dir, false);
    auto chatml = run_cflow_with_input(chat_args(plain, 2, {"--show-prompt", "--template", "chatml"}), "hello\n");
    ASSERT_EQ(chatml.exit_code, 0) << chatml.err;
    EXPECT_NE(chatml.err.find("<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n"), std::string::npos) << chatml.err;
    EXPECT_EQ(chatml.err.find("fallback"), std::string::npos) << "a chosen template is not the fallback";
    {
        std::ofstream(dir / "mine.jinja") << "{% for m in messages %}[{{ m['content'] }}]{% endfor %}";
    }
    auto custom = run_cflow_with_input(chat_args(plain, 2, {"--show-prompt", "--template", (dir / "mine.jinja").string()}), "hi\n");
    ASSERT_EQ(custom.exit_code, 0) << custom.err;
    EXPECT_NE(custom.err.find("[hi]"), std::string::npos) << custom.err;
    auto unknown = run_cflow_with_input(chat_args(plain, 2, {"--template", "nosuch"}), "hi\n");
    EXPECT_NE(unknown.exit_code, 0);
    EXPECT_NE(unknown.err.find("--template nosuch: neither a built-in template (model, chatml"), std::string::npos) << unknown.err;
    // --thinking passes enable_thinking to a template that reads it (Qwen3's empty think block when off).
    {
        std::ofstream(dir / "qwen3.jinja") << "{% for m in messages %}[{{ m['content'] }}]{% endfor %}"
                                              "{% if enable_thinking is defined and enable_thinking is false %}<think></think>{% endif %}";
    }
    auto quiet = run_cflow_with_input(
        chat_args(plain, 2, {"--show-prompt", "--template", (dir / "qwen3.jinja").string(), "--thinking", "off"}), "hi\n");
    ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
    EXPECT_NE(quiet.err.find("[hi]<think></think>"), std::string::npos) << quiet.err;
    auto thinks = run_cflow_with_input(
        chat_args(plain, 2, {"--show-prompt", "--template", (dir / "qwen3.jinja").string(), "--thinking", "on"}), "hi\n");
    ASSERT_EQ(thinks.exit_code, 0) << thinks.err;
    EXPECT_EQ(thinks.err.find("<think></think>"), std::string::npos) << thinks.err;
    auto no_switch = run_cflow_with_input(chat_args(plain, 2, {"--template", "chatml", "--thinking", "off"}), "hi\n");
    ASSERT_EQ(no_switch.exit_code, 0) << no_switch.err;
    EXPECT_NE(no_switch.err.find("--thinking: the chat template does not read enable_thinking"), std::string::npos) << no_switch.err;
    auto bad_thinking = run_cflow_with_input(chat_args(plain, 2, {"--thinking", "maybe"}), "hi\n");
    EXPECT_NE(bad_thinking.exit_code, 0);
    EXPECT_NE(bad_thinking.err.find("--thinking 'maybe': expected on or off"), std::string::npos) << bad_thinking.err;
    auto policy = run_cflow_with_input(chat_args(plain, 2, {"--context-policy", "oldest"}), "hi\n");
    EXPECT_NE(policy.exit_code, 0);
    EXPECT_NE(policy.err.find("--context-policy 'oldest'"), std::string::npos) << policy.err;

    // A 96-token context: with stop the later turns are refused, with drop-oldest they go on.
    std::string turns;
    for (int i = 0; i < 6; ++i) turns += "the cat and the dog went to the park number " + std::to_string(i) + "\n";
    auto stop = run_cflow_with_input(chat_args(plain, 4, {"--ctx", "96"}), turns);
    ASSERT_EQ(stop.exit_code, 0) << stop.err;
    EXPECT_NE(stop.err.find("no longer fits"), std::string::npos) << stop.err;
    auto dropped = run_cflow_with_input(chat_args(plain, 4, {"--ctx", "96", "--context-policy", "drop-oldest"}), turns);
    ASSERT_EQ(dropped.exit_code, 0) << dropped.err;
    EXPECT_EQ(dropped.err.find("no longer fits the context of"), std::string::npos) << dropped.err;
    EXPECT_NE(dropped.err.find("oldest messages no longer fit the context: left out"), std::string::npos) << dropped.err;
}

TEST(ChatCli, BadInputsFailWithOneLine) {
    auto missing = run_cflow_with_input({"chat", "/nonexistent/model.cflow"}, "hello\n");
    EXPECT_NE(missing.exit_code, 0);
    EXPECT_NE(missing.err.find("/nonexistent/model.cflow"), std::string::npos);
    EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1);
    auto bad_temp = run_cflow_with_input({"chat", "/nonexistent/model.cflow", "--temp", "hot"}, "");
    EXPECT_NE(bad_temp.exit_code, 0);
    EXPECT_NE(bad_temp.err.find("--temp"), std::string::npos) << bad_temp.err;
}

} // namespace
} // namespace cflow::test
