// Tool calls (issue 33): format detection on the families' real templates, round trips through
// them (the template writes an assistant turn that made calls, the parser reads the same calls
// back), each family's reply forms, malformed calls kept as content, and the streaming parser
// agreeing with the whole-reply one in every split.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cflow/engine/chat/builtin_templates.h"
#include "cflow/engine/chat/chat_template.h"
#include "cflow/engine/chat/tool_calls.h"
#include "test_support.h"

namespace cflow {
namespace {

constexpr const char* kToolTestTemplatesDir = "assets/chat-templates/llama.cpp-models-templates";

std::string tool_test_read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

nlohmann::json tool_test_json_of(const std::string& text) { return nlohmann::json::parse(text, nullptr, false); }

std::vector<ToolDefinition> tool_test_weather_tools() {
    return {
        {"get_weather", "The weather in a city", R"({"type":"object","properties":{"city":{"type":"string"},"unit":{"enum":["celsius","fahrenheit"]}},"required":["city"]})"},
        {"get_time", "The local time of a time zone", R"({"type":"object","properties":{"timezone":{"type":"string"},"verbose":{"type":"boolean"}}})"},
    };
}

std::vector<ToolCall> tool_test_two_calls() {
    return {
        {"abcDEF123", "get_weather", R"({"city":"Paris","unit":"celsius","days":[1,2],"detail":{"wind":true}})"},
        {"xyz789QRS", "get_time", R"({"timezone":"Europe/Rome","verbose":false,"note":"a \"quoted\" word"})"},
    };
}

// The text a template writes for the assistant turn that made `calls`: the conversation with that
// turn, less the same conversation's generation prompt, cut at the turn's end marker.
std::string tool_test_assistant_turn_text(const ChatTemplate& chat_template, const std::vector<ToolCall>& calls,
                                const std::string& content, const std::vector<std::string>& end_markers) {
    TemplateOptions options;
    options.bos_token = "<s>";
    options.eos_token = "</s>";
    options.tools_json = tools_template_json(tool_test_weather_tools());
    options.now = TemplateTime{2026, 12, 7, 6, 0, 0};
    const std::vector<ChatMessage> asked = {{"user", "What is the weather in Paris, and the time in Rome?", ""}};
    std::vector<ChatMessage> answered = asked;
    answered.push_back({"assistant", content, tool_calls_message_extra_json(calls)});
    options.add_generation_prompt = true;
    auto prompt = chat_template.render(asked, options);
    options.add_generation_prompt = false;
    auto whole = chat_template.render(answered, options);
    EXPECT_TRUE(prompt.ok()) << (prompt.ok() ? "" : prompt.error());
    EXPECT_TRUE(whole.ok()) << (whole.ok() ? "" : whole.error());
    if (!prompt.ok() || !whole.ok()) return {};
    EXPECT_TRUE(whole->starts_with(*prompt)) << "prompt:\n" << *prompt << "\nwhole:\n" << *whole;
    std::string turn = whole->substr(std::min(prompt->size(), whole->size()));
    size_t end = turn.size();
    for (const std::string& marker : end_markers) end = std::min(end, turn.find(marker));
    return turn.substr(0, end);
}

void tool_test_expect_same_calls(const std::vector<ToolCall>& parsed, const std::vector<ToolCall>& written, bool model_ids) {
    ASSERT_EQ(parsed.size(), written.size());
    for (size_t i = 0; i < parsed.size(); ++i) {
        EXPECT_EQ(parsed[i].name, written[i].name);
        EXPECT_EQ(tool_test_json_of(parsed[i].arguments_json), tool_test_json_of(written[i].arguments_json)) << parsed[i].arguments_json;
        EXPECT_TRUE(tool_test_json_of(parsed[i].arguments_json).is_object());
        if (model_ids) {
            EXPECT_EQ(parsed[i].id, written[i].id);
        }
    }
}

struct ToolTestRoundTripCase {
    const char* file;
    ToolCallFormat format;
    size_t calls;                 // how many calls one turn of this family holds
    bool model_ids;               // the template writes the ids back (Mistral)
    std::vector<std::string> end_markers;
};

const std::vector<ToolTestRoundTripCase>& tool_test_round_trip_cases() {
    static const std::vector<ToolTestRoundTripCase> cases = {
        {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFormat::Hermes, 2, false, {"<|im_end|>"}},
        {"Qwen-Qwen3-0.6B.jinja", ToolCallFormat::Hermes, 2, false, {"<|im_end|>"}},
        {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", ToolCallFormat::Hermes, 2, false, {"<|im_end|>"}},
        {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFormat::Llama31, 1, false, {"<|eot_id|>", "<|eom_id|>"}},
        {"meta-llama-Llama-3.3-70B-Instruct.jinja", ToolCallFormat::Llama31, 1, false, {"<|eot_id|>", "<|eom_id|>"}},
        {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolCallFormat::Mistral, 2, true, {"</s>"}},
        {"Mistral-Small-3.2-24B-Instruct-2506.jinja", ToolCallFormat::Mistral, 2, true, {"</s>"}},
        {"openai-gpt-oss-120b.jinja", ToolCallFormat::Harmony, 1, false, {"<|call|>"}},
    };
    return cases;
}

TEST(ToolCallFormat, DetectedFromTheFamiliesTemplates) {
    CFLOW_REQUIRE_ASSET(dir, kToolTestTemplatesDir);
    for (const ToolTestRoundTripCase& c : tool_test_round_trip_cases())
        EXPECT_EQ(tool_call_format_name(detect_tool_call_format(tool_test_read_text(dir / c.file))), tool_call_format_name(c.format)) << c.file;
    EXPECT_EQ(detect_tool_call_format(tool_test_read_text(dir / "meta-llama-Llama-3.2-3B-Instruct.jinja")), ToolCallFormat::Llama31);
    EXPECT_EQ(detect_tool_call_format(tool_test_read_text(dir / "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja")), ToolCallFormat::Hermes);
    // Gemma 2 never reads `tools`.
    EXPECT_EQ(detect_tool_call_format(tool_test_read_text(dir / "google-gemma-2-2b-it.jinja")), ToolCallFormat::None);
}

TEST(ToolCallFormat, DetectedFromTheBuiltinTemplatesAndNames) {
    EXPECT_EQ(detect_tool_call_format(find_builtin_template("chatml")->source), ToolCallFormat::Hermes);
    EXPECT_EQ(detect_tool_call_format(find_builtin_template("llama3")->source), ToolCallFormat::Llama31);
    EXPECT_EQ(detect_tool_call_format(find_builtin_template("plain")->source), ToolCallFormat::None);
    EXPECT_EQ(detect_tool_call_format("{% for t in tools %}{{ t | tojson }}{% endfor %}"), ToolCallFormat::Hermes);
    EXPECT_EQ(detect_tool_call_format("{% if custom_tools %}x{% endif %}"), ToolCallFormat::None);
    EXPECT_EQ(detect_tool_call_format("<|tool_call|>{{ tools }}"), ToolCallFormat::Phi4);
    EXPECT_EQ(tool_call_format_name(ToolCallFormat::Llama31), "llama3.1");
    EXPECT_EQ(tool_call_format_name(ToolCallFormat::Harmony), "harmony");
}

TEST(ToolCallFormat, ToolsAndCallsAsTheTemplatesReadThem) {
    const auto tools = nlohmann::json::parse(tools_template_json(tool_test_weather_tools()));
    ASSERT_EQ(tools.size(), 2u);
    EXPECT_EQ(tools[0]["type"], "function");
    EXPECT_EQ(tools[0]["function"]["name"], "get_weather");
    EXPECT_EQ(tools[0]["function"]["parameters"]["required"][0], "city");
    const std::vector<ToolDefinition> bare = {{"ping", "", ""}};
    const auto bare_json = nlohmann::json::parse(tools_template_json(bare));
    EXPECT_FALSE(bare_json[0]["function"].contains("description"));
    EXPECT_EQ(bare_json[0]["function"]["parameters"]["type"], "object");

    const auto extra = nlohmann::json::parse(tool_calls_message_extra_json(tool_test_two_calls()));
    ASSERT_EQ(extra["tool_calls"].size(), 2u);
    EXPECT_EQ(extra["tool_calls"][0]["id"], "abcDEF123");
    EXPECT_EQ(extra["tool_calls"][0]["type"], "function");
    EXPECT_EQ(extra["tool_calls"][0]["function"]["name"], "get_weather");
    EXPECT_TRUE(extra["tool_calls"][0]["function"]["arguments"].is_object());  // a mapping, not a string
    EXPECT_EQ(extra["tool_calls"][1]["function"]["arguments"]["note"], "a \"quoted\" word");
}

TEST(ToolCallRoundTrip, TheFamiliesTemplatesWriteWhatTheParserReads) {
    CFLOW_REQUIRE_ASSET(dir, kToolTestTemplatesDir);
    for (const ToolTestRoundTripCase& c : tool_test_round_trip_cases()) {
        SCOPED_TRACE(c.file);
        const std::string source = tool_test_read_text(dir / c.file);
        auto chat_template = ChatTemplate::compile(source);
        ASSERT_TRUE(chat_template.ok()) << chat_template.error();
        std::vector<ToolCall> calls = tool_test_two_calls();
        calls.resize(c.calls);
        const ToolCallFormat format = detect_tool_call_format(source);
        const std::string turn = tool_test_assistant_turn_text(*chat_template, calls, "", c.end_markers);
        ASSERT_FALSE(turn.empty());
        const ParsedToolReply parsed = parse_tool_calls(format, turn);
        tool_test_expect_same_calls(parsed.calls, calls, c.model_ids);
        EXPECT_EQ(parsed.content.find("get_weather"), std::string::npos) << "the call stayed in the content: " << parsed.content;
    }
}

TEST(ToolCallRoundTrip, ContentBeforeTheCallsStaysContent) {
    CFLOW_REQUIRE_ASSET(dir, kToolTestTemplatesDir);
    for (const char* file : {"Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja",  // Hermes 3 drops the content of a turn with calls
                             "openai-gpt-oss-120b.jinja"}) {
        SCOPED_TRACE(file);
        const std::string source = tool_test_read_text(dir / file);
        auto chat_template = ChatTemplate::compile(source);
        ASSERT_TRUE(chat_template.ok());
        std::vector<ToolCall> calls = tool_test_two_calls();
        calls.resize(1);
        const std::string turn = tool_test_assistant_turn_text(*chat_template, calls, "Let me look that up.", {"<|im_end|>", "<|call|>"});
        const ParsedToolReply parsed = parse_tool_calls(detect_tool_call_format(source), turn);
        tool_test_expect_same_calls(parsed.calls, calls, false);
        EXPECT_NE(parsed.content.find("Let me look that up."), std::string::npos) << parsed.content;
    }
}

TEST(ToolCallRoundTrip, ToolResultsRenderInEachFamilysTemplate) {
    CFLOW_REQUIRE_ASSET(dir, kToolTestTemplatesDir);
    for (const ToolTestRoundTripCase& c : tool_test_round_trip_cases()) {
        SCOPED_TRACE(c.file);
        auto chat_template = ChatTemplate::compile(tool_test_read_text(dir / c.file));
        ASSERT_TRUE(chat_template.ok());
        std::vector<ToolCall> calls = tool_test_two_calls();
        calls.resize(c.calls);
        std::vector<ChatMessage> messages = {{"user", "What is the weather in Paris?", ""},
                                             {"assistant", "", tool_calls_message_extra_json(calls)}};
        for (const ToolCall& call : calls)
            messages.push_back({"tool", "{\"result\": \"sunny-" + call.name + "\"}",
                                nlohmann::json{{"tool_call_id", call.id}, {"name", call.name}}.dump()});
        TemplateOptions options;
        options.bos_token = "<s>";
        options.eos_token = "</s>";
        options.tools_json = tools_template_json(tool_test_weather_tools());
        options.now = TemplateTime{2026, 12, 7, 6, 0, 0};
        auto rendered = chat_template->render(messages, options);
        ASSERT_TRUE(rendered.ok()) << rendered.error();
        EXPECT_NE(rendered->find("sunny-get_weather"), std::string::npos) << *rendered;
        EXPECT_NE(rendered->find("get_weather"), std::string::npos);
    }
}

TEST(ToolCallRoundTrip, TheBuiltinTemplatesRenderToolsCallsAndResults) {
    for (const char* name : {"chatml", "llama3"}) {
        SCOPED_TRACE(name);
        const std::string source(find_builtin_template(name)->source);
        auto chat_template = ChatTemplate::compile(source);
        ASSERT_TRUE(chat_template.ok()) << chat_template.error();
        const ToolCallFormat format = detect_tool_call_format(source);
        std::vector<ToolCall> calls = tool_test_two_calls();
        if (format == ToolCallFormat::Llama31) calls.resize(1);
        const std::string turn = tool_test_assistant_turn_text(*chat_template, calls, "", {"<|im_end|>", "<|eot_id|>"});
        tool_test_expect_same_calls(parse_tool_calls(format, turn).calls, calls, false);

        // The tools are in the prompt, with the system prompt kept, and a result renders.
        TemplateOptions options;
        options.tools_json = tools_template_json(tool_test_weather_tools());
        const std::vector<ChatMessage> messages = {{"system", "Be brief.", ""},
                                                   {"user", "Weather?", ""},
                                                   {"assistant", "", tool_calls_message_extra_json(calls)},
                                                   {"tool", "18 degrees", R"({"tool_call_id": "abcDEF123", "name": "get_weather"})"}};
        auto rendered = chat_template->render(messages, options);
        ASSERT_TRUE(rendered.ok()) << rendered.error();
        EXPECT_NE(rendered->find("Be brief."), std::string::npos);
        EXPECT_NE(rendered->find("\"description\": \"The weather in a city\""), std::string::npos) << *rendered;
        EXPECT_NE(rendered->find("18 degrees"), std::string::npos);
        // Without tools the template renders as before: no tool section.
        options.tools_json.clear();
        auto plain = chat_template->render({{"user", "Hi", ""}}, options);
        ASSERT_TRUE(plain.ok());
        EXPECT_EQ(plain->find("function"), std::string::npos) << *plain;
    }
}

// ---- Each family's reply forms, as models write them.

struct ToolTestReplyCase {
    ToolCallFormat format;
    std::string reply;
    std::string content;                                       // expected
    std::vector<std::pair<std::string, std::string>> calls;    // expected name, arguments
    std::vector<std::string> ids = {};                         // expected model-given ids
};

const std::vector<ToolTestReplyCase>& tool_test_reply_cases() {
    static const std::vector<ToolTestReplyCase> cases = {
        {ToolCallFormat::Hermes, "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": \"{\\\"timezone\\\": \\\"UTC\\\"}\"}\n</tool_call>",
         "Checking.", {{"get_weather", R"({"city":"Paris"})"}, {"get_time", R"({"timezone":"UTC"})"}}},
        {ToolCallFormat::Hermes, "<tool_call>{\"name\": \"ping\"}", "", {{"ping", "{}"}}},  // unclosed at the end
        {ToolCallFormat::Hermes, "a <tool_call>{\"name\": \"f\", \"arguments\": {\"x\": 1}}</tool_call> b", "a\n\nb", {{"f", R"({"x":1})"}}},
        {ToolCallFormat::Hermes, "no calls here, just < and <tool and </tool_call>", "no calls here, just < and <tool and </tool_call>", {}},
        {ToolCallFormat::Hermes, "<tool_call>{not json}</tool_call> tail", "<tool_call>{not json}</tool_call> tail", {}},
        {ToolCallFormat::Hermes, "<tool_call>{\"arguments\": {}}</tool_call>", "<tool_call>{\"arguments\": {}}</tool_call>", {}},
        {ToolCallFormat::Hermes, "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>", "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>", {}},
        {ToolCallFormat::Llama31, " {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", "", {{"get_weather", R"({"city":"Paris"})"}}},
        {ToolCallFormat::Llama31, "{\"name\": \"get_weather\", \"parameters\": {}} and more", "{\"name\": \"get_weather\", \"parameters\": {}} and more", {}},
        {ToolCallFormat::Llama31, "{\"a\": 1}", "{\"a\": 1}", {}},
        {ToolCallFormat::Llama31, "Sure: {\"name\": \"f\", \"parameters\": {}}", "Sure: {\"name\": \"f\", \"parameters\": {}}", {}},
        {ToolCallFormat::Llama31, "<|python_tag|>{\"name\": \"get_time\", \"parameters\": {\"timezone\": \"UTC\"}}", "", {{"get_time", R"({"timezone":"UTC"})"}}},
        {ToolCallFormat::Llama31, "<|python_tag|>brave_search.call(query=\"weather 'Paris'\", count=3, safe=True)", "",
         {{"brave_search", R"({"query":"weather 'Paris'","count":3,"safe":true})"}}},
        {ToolCallFormat::Llama31, "<|python_tag|>print(1)", "<|python_tag|>print(1)", {}},
        {ToolCallFormat::Mistral, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"a1b2c3d4e\"}, {\"name\": \"get_time\", \"arguments\": {}, \"id\": \"f5g6h7i8j\"}]",
         "", {{"get_weather", R"({"city":"Paris"})"}, {"get_time", "{}"}}, {"a1b2c3d4e", "f5g6h7i8j"}},
        {ToolCallFormat::Mistral, "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]get_time[CALL_ID]Zz9Yy8Xx7[ARGS]{}", "",
         {{"get_weather", R"({"city":"Paris"})"}, {"get_time", "{}"}}},
        {ToolCallFormat::Mistral, "[TOOL_CALLS] oops, no call", "[TOOL_CALLS] oops, no call", {}},
        {ToolCallFormat::Mistral, "[TOOL_CALLS][{\"name\": \"f\"}, {\"nope\": 1}]", "[TOOL_CALLS][{\"name\": \"f\"}, {\"nope\": 1}]", {}},
        {ToolCallFormat::Harmony, "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}",
         "<|channel|>analysis<|message|>Need the weather.<|end|>", {{"get_weather", R"({"city":"Paris"})"}}},
        {ToolCallFormat::Harmony, " to=functions.get_time<|channel|>commentary json<|message|>{\"timezone\": \"UTC\"}", "", {{"get_time", R"({"timezone":"UTC"})"}}},
        {ToolCallFormat::Harmony, "<|channel|>final<|message|>It is sunny.", "<|channel|>final<|message|>It is sunny.", {}},
        {ToolCallFormat::Harmony, "<|channel|>commentary to=functions.f <|constrain|>json<|message|>not json", "<|channel|>commentary to=functions.f <|constrain|>json<|message|>not json", {}},
        {ToolCallFormat::Phi4, "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]<|/tool_call|>", "", {{"get_weather", R"({"city":"Paris"})"}}},
        {ToolCallFormat::Phi4, "<|tool_call|>[broken]<|/tool_call|>", "<|tool_call|>[broken]<|/tool_call|>", {}},
        {ToolCallFormat::None, "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>", "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>", {}},
    };
    return cases;
}

void tool_test_expect_reply(const ToolTestReplyCase& c, const std::string& content, const std::vector<ToolCall>& calls) {
    EXPECT_EQ(content, c.content);
    ASSERT_EQ(calls.size(), c.calls.size());
    for (size_t i = 0; i < calls.size(); ++i) {
        EXPECT_EQ(calls[i].name, c.calls[i].first);
        EXPECT_EQ(tool_test_json_of(calls[i].arguments_json), tool_test_json_of(c.calls[i].second)) << calls[i].arguments_json;
        if (i < c.ids.size()) {
            EXPECT_EQ(calls[i].id, c.ids[i]);
        }
    }
}

bool tool_test_is_generated_id(const std::string& id) {
    return id.size() == 29 && id.starts_with("call_") &&
           std::all_of(id.begin() + 5, id.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

TEST(ToolCallParse, EachFamilysReplyForms) {
    for (const ToolTestReplyCase& c : tool_test_reply_cases()) {
        SCOPED_TRACE(std::string(tool_call_format_name(c.format)) + ": " + c.reply);
        const ParsedToolReply parsed = parse_tool_calls(c.format, c.reply);
        tool_test_expect_reply(c, parsed.content, parsed.calls);
    }
}

TEST(ToolCallParse, IdsAreTheModelsOrFreshAndUnique) {
    const ParsedToolReply parsed = parse_tool_calls(
        ToolCallFormat::Hermes, "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>"
                                "<tool_call>{\"name\": \"g\", \"arguments\": {}, \"id\": \"mine\"}</tool_call><tool_call>{\"name\": \"g\", \"id\": \"mine\"}</tool_call>");
    ASSERT_EQ(parsed.calls.size(), 4u);
    EXPECT_TRUE(tool_test_is_generated_id(parsed.calls[0].id)) << parsed.calls[0].id;
    EXPECT_TRUE(tool_test_is_generated_id(parsed.calls[1].id)) << parsed.calls[1].id;
    EXPECT_NE(parsed.calls[0].id, parsed.calls[1].id);
    EXPECT_EQ(parsed.calls[2].id, "mine");
    EXPECT_TRUE(tool_test_is_generated_id(parsed.calls[3].id)) << "a repeated id is replaced: " << parsed.calls[3].id;
    // Another reply gets other ids.
    const ParsedToolReply again = parse_tool_calls(ToolCallFormat::Hermes, "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>");
    ASSERT_EQ(again.calls.size(), 1u);
    EXPECT_NE(again.calls[0].id, parsed.calls[0].id);
}

TEST(ToolCallParse, HostileArgumentsStayContent) {
    const std::string deep = std::string(10000, '[') + std::string(10000, ']');
    const std::string reply = "<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": " + deep + "}}</tool_call>";
    const ParsedToolReply parsed = parse_tool_calls(ToolCallFormat::Hermes, reply);
    EXPECT_TRUE(parsed.calls.empty());
    EXPECT_EQ(parsed.content, reply);
    // Bytes that are not UTF-8 inside a string do not throw.
    const ParsedToolReply bad = parse_tool_calls(ToolCallFormat::Hermes, "<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": \"\xff\"}}</tool_call>");
    EXPECT_LE(bad.calls.size(), 1u);
}

// ---- Streaming.

struct ToolTestStreamed {
    std::string content;
    std::vector<ToolCall> calls;
    size_t most_held = 0;  // content bytes fed and not yet released, beyond the whitespace at the end
};

ToolTestStreamed tool_test_stream_in(ToolCallFormat format, const std::string& reply, const std::vector<size_t>& cuts) {
    ToolCallStreamParser parser(format);
    ToolTestStreamed out;
    size_t from = 0;
    const auto take = [&](ToolCallStreamParser::Events events) {
        out.content += events.content;
        for (ToolCall& call : events.calls) out.calls.push_back(std::move(call));
    };
    for (size_t cut : cuts) {
        take(parser.feed(std::string_view(reply).substr(from, cut - from)));
        from = cut;
        if (out.calls.empty()) {
            const std::string fed = reply.substr(0, from);
            size_t trailing_space = 0;
            while (trailing_space < fed.size() && std::string(" \n\t\r").find(fed[fed.size() - 1 - trailing_space]) != std::string::npos)
                ++trailing_space;
            const size_t held = fed.size() - std::min(fed.size(), out.content.size());
            out.most_held = std::max(out.most_held, held > trailing_space ? held - trailing_space : 0);
        }
    }
    take(parser.feed(std::string_view(reply).substr(from)));
    take(parser.finish());
    return out;
}

TEST(ToolCallStream, EverySplitGivesTheWholeReplysParse) {
    std::mt19937 random(33);
    for (const ToolTestReplyCase& c : tool_test_reply_cases()) {
        SCOPED_TRACE(std::string(tool_call_format_name(c.format)) + ": " + c.reply);
        std::vector<size_t> every_byte;
        for (size_t i = 1; i < c.reply.size(); ++i) every_byte.push_back(i);
        const ToolTestStreamed bytewise = tool_test_stream_in(c.format, c.reply, every_byte);
        tool_test_expect_reply(c, bytewise.content, bytewise.calls);
        for (int trial = 0; trial < 20; ++trial) {
            std::vector<size_t> cuts;
            for (size_t i = 1; i < c.reply.size(); ++i)
                if (random() % 4 == 0) cuts.push_back(i);
            const ToolTestStreamed split = tool_test_stream_in(c.format, c.reply, cuts);
            tool_test_expect_reply(c, split.content, split.calls);
        }
        const ToolTestStreamed whole = tool_test_stream_in(c.format, c.reply, {});
        tool_test_expect_reply(c, whole.content, whole.calls);
    }
}

TEST(ToolCallStream, ContentWithoutACallIsHeldNoLongerThanAMarker) {
    const std::string text = "The answer is < 5, [x] and {y}: see <a href> or [TOOL] or <tool_cal and <|python, to=\n"
                             "a line   with spaces, <|tool and <|channe, then the end.";
    for (ToolCallFormat format : {ToolCallFormat::Hermes, ToolCallFormat::Llama31, ToolCallFormat::Mistral,
                                  ToolCallFormat::Harmony, ToolCallFormat::Phi4}) {
        SCOPED_TRACE(tool_call_format_name(format));
        std::vector<size_t> every_byte;
        for (size_t i = 1; i < text.size(); ++i) every_byte.push_back(i);
        const ToolTestStreamed streamed = tool_test_stream_in(format, text, every_byte);
        EXPECT_EQ(streamed.content, text);
        EXPECT_TRUE(streamed.calls.empty());
        // The longest marker of any family is 14 bytes (<|python_tag|>, <|/tool_call|>).
        EXPECT_LE(streamed.most_held, size_t(14));
        EXPECT_GT(streamed.most_held, size_t(0)) << "a marker's start was never held";
    }
    // With no marker in sight nothing waits at all.
    ToolCallStreamParser parser(ToolCallFormat::Hermes);
    EXPECT_EQ(parser.feed("plain words").content, "plain words");
    EXPECT_EQ(parser.feed(" and more").content, " and more");
}

TEST(ToolCallStream, ACallIsReportedWhenItsClosingMarkerArrives) {
    ToolCallStreamParser parser(ToolCallFormat::Hermes);
    EXPECT_EQ(parser.feed("Let me check. <tool_call>{\"name\": \"f\", ").content, "Let me check.");
    EXPECT_TRUE(parser.feed("\"arguments\": {\"a\": 1}}").calls.empty());
    const auto closed = parser.feed("</tool_call>");
    ASSERT_EQ(closed.calls.size(), 1u);
    EXPECT_EQ(closed.calls[0].name, "f");
    EXPECT_TRUE(tool_test_is_generated_id(closed.calls[0].id));
    const auto rest = parser.finish();
    EXPECT_TRUE(rest.content.empty());
    EXPECT_TRUE(rest.calls.empty());
}

} // namespace
} // namespace cflow
