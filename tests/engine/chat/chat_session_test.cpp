// The chat core's rules, each tested once here (the front ends only drive it): end-of-turn
// tokens from the template (literal or built from pieces), the BOS rule, KV-cache reuse by
// token prefix, the fallback with its reason, context-full and cancellation by error kind.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "cflow/engine/chat/builtin_templates.h"
#include "cflow/engine/chat/chat_session.h"
#include "cflow/engine/tokenizer/tokenizer.h"
#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow {
namespace {

constexpr uint32_t kVocab = 320;
// The last ids become these control tokens.
const std::vector<std::string> kControls = {"<|im_start|>", "<|im_end|>", "<|user|>", "<|assistant|>", "<|end|>"};
int32_t id_of(const std::string& token, const std::vector<std::string>& controls = kControls) {
    const auto it = std::find(controls.begin(), controls.end(), token);
    return static_cast<int32_t>(kVocab - controls.size() + size_t(it - controls.begin()));
}

const char* kChatMl =
    "{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
// Phi-3 builds '<|user|>' from pieces: only the probe rendering can find it.
const char* kPhi3 =
    "{% for m in messages %}{{ '<|' + m['role'] + '|>\\n' + m['content'] + '<|end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}";
const char* kWritesBos = "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}";

std::shared_ptr<const Model> model_with(const std::string& name, const std::string& chat_template, uint32_t max_seq = 256,
                                        const std::vector<std::string>& controls = kControls) {
    test::SyntheticSpec spec;
    spec.vocab = kVocab;
    spec.seed = 5;
    spec.max_seq_len = max_seq;
    SourceModel source = test::make_synthetic_model(spec);
    auto tokens = *source.metadata.get_strings("tokenizer.ggml.tokens");
    auto types = *source.metadata.get_ints("tokenizer.ggml.token_type");
    for (const auto& token : controls) {
        tokens[size_t(id_of(token, controls))] = token;
        types[size_t(id_of(token, controls))] = 3;
    }
    source.metadata.set("tokenizer.ggml.tokens", std::move(tokens));
    source.metadata.set("tokenizer.ggml.token_type", std::move(types));
    if (chat_template.empty()) source.metadata.erase("tokenizer.chat_template");
    else source.metadata.set("tokenizer.chat_template", chat_template);
    const auto path = test::temp_dir("chat_session_" + name) / "model.cflow";
    ConvertOptions options;
    options.weight_quant = DType::F32;
    EXPECT_TRUE(convert_to_cflow(source, path.string(), options).ok());
    auto model = Model::load(path.string());
    EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error());
    return model.ok() ? model.value() : nullptr;
}

ChatSession chat_for(std::shared_ptr<const Model> model, uint32_t context = 0) {
    SessionOptions options;
    options.threads = 1;
    options.context_length = context;
    auto session = Session::create(model, options);
    EXPECT_TRUE(session.ok());
    return ChatSession(model, std::move(session).value());
}

ReplyOptions greedy(int32_t max_tokens) {
    ReplyOptions options;
    options.sampling.temperature = 0;
    options.max_tokens = max_tokens;
    options.ignore_end_of_turn = true;
    return options;
}

TEST(ChatSession, EndOfTurnTokensComeFromTheTemplateLiteralOrBuilt) {
    auto chatml = model_with("eot_chatml", kChatMl);
    ASSERT_TRUE(chatml);
    // <|end|> (and <|im_end|> below) end generation whenever the vocabulary has them, as llama.cpp stops on them.
    EXPECT_EQ(chat_for(chatml).end_of_turn_tokens(),
              (std::vector<int32_t>{id_of("<|im_start|>"), id_of("<|im_end|>"), id_of("<|end|>")}));
    auto phi3 = model_with("eot_phi3", kPhi3);
    ASSERT_TRUE(phi3);
    EXPECT_EQ(chat_for(phi3).end_of_turn_tokens(),
              (std::vector<int32_t>{id_of("<|im_end|>"), id_of("<|user|>"), id_of("<|assistant|>"), id_of("<|end|>")}))
        << "'<|user|>' is only in the rendering, never literally in the source";
    // Llama 3.1's built-in tool call opens with <|python_tag|> and ends with <|eom_id|>: the reply
    // goes on after the tag; the base model's <|end_of_text|> ends it though the template never writes it.
    const std::vector<std::string> llama31 = {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>",
                                              "<|python_tag|>", "<|end_of_text|>"};
    auto tools = model_with("eot_python_tag",
                            "{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>{{ m['content'] }}<|eot_id|>"
                            "{% endfor %}{% if tools %}<|python_tag|>call<|eom_id|>{% endif %}",
                            256, llama31);
    ASSERT_TRUE(tools);
    EXPECT_EQ(chat_for(tools).end_of_turn_tokens(),
              (std::vector<int32_t>{id_of("<|start_header_id|>", llama31), id_of("<|end_header_id|>", llama31),
                                    id_of("<|eot_id|>", llama31), id_of("<|eom_id|>", llama31), id_of("<|end_of_text|>", llama31)}));
    auto plain = model_with("eot_plain", "");
    ASSERT_TRUE(plain);
    EXPECT_TRUE(chat_for(plain).end_of_turn_tokens().empty());
}

// gpt-oss's harmony format, with its real template: the reply frames its analysis and final
// messages with <|channel|> / <|message|> / <|start|>, which print and never end the turn; the turn
// ends at <|return|> or <|call|>, not at the <|end|> that closes the analysis (llama.cpp's rule).
// An earlier harmony reply goes back to the template as content (final) and thinking (analysis):
// the template refuses channel tags in content.
TEST(ChatSession, HarmonyRepliesRunPastTheirFramingAndComeBackSplit) {
    CFLOW_REQUIRE_ASSET(template_path, "assets/chat-templates/llama.cpp-models-templates/openai-gpt-oss-120b.jinja");
    std::ifstream in(template_path, std::ios::binary);
    const std::string harmony_template((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::vector<std::string> harmony = {"<|start|>", "<|end|>", "<|message|>", "<|channel|>",
                                              "<|return|>", "<|call|>", "<|constrain|>"};
    auto model = model_with("harmony", harmony_template, 2048, harmony);
    ASSERT_TRUE(model);
    ChatSession chat = chat_for(model);
    EXPECT_EQ(chat.end_of_turn_tokens(), (std::vector<int32_t>{id_of("<|return|>", harmony), id_of("<|call|>", harmony)}));
    const Tokenizer& tokenizer = model->tokenizer();
    EXPECT_FALSE(tokenizer.is_control(id_of("<|channel|>", harmony)));
    EXPECT_TRUE(tokenizer.is_control(id_of("<|end|>", harmony)));
    StreamingDecoder decoder(tokenizer);
    std::string streamed;
    for (const char* token : {"<|channel|>", "<|message|>", "<|end|>", "<|start|>"})
        streamed += decoder.push(id_of(token, harmony));
    EXPECT_EQ(streamed, "<|channel|><|message|><|start|>") << "framing prints, <|end|> does not";

    const std::vector<ChatMessage> messages = {
        {"user", "What is 2+2?", ""},
        {"assistant", "<|channel|>analysis<|message|>Simple sum.<|start|>assistant<|channel|>final<|message|>It is 4.", ""},
        {"user", "And 3+3?", ""}};
    auto turn = chat.prepare(messages);
    ASSERT_TRUE(turn.ok()) << turn.error();
    EXPECT_EQ(turn->source, PromptSource::ModelTemplate) << turn->note;
    EXPECT_NE(turn->text.find("<|start|>assistant<|channel|>final<|message|>It is 4.<|end|>"), std::string::npos) << turn->text;
    EXPECT_EQ(turn->text.find("<|channel|>final<|message|>It is 4.<|start|>"), std::string::npos) << turn->text;
}

// Qwen3's switch as its template reads it: enable_thinking false writes an empty think block
// into the generation prompt; unset, the template's default (thinking) holds.
TEST(ChatSession, TheThinkingSwitchReachesTheTemplate) {
    const std::string qwen3_like = std::string(kChatMl) +
                                   "{% if add_generation_prompt and enable_thinking is defined and enable_thinking is false %}"
                                   "<think>\n\n</think>\n\n{% endif %}";
    auto model = model_with("thinking", qwen3_like);
    auto plain = model_with("thinking_plain", kChatMl);
    ASSERT_TRUE(model && plain);
    ChatSession chat = chat_for(model);
    EXPECT_TRUE(chat.template_reads_thinking());
    EXPECT_FALSE(chat_for(plain).template_reads_thinking());
    const std::vector<ChatMessage> messages = {{"user", "hello", ""}};
    auto thinking = chat.prepare(messages);
    ASSERT_TRUE(thinking.ok());
    EXPECT_EQ(thinking->text.find("</think>"), std::string::npos) << thinking->text;
    chat.set_thinking(false);
    EXPECT_EQ(chat.thinking(), std::optional<bool>(false));
    auto quiet = chat.prepare(messages);
    ASSERT_TRUE(quiet.ok());
    EXPECT_NE(quiet->text.find("<|im_start|>assistant\n<think>\n\n</think>\n\n"), std::string::npos) << quiet->text;
    chat.set_thinking(true);
    EXPECT_EQ(chat.prepare(messages)->text, thinking->text);
    chat.set_thinking(std::nullopt);
    EXPECT_EQ(chat.prepare(messages)->text, thinking->text);
}

TEST(ChatSession, BosIsPrependedOnceWhetherOrNotTheTemplateWritesIt) {
    auto chatml = model_with("bos_chatml", kChatMl);
    auto writes = model_with("bos_writes", kWritesBos);
    ASSERT_TRUE(chatml && writes);
    const int32_t bos = chatml->tokenizer().bos_id();
    auto a = chat_for(chatml).prepare({{"user", "hello", ""}});
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->ids.front(), bos);
    EXPECT_EQ(a->ids[1], id_of("<|im_start|>")) << "control tokens written by the template are parsed";
    auto b = chat_for(writes).prepare({{"user", "hello", ""}});
    ASSERT_TRUE(b.ok());
    ASSERT_GE(b->ids.size(), 2u);
    EXPECT_EQ(b->ids[0], bos);
    EXPECT_NE(b->ids[1], bos) << "a template that writes BOS must not get a second one";
}

TEST(ChatSession, SecondTurnReusesTheCacheAndMatchesAFreshSession) {
    auto model = model_with("reuse", kChatMl);
    ASSERT_TRUE(model);
    ChatSession chat = chat_for(model);
    std::vector<ChatMessage> messages = {{"user", "hello the cat", ""}};
    auto first = chat.prepare(messages);
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(first->reused_tokens, 0u);
    ChatTurnOutcome one;
    ASSERT_TRUE(chat.reply(*first, greedy(8), {}, nullptr, one).ok());
    messages.push_back({"assistant", one.text, ""});
    messages.push_back({"user", "and the dog", ""});
    auto second = chat.prepare(messages);
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(second->reused_tokens, first->ids.size() + one.tokens.size()) << "prompt and reply stay in the cache";
    ChatTurnOutcome two;
    ASSERT_TRUE(chat.reply(*second, greedy(8), {}, nullptr, two).ok());
    EXPECT_EQ(two.stats.prompt_tokens, second->ids.size() - second->reused_tokens) << "only the rest is fed";

    ChatSession fresh = chat_for(model);
    auto again = fresh.prepare(messages);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->ids, second->ids);
    ChatTurnOutcome reference;
    ASSERT_TRUE(fresh.reply(*again, greedy(8), {}, nullptr, reference).ok());
    EXPECT_EQ(two.tokens, reference.tokens) << "reusing the cache changes nothing but speed";
}

TEST(ChatSession, PiecesCarryTokenAndPosition) {
    auto model = model_with("pieces", kChatMl);
    ASSERT_TRUE(model);
    ChatSession chat = chat_for(model);
    auto turn = chat.prepare({{"user", "hello", ""}});
    ASSERT_TRUE(turn.ok());
    std::vector<ChatPiece> pieces;
    std::string streamed;
    ChatTurnOutcome outcome;
    ASSERT_TRUE(chat.reply(*turn, greedy(5), [&](const ChatPiece& p) {
        pieces.push_back({p.token, {}, p.position});
        streamed.append(p.text);
    }, nullptr, outcome).ok());
    ASSERT_GE(pieces.size(), 5u);
    for (size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(pieces[i].token, outcome.tokens[i]);
        EXPECT_EQ(pieces[i].position, turn->ids.size() + i) << "the position the token is fed at";
    }
    EXPECT_EQ(streamed, outcome.text);
}

// ReplyOptions::on_sampled (for the server's logprobs): one call per emitted token, before its
// piece, with the row the token was drawn from; the first row is the prompt's own logits.
TEST(ChatSession, EachEmittedTokenComesWithTheRowItWasSampledFrom) {
    auto model = model_with("sampled_rows", kChatMl);
    ASSERT_TRUE(model);
    ChatSession chat = chat_for(model);
    auto turn = chat.prepare({{"user", "hello", ""}});
    ASSERT_TRUE(turn.ok());
    std::vector<int32_t> sampled;
    std::vector<int32_t> row_argmax;
    std::vector<float> first_row;
    size_t pieces_before_sample = 0;
    size_t pieces = 0;
    ReplyOptions options = greedy(6);
    options.on_sampled = [&](int32_t token, std::span<const float> logits) {
        ASSERT_EQ(logits.size(), size_t(kVocab));
        if (sampled.empty()) first_row.assign(logits.begin(), logits.end());
        if (pieces != sampled.size()) ++pieces_before_sample;
        sampled.push_back(token);
        row_argmax.push_back(greedy_token(logits));
    };
    ChatTurnOutcome outcome;
    ASSERT_TRUE(chat.reply(*turn, options, [&](const ChatPiece& p) { pieces += p.token >= 0 ? 1 : 0; }, nullptr, outcome).ok());
    EXPECT_EQ(sampled, outcome.tokens);
    EXPECT_EQ(row_argmax, outcome.tokens) << "greedy: each token is its row's argmax";
    EXPECT_EQ(pieces_before_sample, 0u) << "the row comes before the token's piece";

    SessionOptions session_options;
    session_options.threads = 1;
    auto fresh = Session::create(model, session_options);
    ASSERT_TRUE(fresh.ok());
    auto logits = fresh.value()->prefill(turn->ids);
    ASSERT_TRUE(logits.ok());
    EXPECT_EQ(std::vector<float>(logits.value().begin(), logits.value().end()), first_row);
}

TEST(ChatSession, AStopSequenceEndsTheReplyBeforeItIsStreamed) {
    auto model = model_with("stop_sequence", kChatMl);
    ASSERT_TRUE(model);
    ChatSession free_run = chat_for(model);
    auto turn = free_run.prepare({{"user", "hello", ""}});
    ASSERT_TRUE(turn.ok());
    ChatTurnOutcome whole;
    ASSERT_TRUE(free_run.reply(*turn, greedy(24), {}, nullptr, whole).ok());
    ASSERT_GE(whole.text.size(), 8u);
    // A stop string from the middle of the free reply, starting at a character boundary.
    size_t at = whole.text.size() / 2;
    while (at > 0 && (static_cast<unsigned char>(whole.text[at]) & 0xC0) == 0x80) --at;
    size_t end = at + 1;
    while (end < whole.text.size() && (static_cast<unsigned char>(whole.text[end]) & 0xC0) == 0x80) ++end;
    const std::string stop = whole.text.substr(at, end - at);
    const std::string expected = whole.text.substr(0, whole.text.find(stop));

    ChatSession chat = chat_for(model);
    auto again = chat.prepare({{"user", "hello", ""}});
    ASSERT_TRUE(again.ok());
    ReplyOptions options = greedy(24);
    options.stop_sequences = {"never appears \x01", stop};
    std::string streamed;
    ChatTurnOutcome outcome;
    ASSERT_TRUE(chat.reply(*again, options, [&](const ChatPiece& p) { streamed.append(p.text); }, nullptr, outcome).ok());
    EXPECT_EQ(outcome.stats.stop_reason, StopReason::StopSequence);
    EXPECT_EQ(outcome.stop_sequence, stop);
    EXPECT_EQ(outcome.text, expected);
    EXPECT_EQ(streamed, expected) << "no byte of the stop string is streamed";
    EXPECT_EQ(chat.cached_tokens().size(), chat.session().position());

    ChatSession unmatched = chat_for(model);
    auto third = unmatched.prepare({{"user", "hello", ""}});
    ASSERT_TRUE(third.ok());
    options.stop_sequences = {"never appears \x01"};
    std::string streamed_all;
    ChatTurnOutcome all;
    ASSERT_TRUE(unmatched.reply(*third, options, [&](const ChatPiece& p) { streamed_all.append(p.text); }, nullptr, all).ok());
    EXPECT_EQ(all.text, whole.text) << "a stop string that never matches changes nothing";
    EXPECT_EQ(streamed_all, whole.text) << "held-back text is flushed at the end";
    EXPECT_EQ(all.stats.stop_reason, StopReason::MaxTokens);
}

TEST(ChatSession, ContextFullIsAKindAndFeedsNothing) {
    auto model = model_with("full", kChatMl);
    ASSERT_TRUE(model);
    ChatSession chat = chat_for(model, 16);
    auto turn = chat.prepare({{"user", std::string(40, 'x'), ""}});
    ASSERT_TRUE(turn.ok());
    EXPECT_FALSE(turn->fits());
    ChatTurnOutcome outcome;
    const Status s = chat.reply(*turn, greedy(4), {}, nullptr, outcome);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.kind(), ErrorKind::ContextFull) << s.error();
    EXPECT_EQ(chat.session().position(), 0u);
}

TEST(ChatSession, CancellationIsAKindAndTheCacheKeepsWhatWasComputed) {
    auto model = model_with("cancel", kChatMl);
    ASSERT_TRUE(model);
    ChatSession chat = chat_for(model);
    std::vector<ChatMessage> messages = {{"user", "hello", ""}};
    auto turn = chat.prepare(messages);
    ASSERT_TRUE(turn.ok());
    CancelToken cancel;
    ChatTurnOutcome outcome;
    const Status s = chat.reply(*turn, greedy(50), [&](const ChatPiece& p) {
        if (p.token >= 0 && outcome.tokens.size() >= 3) cancel.cancel();
    }, &cancel, outcome);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.kind(), ErrorKind::Cancelled);
    EXPECT_EQ(outcome.tokens.size(), 3u) << "stops within one token";
    EXPECT_EQ(outcome.stats.generated_tokens, 3u) << "the stats of what ran are kept";
    EXPECT_EQ(chat.cached_tokens().size(), chat.session().position());
    EXPECT_EQ(chat.cached_tokens().size(), turn->ids.size() + 3) << "the prompt and every token fed";
    messages.push_back({"assistant", outcome.text, ""});
    messages.push_back({"user", "more", ""});
    auto next = chat.prepare(messages);
    ASSERT_TRUE(next.ok());
    EXPECT_GE(next->reused_tokens, turn->ids.size()) << "a stopped turn's prompt is still reused";
}

TEST(ChatSession, FallbackCarriesTheReasonAndRawModeFeedsTextVerbatim) {
    auto broken = model_with("broken", "{% for m in messages %}{{ m.content ");
    ASSERT_TRUE(broken);
    ChatSession chat = chat_for(broken);
    EXPECT_FALSE(chat.has_model_template());
    auto turn = chat.prepare({{"user", "hi", ""}});
    ASSERT_TRUE(turn.ok());
    EXPECT_EQ(turn->source, PromptSource::Fallback);
    EXPECT_NE(turn->note.find("does not compile"), std::string::npos) << turn->note;
    EXPECT_NE(turn->text.find("user: hi"), std::string::npos) << turn->text;

    auto raw = chat.prepare_raw("<|im_start|>x");
    ASSERT_TRUE(raw.ok());
    EXPECT_EQ(raw->source, PromptSource::Raw);
    EXPECT_EQ(raw->text, "<|im_start|>x");
    EXPECT_EQ(raw->ids[1], id_of("<|im_start|>"));
}

// Issue 38: this template hung `cflow serve` before it listened, `cflow chat`, and the desktop at
// "Loading…" (its dict copies go quadratic inside the step budget). The load probe refuses it
// within its time and memory budget; chat goes on with the visible fallback and the reason.
const char* kQuadraticTemplate =
    "{%- set ns = namespace(d={}) -%}"
    "{%- for i in range(100000) -%}{%- set ns.d = dict(ns.d, **{('k' ~ i): i}) -%}{%- endfor -%}"
    "{% for m in messages %}{{ m['content'] }}{% endfor %}";

TEST(ChatSession, AHostileModelTemplateFallsBackAtLoadWithTheReason) {
    auto hostile = model_with("hostile", kQuadraticTemplate);
    ASSERT_TRUE(hostile);
    ChatSession chat = chat_for(hostile);
    EXPECT_FALSE(chat.has_model_template());
    EXPECT_NE(chat.template_note().find("refused at load"), std::string::npos) << chat.template_note();
    // Which budget runs out first depends on the machine (a sanitized build is slower than 64 MiB
    // of copies takes): either is the load-time budget.
    EXPECT_TRUE(chat.template_note().find("more than 64 MiB") != std::string::npos ||
                chat.template_note().find("ran longer than 2000 ms") != std::string::npos)
        << chat.template_note();
    auto turn = chat.prepare({{"user", "hi", ""}});
    ASSERT_TRUE(turn.ok()) << turn.error();
    EXPECT_EQ(turn->source, PromptSource::Fallback);
    EXPECT_NE(turn->note.find("refused at load"), std::string::npos) << turn->note;

    // The same template typed in as a custom one is refused with the reason, and the session keeps
    // what it had.
    const Status custom = chat.set_template({TemplateChoice::Kind::Custom, kQuadraticTemplate});
    ASSERT_FALSE(custom.ok());
    EXPECT_EQ(custom.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(custom.error().find("was refused"), std::string::npos) << custom.error();
    EXPECT_TRUE(chat.set_template({TemplateChoice::Kind::Custom, kChatMl}).ok());
    auto templated = chat.prepare({{"user", "hi", ""}});
    ASSERT_TRUE(templated.ok());
    EXPECT_EQ(templated->source, PromptSource::ModelTemplate);
}

TEST(ChatSession, BuiltinTemplatesRenderEveryRoleAndCanReplaceTheModelsOwn) {
    auto plain = model_with("builtins", "");
    ASSERT_TRUE(plain);
    ChatSession chat = chat_for(plain);
    EXPECT_FALSE(chat.has_model_template());
    const std::vector<ChatMessage> messages = {
        {"system", "SYSTEXT", ""}, {"user", "USERONE", ""}, {"assistant", "REPLYONE", ""}, {"user", "USERTWO", ""}};
    ASSERT_GE(builtin_chat_templates().size(), 4u);
    for (const BuiltinTemplate& t : builtin_chat_templates()) {
        ASSERT_TRUE(chat.set_template({TemplateChoice::Kind::Builtin, std::string(t.name)}).ok()) << t.name;
        EXPECT_TRUE(chat.has_model_template());
        auto turn = chat.prepare(messages);
        ASSERT_TRUE(turn.ok()) << t.name;
        EXPECT_EQ(turn->source, PromptSource::ModelTemplate) << t.name << ": " << turn->note;
        EXPECT_FALSE(turn->system_ignored) << t.name;
        size_t at = 0;
        for (const char* part : {"USERONE", "REPLYONE", "USERTWO"}) {
            const size_t found = turn->text.find(part, at);
            EXPECT_NE(found, std::string::npos) << t.name << " lost " << part << ":\n" << turn->text;
            if (found != std::string::npos) at = found;
        }
        EXPECT_NE(turn->text.find("SYSTEXT"), std::string::npos) << t.name;
    }
    ASSERT_TRUE(chat.set_template({TemplateChoice::Kind::Builtin, "chatml"}).ok());
    EXPECT_EQ(chat.end_of_turn_tokens(), (std::vector<int32_t>{id_of("<|im_start|>"), id_of("<|im_end|>"), id_of("<|end|>")}))
        << "end of turn follows the chosen template";
    EXPECT_EQ(chat.set_template({TemplateChoice::Kind::Builtin, "no-such"}).kind(), ErrorKind::InvalidInput);
    const Status broken = chat.set_template({TemplateChoice::Kind::Custom, "{% for m in messages %}{{ m.content "});
    ASSERT_FALSE(broken.ok());
    EXPECT_NE(broken.error().find("line 1"), std::string::npos) << broken.error();
    EXPECT_EQ(chat.template_choice().value, "chatml") << "a template that does not compile leaves the current one";
    ASSERT_TRUE(chat.set_template({TemplateChoice::Kind::Custom, "{% for m in messages %}[{{ m.content }}]{% endfor %}"}).ok());
    EXPECT_EQ(chat.prepare({{"user", "hi", ""}})->text, "[hi]");
    ASSERT_TRUE(chat.set_template({}).ok());
    EXPECT_FALSE(chat.has_model_template()) << "back to the model's own (none)";
}

TEST(ChatSession, ATemplateThatDropsTheSystemPromptIsReported) {
    auto model = model_with("ignores_system",
                            "{% for m in messages %}{% if m['role'] != 'system' %}{{ m['content'] }}\n{% endif %}{% endfor %}");
    ASSERT_TRUE(model);
    ChatSession chat = chat_for(model);
    auto turn = chat.prepare({{"system", "be brief", ""}, {"user", "hi", ""}});
    ASSERT_TRUE(turn.ok());
    EXPECT_TRUE(turn->system_ignored);
    EXPECT_FALSE(chat.prepare({{"system", "  ", ""}, {"user", "hi", ""}})->system_ignored) << "an empty one is not lost";
    auto with = chat_for(model_with("keeps_system", kChatMl)).prepare({{"system", "be brief", ""}, {"user", "hi", ""}});
    EXPECT_FALSE(with->system_ignored);
}

std::vector<ChatMessage> long_conversation(int turns) {
    std::vector<ChatMessage> messages = {{"system", "keep this system prompt", ""}};
    for (int i = 0; i < turns; ++i) {
        messages.push_back({"user", "question number " + std::to_string(i) + " about the cat and the dog", ""});
        messages.push_back({"assistant", "answer number " + std::to_string(i) + " about the dog and the cat", ""});
    }
    messages.push_back({"user", "the last question", ""});
    return messages;
}

TEST(ChatSession, DropOldestKeepsTheSystemPromptAndTheNewestTurnsWithinTheBudget) {
    auto model = model_with("drop_oldest", kChatMl);
    ASSERT_TRUE(model);
    ChatSession chat = chat_for(model, 256);
    const auto messages = long_conversation(20);
    auto whole = chat.prepare(messages);
    ASSERT_TRUE(whole.ok());
    ASSERT_GT(whole->ids.size(), 256u) << "the test needs a conversation longer than the context";
    EXPECT_FALSE(whole->fits()) << "Stop feeds it whole";
    PrepareOptions options;
    options.policy = ContextPolicy::DropOldest;
    options.reserve_tokens = 64;
    auto dropped = chat.prepare(messages, options);
    ASSERT_TRUE(dropped.ok());
    EXPECT_LE(dropped->ids.size(), 256u - 64u);
    EXPECT_TRUE(dropped->fits());
    EXPECT_GT(dropped->dropped_messages, 0u);
    EXPECT_EQ(dropped->dropped_messages % 2, 0u) << "whole user/assistant pairs go";
    EXPECT_EQ(dropped->text.find("<|im_start|>system\nkeep this system prompt"), 0u) << dropped->text;
    EXPECT_NE(dropped->text.find("the last question"), std::string::npos);
    EXPECT_EQ(dropped->text.find("question number 0 "), std::string::npos) << "the oldest turn is gone";
    // One message fewer dropped would not fit: only as much as needed is left out.
    std::vector<ChatMessage> one_more(messages.begin(), messages.begin() + 1);
    one_more.insert(one_more.end(), messages.begin() + 1 + long(dropped->dropped_messages) - 2, messages.end());
    EXPECT_GT(chat.prepare(one_more)->ids.size(), 256u - 64u);
}

TEST(ChatSession, SlidingWindowKeepsTheSystemTokensAndTheNewestTokens) {
    auto model = model_with("sliding", kChatMl);
    ASSERT_TRUE(model);
    ChatSession chat = chat_for(model, 256);
    const auto messages = long_conversation(20);
    auto whole = chat.prepare(messages);
    ASSERT_TRUE(whole.ok());
    PrepareOptions options;
    options.policy = ContextPolicy::SlidingWindow;
    options.reserve_tokens = 64;
    auto window = chat.prepare(messages, options);
    ASSERT_TRUE(window.ok());
    ASSERT_EQ(window->ids.size(), 256u - 64u);
    EXPECT_EQ(window->dropped_tokens, whole->ids.size() - window->ids.size());
    auto system = chat.prepare({messages.front()});
    // The head is the system message's rendering (here: what it shares with the whole prompt,
    // less the <|im_start|> of the next turn) ...
    const size_t head = size_t(std::mismatch(system->ids.begin(), system->ids.end(), whole->ids.begin()).first -
                               system->ids.begin()) - 1;
    ASSERT_GT(head, 10u);
    EXPECT_TRUE(std::equal(whole->ids.begin(), whole->ids.begin() + long(head), window->ids.begin()));
    // ... and the rest is the newest tokens, in order, up to the end of the prompt.
    const size_t tail = 100;
    EXPECT_TRUE(std::equal(whole->ids.end() - long(tail), whole->ids.end(), window->ids.end() - long(tail)));
    EXPECT_NE(window->note.find("sliding window"), std::string::npos);

    auto raw = chat.prepare_raw(whole->text, options);
    ASSERT_TRUE(raw.ok());
    EXPECT_EQ(raw->ids.size(), 256u - 64u);
    EXPECT_EQ(raw->ids.front(), whole->ids.front()) << "BOS stays";
    EXPECT_TRUE(std::equal(whole->ids.end() - long(tail), whole->ids.end(), raw->ids.end() - long(tail)));
}

} // namespace
} // namespace cflow
