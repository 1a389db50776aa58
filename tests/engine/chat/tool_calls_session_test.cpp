// Tools in the chat core (issue 33): PrepareOptions::tools reach the template, the KV cache is
// still reused by token prefix across a tool round trip, the call markers print, and a reply
// under the call grammar is read back as a call by the template's own format.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cflow/engine/chat/builtin_templates.h"
#include "cflow/engine/chat/chat_session.h"
#include "cflow/engine/chat/tool_calls.h"
#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow {
namespace {

constexpr uint32_t kToolSessionVocab = 320;
// The last ids become these tokens, all control tokens in the file.
const std::vector<std::string> kToolSessionControls = {"<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>",
                                                       "[TOOL_CALLS]", "<|python_tag|>"};

int32_t tool_session_id(const std::string& token, const std::vector<std::string>& controls = kToolSessionControls) {
    const auto it = std::find(controls.begin(), controls.end(), token);
    return static_cast<int32_t>(kToolSessionVocab - controls.size() + size_t(it - controls.begin()));
}

std::shared_ptr<const Model> tool_session_model(const std::string& name, uint32_t max_seq = 2048,
                                                const std::vector<std::string>& controls = kToolSessionControls,
                                                const std::string& chat_template = std::string(find_builtin_template("chatml")->source)) {
    test::SyntheticSpec spec;
    spec.vocab = kToolSessionVocab;
    spec.seed = 7;
    spec.max_seq_len = max_seq;
    SourceModel source = test::make_synthetic_model(spec);
    auto tokens = *source.metadata.get_strings("tokenizer.ggml.tokens");
    auto types = *source.metadata.get_ints("tokenizer.ggml.token_type");
    for (const auto& token : controls) {
        tokens[size_t(tool_session_id(token, controls))] = token;
        types[size_t(tool_session_id(token, controls))] = 3;
    }
    source.metadata.set("tokenizer.ggml.tokens", std::move(tokens));
    source.metadata.set("tokenizer.ggml.token_type", std::move(types));
    source.metadata.set("tokenizer.chat_template", chat_template);
    const auto path = test::temp_dir("tool_session_" + name) / "model.cflow";
    ConvertOptions options;
    options.weight_quant = DType::F32;
    EXPECT_TRUE(convert_to_cflow(source, path.string(), options).ok());
    auto model = Model::load(path.string());
    EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error());
    return model.ok() ? model.value() : nullptr;
}

ChatSession tool_session_chat(std::shared_ptr<const Model> model, uint32_t context = 0) {
    SessionOptions options;
    options.threads = 1;
    options.context_length = context;
    auto session = Session::create(model, options);
    EXPECT_TRUE(session.ok());
    return ChatSession(model, std::move(session).value());
}

std::vector<ToolDefinition> tool_session_tools(const std::string& description = "The weather in a city") {
    return {{"get_weather", description,
             R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 6}}, "required": ["city"]})"}};
}

TEST(ToolCallSession, ToolsReachTheTemplate) {
    auto model = tool_session_model("render");
    ASSERT_TRUE(model);
    ChatSession chat = tool_session_chat(model);
    EXPECT_EQ(chat.tool_call_format(), ToolCallFormat::Hermes);
    const std::vector<ChatMessage> messages = {{"system", "Be brief.", ""}, {"user", "Weather in Paris?", ""}};
    PrepareOptions options;
    options.tools = tool_session_tools();
    auto with_tools = chat.prepare(messages, options);
    ASSERT_TRUE(with_tools.ok()) << with_tools.error();
    EXPECT_EQ(with_tools->source, PromptSource::ModelTemplate) << with_tools->note;
    EXPECT_NE(with_tools->text.find("\"name\": \"get_weather\""), std::string::npos) << with_tools->text;
    EXPECT_NE(with_tools->text.find("The weather in a city"), std::string::npos);
    EXPECT_NE(with_tools->text.find("Be brief."), std::string::npos);
    EXPECT_FALSE(with_tools->system_ignored);
    auto without = chat.prepare(messages);
    ASSERT_TRUE(without.ok());
    EXPECT_EQ(without->text.find("get_weather"), std::string::npos) << without->text;
    // The model without a template renders no tools and has no call format.
    EXPECT_EQ(tool_session_chat(model).tool_call_format(), ToolCallFormat::Hermes);
    ChatSession plain = tool_session_chat(model);
    ASSERT_TRUE(plain.set_template({TemplateChoice::Kind::Builtin, "plain"}).ok());
    EXPECT_EQ(plain.tool_call_format(), ToolCallFormat::None);
}

TEST(ToolCallSession, TheMarkersPrintAndAGrammarReplyIsACall) {
    auto model = tool_session_model("grammar");
    ASSERT_TRUE(model);
    const Tokenizer& tokenizer = model->tokenizer();
    for (const char* marker : {"<tool_call>", "</tool_call>", "[TOOL_CALLS]", "<|python_tag|>"}) {
        EXPECT_FALSE(tokenizer.is_control(tool_session_id(marker))) << marker;
        EXPECT_EQ(tokenizer.decode({tool_session_id(marker)}), marker);
    }
    EXPECT_TRUE(tokenizer.is_control(tool_session_id("<|im_end|>")));

    ChatSession chat = tool_session_chat(model);
    const std::vector<ChatMessage> messages = {{"user", "Weather in Paris?", ""}};
    PrepareOptions prepare_options;
    prepare_options.tools = tool_session_tools();
    auto grammar = tool_call_grammar(chat.tool_call_format(), prepare_options.tools, ToolChoice{ToolChoice::Kind::Required, ""});
    ASSERT_TRUE(grammar.ok()) << grammar.error();
    for (uint64_t seed = 1; seed <= 3; ++seed) {
        auto turn = chat.prepare(messages, prepare_options);
        ASSERT_TRUE(turn.ok());
        ReplyOptions options;
        options.sampling.temperature = 1.0f;
        options.sampling.top_k = 0;
        options.sampling.top_p = 1.0f;
        options.sampling.min_p = 0.0f;
        options.sampling.seed = seed;
        options.max_tokens = 300;
        options.grammar = *grammar;
        ToolCallStreamParser stream(chat.tool_call_format());
        std::string streamed_content;
        std::vector<ToolCall> streamed_calls;
        ChatTurnOutcome outcome;
        ASSERT_TRUE(chat.reply(*turn, options,
                               [&](const ChatPiece& piece) {
                                   auto events = stream.feed(piece.text);
                                   streamed_content += events.content;
                                   for (auto& call : events.calls) streamed_calls.push_back(call);
                               },
                               nullptr, outcome)
                        .ok());
        auto events = stream.finish();
        streamed_content += events.content;
        for (auto& call : events.calls) streamed_calls.push_back(call);
        // Required allows more calls after the first, so the turn may also end by its end token.
        const StopReason stop = outcome.stats.stop_reason;
        EXPECT_TRUE(stop == StopReason::GrammarComplete || stop == StopReason::StopToken || stop == StopReason::EndOfGeneration)
            << stop_reason_name(stop) << ": " << outcome.text;
        const ParsedToolReply parsed = parse_tool_calls(chat.tool_call_format(), outcome.text);
        ASSERT_GE(parsed.calls.size(), 1u) << outcome.text;
        EXPECT_EQ(parsed.content, "");
        ASSERT_EQ(streamed_calls.size(), parsed.calls.size());
        EXPECT_EQ(streamed_content, parsed.content);
        for (size_t i = 0; i < parsed.calls.size(); ++i) {
            EXPECT_EQ(parsed.calls[i].name, "get_weather");
            EXPECT_EQ(streamed_calls[i].arguments_json, parsed.calls[i].arguments_json);
            EXPECT_TRUE(nlohmann::json::parse(parsed.calls[i].arguments_json, nullptr, false).contains("city"));
        }
    }
}

TEST(ToolCallSession, TheCacheIsReusedAcrossAToolRoundTrip) {
    auto model = tool_session_model("reuse");
    ASSERT_TRUE(model);
    ChatSession chat = tool_session_chat(model);
    PrepareOptions options;
    options.tools = tool_session_tools();
    std::vector<ChatMessage> messages = {{"system", "Be brief.", ""}, {"user", "Weather in Paris?", ""}};
    auto first = chat.prepare(messages, options);
    ASSERT_TRUE(first.ok());
    ChatTurnOutcome outcome;
    ReplyOptions reply;
    reply.sampling.temperature = 0;
    reply.max_tokens = 4;
    reply.ignore_end_of_turn = true;
    ASSERT_TRUE(chat.reply(*first, reply, nullptr, nullptr, outcome).ok());

    // The call and its result come back: everything before the new assistant turn is reused.
    const std::vector<ToolCall> calls = {{"call_0123456789abcdef01234567", "get_weather", R"({"city": "Paris"})"}};
    messages.push_back({"assistant", "", tool_calls_message_extra_json(calls)});
    messages.push_back({"tool", "18 degrees", R"({"tool_call_id": "call_0123456789abcdef01234567", "name": "get_weather"})"});
    auto second = chat.prepare(messages, options);
    ASSERT_TRUE(second.ok());
    EXPECT_NE(second->text.find("<tool_response>\n18 degrees\n</tool_response>"), std::string::npos) << second->text;
    EXPECT_GE(second->reused_tokens, first->ids.size()) << "the tools and the first turn are the same tokens";

    // Other tools change the prompt's head: the cache is reused only up to them.
    options.tools = tool_session_tools("Another description");
    auto changed = chat.prepare(messages, options);
    ASSERT_TRUE(changed.ok());
    EXPECT_LT(changed->reused_tokens, first->ids.size() / 2);
}

TEST(ToolCallSession, DroppingOldTurnsKeepsTheTools) {
    auto model = tool_session_model("drop", 4096);
    ASSERT_TRUE(model);
    ChatSession chat = tool_session_chat(model, 1024);
    PrepareOptions options;
    options.tools = tool_session_tools();
    options.policy = ContextPolicy::DropOldest;
    std::vector<ChatMessage> messages = {{"system", "Be brief.", ""}};
    for (int turn = 0; turn < 30; ++turn) {
        messages.push_back({"user", "Tell me about the weather in city number " + std::to_string(turn) + " please.", ""});
        messages.push_back({"assistant", "It is sunny there, as it was yesterday and the day before.", ""});
    }
    messages.push_back({"user", "And now?", ""});
    auto turn = chat.prepare(messages, options);
    ASSERT_TRUE(turn.ok()) << turn.error();
    EXPECT_GT(turn->dropped_messages, 0u);
    EXPECT_NE(turn->text.find("get_weather"), std::string::npos);
    EXPECT_GT(turn->kept_head, 20u) << "the system turn with its tools is the kept head";
}

// gpt-oss: a parsed harmony reply that made a call goes back with its analysis as `thinking` beside
// its tool_calls (its template refuses channel tags in content), and the call renders as the
// template writes it.
TEST(ToolCallSession, AHarmonyCallGoesBackToItsTemplate) {
    CFLOW_REQUIRE_ASSET(template_path, "assets/chat-templates/llama.cpp-models-templates/openai-gpt-oss-120b.jinja");
    std::ifstream in(template_path, std::ios::binary);
    const std::string harmony_template((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::vector<std::string> harmony = {"<|start|>", "<|end|>", "<|message|>", "<|channel|>",
                                              "<|constrain|>", "<|return|>", "<|call|>"};
    auto model = tool_session_model("harmony", 4096, harmony, harmony_template);
    ASSERT_TRUE(model);
    ChatSession chat = tool_session_chat(model);
    chat.set_template_clock(TemplateTime{2026, 12, 7, 6, 0, 0});
    ASSERT_TRUE(chat.has_model_template()) << chat.template_note();
    ASSERT_EQ(chat.tool_call_format(), ToolCallFormat::Harmony);
    const std::string reply = "<|channel|>analysis<|message|>Need the weather.<|start|>assistant<|channel|>commentary "
                              "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}";
    const ParsedToolReply parsed = parse_tool_calls(ToolCallFormat::Harmony, reply);
    ASSERT_EQ(parsed.calls.size(), 1u);
    PrepareOptions options;
    options.tools = tool_session_tools();
    const std::vector<ChatMessage> messages = {
        {"user", "Weather in Paris?", ""},
        {"assistant", parsed.content, tool_calls_message_extra_json(parsed.calls)},
        {"tool", "18 degrees", nlohmann::json{{"tool_call_id", parsed.calls[0].id}, {"name", "get_weather"}}.dump()}};
    auto turn = chat.prepare(messages, options);
    ASSERT_TRUE(turn.ok()) << turn.error();
    EXPECT_EQ(turn->source, PromptSource::ModelTemplate) << turn->note;
    EXPECT_NE(turn->text.find("<|start|>assistant<|channel|>analysis<|message|>Need the weather.<|end|>"), std::string::npos)
        << turn->text;
    EXPECT_NE(turn->text.find("to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}<|call|>"),
              std::string::npos)
        << turn->text;
    EXPECT_NE(turn->text.find("<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>\"18 degrees\""),
              std::string::npos)
        << turn->text;
}

} // namespace
} // namespace cflow
