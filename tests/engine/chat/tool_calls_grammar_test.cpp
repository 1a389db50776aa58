// The grammar that forces a tool call (issue 33): every string it accepts, drawn by random walks
// over a byte vocabulary, parses back to a call of an allowed tool whose arguments are an object;
// a random-weight model generating under it writes exactly such a call for every seed; refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cflow/engine/chat/tool_calls.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/generation/generate.h"
#include "cflow/engine/generation/grammar_matcher.h"
#include "cflow/engine/generation/grammar_vocabulary.h"
#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow {
namespace {

std::vector<ToolDefinition> tool_grammar_tools() {
    return {
        {"get_weather", "The weather in a city",
         R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}, "unit": {"enum": ["celsius", "fahrenheit"]}},
             "required": ["city"], "additionalProperties": false})"},
        {"get_time", "", R"({"type": "object", "properties": {"utc": {"type": "boolean"}}, "additionalProperties": false})"},
        {"ping", "", ""},
    };
}

constexpr ToolCallFormat kToolGrammarFormats[] = {ToolCallFormat::Hermes, ToolCallFormat::Llama31, ToolCallFormat::Mistral,
                                                  ToolCallFormat::Harmony, ToolCallFormat::Phi4};

// One token per printable ASCII byte and '\n', and an end token last.
std::shared_ptr<const GrammarVocabulary> tool_grammar_byte_vocabulary() {
    std::vector<std::string> bytes;
    for (int c = 0x20; c < 0x7f; ++c) bytes.push_back(std::string(1, char(c)));
    bytes.push_back("\n");
    bytes.push_back("<end>");
    std::vector<bool> special(bytes.size(), false);
    special.back() = true;
    return std::make_shared<const GrammarVocabulary>(std::move(bytes), std::move(special));
}

// A random string of the grammar's language (nullopt when the walk ran past `max_steps`).
std::optional<std::string> tool_grammar_walk(const std::shared_ptr<const Grammar>& grammar,
                                             const std::shared_ptr<const GrammarVocabulary>& vocabulary, std::mt19937& random,
                                             size_t max_steps) {
    auto matcher = GrammarMatcher::create(grammar, vocabulary);
    EXPECT_TRUE(matcher.ok());
    if (!matcher.ok()) return std::nullopt;
    const int32_t end = int32_t(vocabulary->vocab_size() - 1);
    const std::vector<int32_t> end_ids = {end};
    std::string text;
    std::vector<uint8_t> allowed;
    for (size_t step = 0; step < max_steps; ++step) {
        auto count = matcher->allowed_tokens(allowed, end_ids);
        EXPECT_TRUE(count.ok());
        if (!count.ok()) return std::nullopt;
        if (allowed[size_t(end)] && (*count == 0 || random() % 4 == 0)) return text;
        std::vector<int32_t> choices;
        for (int32_t id = 0; id < end; ++id)
            if (allowed[size_t(id)]) choices.push_back(id);
        if (choices.empty()) return std::nullopt;
        const int32_t id = choices[random() % choices.size()];
        EXPECT_TRUE(matcher->accept_token(id).ok());
        text += vocabulary->bytes(id);
    }
    return std::nullopt;
}

void expect_valid_calls(ToolCallFormat format, const std::string& text, const std::vector<std::string>& allowed_names,
                        bool exactly_one) {
    const ParsedToolReply parsed = parse_tool_calls(format, text);
    if (exactly_one) {
        EXPECT_EQ(parsed.calls.size(), 1u) << text;
    }
    EXPECT_GE(parsed.calls.size(), 1u) << text;
    EXPECT_EQ(parsed.content, "") << text;
    for (const ToolCall& call : parsed.calls) {
        EXPECT_NE(std::find(allowed_names.begin(), allowed_names.end(), call.name), allowed_names.end()) << call.name;
        const auto arguments = nlohmann::json::parse(call.arguments_json, nullptr, false);
        EXPECT_TRUE(arguments.is_object()) << call.arguments_json;
        if (call.name == "get_weather" && arguments.is_object()) {
            ASSERT_TRUE(arguments.contains("city")) << call.arguments_json;
            const std::string city = arguments["city"].get<std::string>();
            const auto code_points = std::count_if(city.begin(), city.end(), [](char c) { return (uint8_t(c) & 0xC0) != 0x80; });
            EXPECT_LE(code_points, 8) << call.arguments_json;
        }
    }
}

TEST(ToolCallGrammar, EveryAcceptedStringParsesToACallOfAnAllowedTool) {
    const auto vocabulary = tool_grammar_byte_vocabulary();
    std::mt19937 random(33);
    const std::vector<ToolDefinition> tools = tool_grammar_tools();
    for (ToolCallFormat format : kToolGrammarFormats) {
        SCOPED_TRACE(tool_call_format_name(format));
        struct Choice {
            ToolChoice choice;
            std::vector<std::string> names;
            bool one;
        };
        const bool one_per_turn = format == ToolCallFormat::Llama31 || format == ToolCallFormat::Harmony;
        const std::vector<Choice> choices = {
            {{ToolChoice::Kind::Required, ""}, {"get_weather", "get_time", "ping"}, one_per_turn},
            {{ToolChoice::Kind::Named, "get_weather"}, {"get_weather"}, true},
            {{ToolChoice::Kind::Named, "ping"}, {"ping"}, true},
        };
        for (const Choice& c : choices) {
            auto grammar = tool_call_grammar(format, tools, c.choice);
            ASSERT_TRUE(grammar.ok()) << grammar.error();
            size_t walked = 0;
            for (int trial = 0; trial < 40; ++trial) {
                const auto text = tool_grammar_walk(*grammar, vocabulary, random, 3000);
                if (!text) continue;
                ++walked;
                expect_valid_calls(format, *text, c.names, c.one);
            }
            EXPECT_GE(walked, 20u) << "too few walks finished";
            // A call of a tool the choice leaves out is not in the language.
            auto matcher = GrammarMatcher::create(*grammar, vocabulary);
            ASSERT_TRUE(matcher.ok());
            const std::string wrong = format == ToolCallFormat::Hermes ? "<tool_call>\n{\"name\": \"other\""
                                      : format == ToolCallFormat::Harmony ? "<|channel|>commentary to=functions.other"
                                      : format == ToolCallFormat::Mistral ? "[TOOL_CALLS][{\"name\": \"other\""
                                      : format == ToolCallFormat::Phi4    ? "<|tool_call|>[{\"name\": \"other\""
                                                                          : "{\"name\": \"other\"";
            EXPECT_FALSE(matcher->accept_bytes(wrong).ok()) << wrong;
        }
    }
}

TEST(ToolCallGrammar, RefusesWhatCannotBeForced) {
    const std::vector<ToolDefinition> tools = tool_grammar_tools();
    const ToolChoice required{ToolChoice::Kind::Required, ""};
    EXPECT_FALSE(tool_call_grammar(ToolCallFormat::None, tools, required).ok());
    EXPECT_FALSE(tool_call_grammar(ToolCallFormat::Hermes, {}, required).ok());
    EXPECT_FALSE(tool_call_grammar(ToolCallFormat::Hermes, tools, ToolChoice{ToolChoice::Kind::Auto, ""}).ok());
    auto missing = tool_call_grammar(ToolCallFormat::Hermes, tools, ToolChoice{ToolChoice::Kind::Named, "nope"});
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(missing.error().find("nope"), std::string::npos) << missing.error();
    const std::vector<ToolDefinition> bad_schema = {{"f", "", R"({"type": "object", "properties": {"x": {"type": "quaternion"}}})"}};
    auto refused = tool_call_grammar(ToolCallFormat::Hermes, bad_schema, required);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().find("'f'"), std::string::npos) << refused.error();
    const std::vector<ToolDefinition> bad_name = {{"a\"b", "", ""}};
    EXPECT_FALSE(tool_call_grammar(ToolCallFormat::Hermes, bad_name, required).ok());
}

std::shared_ptr<const Model> tool_grammar_random_model() {
    test::SyntheticSpec spec;
    spec.vocab = 320;
    spec.seed = 33;
    spec.max_seq_len = 1024;
    const auto path = test::temp_dir("tool_call_grammar") / "model.cflow";
    ConvertOptions options;
    options.weight_quant = DType::F32;
    EXPECT_TRUE(convert_to_cflow(test::make_synthetic_model(spec), path.string(), options).ok());
    auto model = Model::load(path.string());
    EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error());
    return model.ok() ? model.value() : nullptr;
}

TEST(ToolCallGrammar, ARandomModelUnderTheGrammarMakesOneValidCall) {
    auto model = tool_grammar_random_model();
    ASSERT_TRUE(model);
    const std::vector<ToolDefinition> tools = tool_grammar_tools();
    const auto vocabulary = GrammarVocabulary::from_tokenizer(model->tokenizer());
    for (ToolCallFormat format : kToolGrammarFormats) {
        SCOPED_TRACE(tool_call_format_name(format));
        auto grammar = tool_call_grammar(format, tools, ToolChoice{ToolChoice::Kind::Named, "get_weather"});
        ASSERT_TRUE(grammar.ok()) << grammar.error();
        for (uint64_t seed = 1; seed <= 4; ++seed) {
            SessionOptions options;
            options.threads = 1;
            auto session = Session::create(model, options);
            ASSERT_TRUE(session.ok());
            GenerateRequest request;
            request.prompt = model->tokenizer().encode("call a tool", true);
            request.sampling.temperature = 1.0f;
            request.sampling.top_k = 0;
            request.sampling.top_p = 1.0f;
            request.sampling.min_p = 0.0f;
            request.sampling.seed = seed;
            request.max_tokens = 600;
            request.grammar = *grammar;
            request.grammar_vocabulary = vocabulary;
            std::string text;
            auto stats = generate(**session, request, [&](int32_t, std::string_view piece) {
                text += piece;
                return true;
            });
            ASSERT_TRUE(stats.ok()) << stats.error();
            EXPECT_EQ(stats->stop_reason, StopReason::GrammarComplete) << text;
            expect_valid_calls(format, text, {"get_weather"}, true);
        }
    }
}

} // namespace
} // namespace cflow
