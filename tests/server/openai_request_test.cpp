// The request parser: every field OpenAI clients send maps to the chat core's options, and every
// malformed or unsupported request is refused with status 400 and the field named.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cflow/server/openai_request.h"

namespace cflow::server {
namespace {

GenerationRequest chat_ok(const std::string& body) {
    ParsedRequest parsed = parse_chat_completion_request(body);
    EXPECT_TRUE(parsed.ok()) << body << " -> " << parsed.error.message;
    return parsed.ok() ? *parsed.request : GenerationRequest{};
}

ApiError chat_refused(const std::string& body) {
    ParsedRequest parsed = parse_chat_completion_request(body);
    EXPECT_FALSE(parsed.ok()) << body << " was accepted";
    EXPECT_EQ(parsed.error.status, 400) << body;
    EXPECT_FALSE(parsed.error.message.empty());
    return parsed.error;
}

TEST(OpenAiRequest, ChatFieldsMapToTheChatCoreOptions) {
    const GenerationRequest r = chat_ok(R"({"model":"m","messages":[{"role":"developer","content":"be brief"},
        {"role":"user","content":[{"type":"text","text":"hel"},{"type":"text","text":"lo"}]},
        {"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"again"}],
        "temperature":0.2,"top_p":0.5,"top_k":7,"min_p":0.1,"repeat_penalty":1.1,"max_tokens":33,"seed":-1,
        "stop":["\n\n","END"],"stream":true,"stream_options":{"include_usage":true},"n":1,"user":"u",
        "presence_penalty":0,"frequency_penalty":0.5,"logprobs":false,"tools":[],"response_format":{"type":"text"}})");
    EXPECT_EQ(r.kind, GenerationRequest::Kind::Chat);
    EXPECT_EQ(r.model, "m");
    ASSERT_EQ(r.messages.size(), 4u);
    EXPECT_EQ(r.messages[0].role, "system") << "developer is OpenAI's newer name for system";
    EXPECT_EQ(r.messages[1].content, "hello") << "text parts are joined";
    EXPECT_EQ(r.messages[2].content, "");
    EXPECT_NE(r.messages[2].extra_json.find("tool_calls"), std::string::npos);
    EXPECT_FLOAT_EQ(r.sampling.temperature, 0.2f);
    EXPECT_FLOAT_EQ(r.sampling.top_p, 0.5f);
    EXPECT_EQ(r.sampling.top_k, 7);
    EXPECT_FLOAT_EQ(r.sampling.min_p, 0.1f);
    EXPECT_FLOAT_EQ(r.sampling.repeat_penalty, 1.1f);
    EXPECT_EQ(r.max_tokens, 33);
    EXPECT_EQ(r.seed, ~uint64_t(0)) << "a negative seed is a valid 64-bit seed";
    EXPECT_EQ(r.stop, (std::vector<std::string>{"\n\n", "END"}));
    EXPECT_TRUE(r.stream);
    EXPECT_TRUE(r.include_usage);
}

TEST(OpenAiRequest, AbsentFieldsKeepTheChatCoreDefaults) {
    const GenerationRequest r = chat_ok(R"({"messages":[{"role":"user","content":"hi"}],"stop":"x","max_completion_tokens":5,
        "temperature":null})");
    const SamplingParams defaults;
    EXPECT_FLOAT_EQ(r.sampling.temperature, defaults.temperature) << "null is absent";
    EXPECT_EQ(r.sampling.top_k, defaults.top_k);
    EXPECT_FALSE(r.seed.has_value());
    EXPECT_FALSE(r.stream);
    EXPECT_EQ(r.stop, std::vector<std::string>{"x"}) << "a single string";
    EXPECT_EQ(r.max_tokens, 5) << "max_completion_tokens is the newer name";
    EXPECT_TRUE(r.model.empty());
}

TEST(OpenAiRequest, MalformedBodiesAndWrongTypesNameTheField) {
    EXPECT_NE(chat_refused("{\"messages\": [").message.find("not valid JSON"), std::string::npos);
    EXPECT_NE(chat_refused("[1]").message.find("JSON object"), std::string::npos);
    EXPECT_NE(chat_refused("111111111111111111111111e11511").message.find("not valid JSON"), std::string::npos)
        << "a number beyond double is out_of_range in nlohmann, not a parse_error (found by the fuzzer)";
    EXPECT_EQ(chat_refused("{}").param, "messages");
    EXPECT_EQ(chat_refused(R"({"messages":[]})").param, "messages");
    EXPECT_EQ(chat_refused(R"({"messages":{"role":"user"}})").param, "messages");
    EXPECT_EQ(chat_refused(R"({"messages":[{"role":"pirate","content":"arr"}]})").param, "messages[0].role");
    EXPECT_EQ(chat_refused(R"({"messages":[{"role":"user","content":5}]})").param, "messages[0].content");
    EXPECT_EQ(chat_refused(R"({"messages":[{"role":"user"}]})").param, "messages[0].content");
    EXPECT_EQ(chat_refused(R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]})").param,
              "messages[0].content");
    const std::string ok = R"("messages":[{"role":"user","content":"hi"}])";
    EXPECT_EQ(chat_refused("{" + ok + R"(,"temperature":"hot"})").param, "temperature");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"temperature":3})").param, "temperature");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"top_p":-0.1})").param, "top_p");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"max_tokens":0})").param, "max_tokens");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"max_tokens":2.5})").param, "max_tokens");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"max_tokens":"10"})").param, "max_tokens");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"seed":"7"})").param, "seed");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"stream":"yes"})").param, "stream");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"stop":[1]})").param, "stop");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"stop":{}})").param, "stop");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"model":7})").param, "model");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"stream_options":{"include_usage":1}})").param, "stream_options.include_usage");
    std::string many_stops = "{" + ok + R"(,"stop":[)";
    for (int i = 0; i < 17; ++i) many_stops += std::string(i ? "," : "") + "\"s" + std::to_string(i) + "\"";
    EXPECT_EQ(chat_refused(many_stops + "]}").param, "stop");
}

TEST(OpenAiRequest, WhatTheServerCannotDoIsRefusedNotIgnored) {
    const std::string ok = R"("messages":[{"role":"user","content":"hi"}])";
    EXPECT_EQ(chat_refused("{" + ok + R"(,"n":2})").param, "n");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"tools":[{"type":"function"}]})").param, "tools[0].function");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"functions":[{"name":"f"}]})").param, "functions");
    // json_object and json_schema are served (grammars); the schema travels as its JSON text.
    EXPECT_TRUE(chat_ok("{" + ok + R"(,"response_format":{"type":"json_object"}})").json_object);
    EXPECT_FALSE(chat_ok("{" + ok + R"(,"response_format":{"type":"text"}})").json_object);
    EXPECT_TRUE(chat_ok("{" + ok + R"(,"response_format":{"type":"text"}})").json_schema.empty());
    const GenerationRequest schema = chat_ok("{" + ok + R"(,"response_format":{"type":"json_schema","json_schema":{"name":"person",
        "strict":true,"schema":{"type":"object","properties":{"age":{"type":"integer"}},"required":["age"]}}}})");
    EXPECT_EQ(nlohmann::json::parse(schema.json_schema),
              nlohmann::json::parse(R"({"type":"object","properties":{"age":{"type":"integer"}},"required":["age"]})"));
    EXPECT_FALSE(schema.json_object);
    EXPECT_EQ(chat_refused("{" + ok + R"(,"response_format":{"type":"json_schema"}})").param, "response_format.json_schema");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"response_format":{"type":"json_schema","json_schema":{"schema":{}}}})").param,
              "response_format.json_schema.name");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"response_format":{"type":"json_schema","json_schema":{"name":"x"}}})").param,
              "response_format.json_schema.schema");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":"{}"}}})").param,
              "response_format.json_schema.schema");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":"yes","schema":{}}}})").param,
              "response_format.json_schema.strict");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"response_format":{"type":"yaml"}})").param, "response_format");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"response_format":"json_object"})").param, "response_format");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"logit_bias":{"50256":-100}})").param, "logit_bias");
}

TEST(OpenAiRequest, LogprobsAndTopLogprobsAreReadWithOpenAisLimits) {
    const std::string ok = R"("messages":[{"role":"user","content":"hi"}])";
    const GenerationRequest plain = chat_ok("{" + ok + "}");
    EXPECT_FALSE(plain.logprobs);
    const GenerationRequest chosen_only = chat_ok("{" + ok + R"(,"logprobs":true})");
    EXPECT_TRUE(chosen_only.logprobs);
    EXPECT_EQ(chosen_only.top_logprobs, 0u);
    const GenerationRequest twenty = chat_ok("{" + ok + R"(,"logprobs":true,"top_logprobs":20})");
    EXPECT_EQ(twenty.top_logprobs, 20u);
    EXPECT_EQ(chat_refused("{" + ok + R"(,"logprobs":true,"top_logprobs":21})").param, "top_logprobs");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"logprobs":true,"top_logprobs":-1})").param, "top_logprobs");
    // OpenAI refuses top_logprobs without logprobs rather than ignoring it.
    const ApiError alone = chat_refused("{" + ok + R"(,"top_logprobs":3})");
    EXPECT_EQ(alone.param, "top_logprobs");
    EXPECT_NE(alone.message.find("'logprobs': true"), std::string::npos) << alone.message;
    EXPECT_EQ(chat_refused("{" + ok + R"(,"logprobs":3})").param, "logprobs");  // chat's is a boolean
    // The legacy completions API: logprobs is the number of alternatives, 0..5.
    ParsedRequest three = parse_completion_request(R"({"prompt":"x","logprobs":3})");
    ASSERT_TRUE(three.ok());
    EXPECT_TRUE(three.request->logprobs);
    EXPECT_EQ(three.request->top_logprobs, 3u);
    ParsedRequest zero = parse_completion_request(R"({"prompt":"x","logprobs":0})");
    ASSERT_TRUE(zero.ok());
    EXPECT_TRUE(zero.request->logprobs);
    EXPECT_EQ(zero.request->top_logprobs, 0u);
    ParsedRequest six = parse_completion_request(R"({"prompt":"x","logprobs":6})");
    ASSERT_FALSE(six.ok());
    EXPECT_EQ(six.error.param, "logprobs");
}

TEST(OpenAiRequest, ToolsAndToolChoiceAreRead) {
    const GenerationRequest r = chat_ok(R"({"messages":[{"role":"user","content":"weather?"}],
        "tools":[{"type":"function","function":{"name":"get_weather","description":"the weather in a city",
                  "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true}},
                 {"type":"function","function":{"name":"now-2"}}],
        "tool_choice":{"type":"function","function":{"name":"now-2"}},"parallel_tool_calls":false})");
    ASSERT_EQ(r.tools.size(), 2u);
    EXPECT_EQ(r.tools[0].name, "get_weather");
    EXPECT_EQ(r.tools[0].description, "the weather in a city");
    const nlohmann::json parameters = nlohmann::json::parse(r.tools[0].parameters_json);
    EXPECT_EQ(parameters["required"][0], "city");
    EXPECT_EQ(r.tools[1].name, "now-2");
    EXPECT_TRUE(r.tools[1].parameters_json.empty()) << "no parameters: any object";
    EXPECT_EQ(r.tool_choice.kind, ToolChoice::Kind::Named);
    EXPECT_EQ(r.tool_choice.name, "now-2");
    EXPECT_FALSE(r.parallel_tool_calls);

    const std::string tools = R"("messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}])";
    EXPECT_EQ(chat_ok("{" + tools + "}").tool_choice.kind, ToolChoice::Kind::Auto) << "auto is the default with tools";
    EXPECT_TRUE(chat_ok("{" + tools + "}").parallel_tool_calls);
    EXPECT_EQ(chat_ok("{" + tools + R"(,"tool_choice":"auto"})").tool_choice.kind, ToolChoice::Kind::Auto);
    EXPECT_EQ(chat_ok("{" + tools + R"(,"tool_choice":"none"})").tool_choice.kind, ToolChoice::Kind::None);
    EXPECT_EQ(chat_ok("{" + tools + R"(,"tool_choice":"required"})").tool_choice.kind, ToolChoice::Kind::Required);
    EXPECT_EQ(chat_ok(R"({"messages":[{"role":"user","content":"hi"}],"tool_choice":"none"})").tool_choice.kind,
              ToolChoice::Kind::None) << "none without tools is what OpenAI accepts too";
}

TEST(OpenAiRequest, MalformedToolsAreRefusedNamingTheField) {
    const std::string ok = R"("messages":[{"role":"user","content":"hi"}])";
    const auto tools_with = [&](const std::string& tool) { return "{" + ok + R"(,"tools":[)" + tool + "]}"; };
    EXPECT_EQ(chat_refused("{" + ok + R"(,"tools":{"type":"function"}})").param, "tools");
    EXPECT_EQ(chat_refused(tools_with("7")).param, "tools[0]");
    EXPECT_EQ(chat_refused(tools_with(R"({"type":"web_search"})")).param, "tools[0].type");
    EXPECT_EQ(chat_refused(tools_with(R"({"type":"function","function":{"description":"no name"}})")).param,
              "tools[0].function.name");
    for (const char* name : {"", "has space", "dot.ted", "sch\u00f6n", "x/y"}) {
        const std::string tool = R"({"type":"function","function":{"name":")" + std::string(name) + R"("}})";
        EXPECT_EQ(chat_refused(tools_with(tool)).param, "tools[0].function.name") << name;
    }
    const std::string name65(65, 'a');
    EXPECT_EQ(chat_refused(tools_with(R"({"type":"function","function":{"name":")" + name65 + R"("}})")).param,
              "tools[0].function.name");
    const std::string name64(64, 'a');
    EXPECT_EQ(chat_ok(tools_with(R"({"type":"function","function":{"name":")" + name64 + R"("}})")).tools[0].name, name64);
    EXPECT_EQ(chat_refused(tools_with(R"({"type":"function","function":{"name":"f","parameters":"{}"}})")).param,
              "tools[0].function.parameters");
    EXPECT_EQ(chat_refused(tools_with(R"({"type":"function","function":{"name":"f","description":3}})")).param,
              "tools[0].function.description");
    EXPECT_EQ(chat_refused(tools_with(R"({"type":"function","function":{"name":"f","strict":"yes"}})")).param,
              "tools[0].function.strict");
    EXPECT_EQ(chat_refused(tools_with(R"({"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}})"))
                  .param, "tools[1].function.name") << "names are unique";
    std::string many = "{" + ok + R"(,"tools":[)";
    for (int i = 0; i < 129; ++i) many += std::string(i ? "," : "") + R"({"type":"function","function":{"name":"f)" + std::to_string(i) + R"("}})";
    EXPECT_EQ(chat_refused(many + "]}").param, "tools");

    const std::string tools = ok + R"(,"tools":[{"type":"function","function":{"name":"f"}}])";
    const ApiError unknown = chat_refused("{" + tools + R"(,"tool_choice":{"type":"function","function":{"name":"g"}}})");
    EXPECT_EQ(unknown.param, "tool_choice");
    EXPECT_NE(unknown.message.find("\"g\""), std::string::npos) << unknown.message;
    EXPECT_EQ(chat_refused("{" + tools + R"(,"tool_choice":"any"})").param, "tool_choice");
    EXPECT_EQ(chat_refused("{" + tools + R"(,"tool_choice":{"type":"function"}})").param, "tool_choice");
    EXPECT_EQ(chat_refused("{" + tools + R"(,"tool_choice":5})").param, "tool_choice");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"tool_choice":"required"})").param, "tool_choice") << "required needs tools";
    EXPECT_EQ(chat_refused("{" + tools + R"(,"parallel_tool_calls":"no"})").param, "parallel_tool_calls");
    ParsedRequest completion = parse_completion_request(R"({"prompt":"x","tools":[{"type":"function","function":{"name":"f"}}]})");
    ASSERT_FALSE(completion.ok());
    EXPECT_EQ(completion.error.param, "tools");
}

TEST(OpenAiRequest, ToolCallsAndToolResultsInMessagesReachTheTemplate) {
    const GenerationRequest r = chat_ok(R"({"messages":[{"role":"user","content":"weather in Oslo?"},
        {"role":"assistant","content":null,"tool_calls":[
            {"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Oslo\"}"}},
            {"id":"call_2","type":"function","function":{"name":"now","arguments":""}}]},
        {"role":"tool","tool_call_id":"call_1","content":"-3 C"},
        {"role":"tool","tool_call_id":"call_2","name":"now","content":[{"type":"text","text":"noon"}]}]})");
    ASSERT_EQ(r.messages.size(), 4u);
    // Templates index the arguments as a mapping (Qwen's `| tojson`, Llama's items()): an object, not the string.
    const nlohmann::json calls = nlohmann::json::parse(r.messages[1].extra_json);
    ASSERT_EQ(calls["tool_calls"].size(), 2u);
    EXPECT_EQ(calls["tool_calls"][0]["id"], "call_1");
    EXPECT_EQ(calls["tool_calls"][0]["function"]["name"], "get_weather");
    EXPECT_EQ(calls["tool_calls"][0]["function"]["arguments"], (nlohmann::json{{"city", "Oslo"}}));
    EXPECT_EQ(calls["tool_calls"][1]["function"]["arguments"], nlohmann::json::object()) << "an empty string: no arguments";
    const nlohmann::json result = nlohmann::json::parse(r.messages[2].extra_json);
    EXPECT_EQ(result["tool_call_id"], "call_1");
    EXPECT_EQ(r.messages[2].content, "-3 C");
    EXPECT_EQ(nlohmann::json::parse(r.messages[3].extra_json)["name"], "now");
    EXPECT_EQ(r.messages[3].content, "noon");

    const auto with_arguments = [](const std::string& arguments) {
        return R"({"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function",)"
               R"("function":{"name":"f","arguments":)" + arguments + "}}]}]}";
    };
    EXPECT_EQ(nlohmann::json::parse(chat_ok(with_arguments(R"({"a":1})")).messages[0].extra_json)["tool_calls"][0]["function"]["arguments"]["a"], 1)
        << "an object where OpenAI sends a string is taken as it is";
    const ApiError not_json = chat_refused(with_arguments(R"("{city: Oslo")"));
    EXPECT_EQ(not_json.param, "messages[0].tool_calls[0].function.arguments");
    EXPECT_NE(not_json.message.find("JSON"), std::string::npos) << not_json.message;
    EXPECT_EQ(chat_refused(with_arguments(R"("[1,2]")")).param, "messages[0].tool_calls[0].function.arguments")
        << "arguments are an object";
    EXPECT_EQ(chat_refused(with_arguments("7")).param, "messages[0].tool_calls[0].function.arguments");
    const std::string deep = "\"" + std::string(100000, '[') + "\"";
    EXPECT_EQ(chat_refused(with_arguments(deep)).param, "messages[0].tool_calls[0].function.arguments")
        << "the body's depth check cannot see inside the string";
    EXPECT_EQ(chat_refused(R"({"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"arguments":"{}"}}]}]})")
                  .param, "messages[0].tool_calls[0].function.name");
    EXPECT_EQ(chat_refused(R"({"messages":[{"role":"assistant","tool_calls":{"id":"c"}}]})").param, "messages[0].tool_calls");
    EXPECT_EQ(chat_refused(R"({"messages":[{"role":"user","content":"x","tool_calls":[]}]})").param, "messages[0].tool_calls");
    EXPECT_EQ(chat_refused(R"({"messages":[{"role":"tool","content":"x"}]})").param, "messages[0].tool_call_id");
    EXPECT_EQ(chat_refused(R"({"messages":[{"role":"tool","tool_call_id":5,"content":"x"}]})").param, "messages[0].tool_call_id");
}

TEST(OpenAiRequest, DeepNestingIsRefusedBeforeParsing) {
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    EXPECT_NE(chat_refused(deep).message.find("nests deeper"), std::string::npos);
    std::string nested = R"({"messages":[{"role":"user","content":"hi"}],"metadata":)";
    for (int i = 0; i < 70; ++i) nested += "[";
    for (int i = 0; i < 70; ++i) nested += "]";
    EXPECT_NE(chat_refused(nested + "}").message.find("64 levels"), std::string::npos);
    std::string shallow = R"({"messages":[{"role":"user","content":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}]})";
    EXPECT_TRUE(parse_chat_completion_request(shallow).ok()) << "brackets inside strings do not count";
}

TEST(OpenAiRequest, CompletionPromptsAsTextOrTokenIds) {
    ParsedRequest text = parse_completion_request(R"({"prompt":"Once upon","max_tokens":4,"echo":false,"suffix":null})");
    ASSERT_TRUE(text.ok()) << text.error.message;
    EXPECT_EQ(text.request->kind, GenerationRequest::Kind::Completion);
    EXPECT_EQ(text.request->prompt, "Once upon");
    EXPECT_EQ(text.request->max_tokens, 4);
    ParsedRequest defaults = parse_completion_request(R"({"prompt":["Once"]})");
    ASSERT_TRUE(defaults.ok());
    EXPECT_EQ(defaults.request->max_tokens, 16) << "the OpenAI default for completions";
    ParsedRequest ids = parse_completion_request(R"({"prompt":[1,2,3]})");
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids.request->prompt_ids, (std::vector<int32_t>{1, 2, 3}));
    ParsedRequest nested = parse_completion_request(R"({"prompt":[[5,6]]})");
    ASSERT_TRUE(nested.ok());
    EXPECT_EQ(*nested.request->prompt_ids, (std::vector<int32_t>{5, 6}));
    for (const char* bad : {R"({})", R"({"prompt":7})", R"({"prompt":["a","b"]})", R"({"prompt":[1,-2]})",
                            R"({"prompt":"x","echo":true})", R"({"prompt":"x","suffix":"y"})", R"({"prompt":"x","best_of":3})"}) {
        ParsedRequest refused = parse_completion_request(bad);
        EXPECT_FALSE(refused.ok()) << bad;
        EXPECT_EQ(refused.error.status, 400) << bad;
    }
}

} // namespace
} // namespace cflow::server
