// The request parser: every field OpenAI clients send maps to the chat core's options, and every
// malformed or unsupported request is refused with status 400 and the field named.
#include <gtest/gtest.h>

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
        {"role":"assistant","content":null,"tool_calls":[{"id":"1"}]},{"role":"user","content":"again"}],
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
    EXPECT_EQ(chat_refused("{" + ok + R"(,"logprobs":true})").param, "logprobs");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"tools":[{"type":"function"}]})").param, "tools");
    // json_object is served (a grammar); a schema is not yet, and says what is.
    EXPECT_TRUE(chat_ok("{" + ok + R"(,"response_format":{"type":"json_object"}})").json_object);
    EXPECT_FALSE(chat_ok("{" + ok + R"(,"response_format":{"type":"text"}})").json_object);
    const ApiError schema = chat_refused("{" + ok + R"(,"response_format":{"type":"json_schema","json_schema":{"schema":{}}}})");
    EXPECT_EQ(schema.param, "response_format");
    EXPECT_NE(schema.message.find("json_object"), std::string::npos) << schema.message;
    EXPECT_EQ(chat_refused("{" + ok + R"(,"response_format":{"type":"yaml"}})").param, "response_format");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"response_format":"json_object"})").param, "response_format");
    EXPECT_EQ(chat_refused("{" + ok + R"(,"logit_bias":{"50256":-100}})").param, "logit_bias");
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
