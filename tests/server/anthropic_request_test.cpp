// POST /v1/messages bodies (the Anthropic Messages API) into the chat core's request: system as a
// string or text blocks, content blocks, tool_use / tool_result mapped to the template's tool
// messages, sampling fields and their ranges, tools and tool_choice, and what is refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cflow/server/anthropic_request.h"

namespace cflow::server {
namespace {

using nlohmann::json;

json minimal_messages_body() {
    return {{"model", "m"}, {"max_tokens", 32}, {"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
}

GenerationRequest parsed_ok(const json& body) {
    ParsedRequest parsed = parse_anthropic_messages_request(body.dump());
    EXPECT_TRUE(parsed.ok()) << parsed.error.message;
    return parsed.ok() ? *parsed.request : GenerationRequest{};
}

ApiError refused(const json& body) {
    ParsedRequest parsed = parse_anthropic_messages_request(body.dump());
    EXPECT_FALSE(parsed.ok()) << body.dump();
    return parsed.error;
}

TEST(AnthropicRequest, AMinimalRequestIsAChatWithItsTokenLimit) {
    const GenerationRequest request = parsed_ok(minimal_messages_body());
    EXPECT_EQ(request.kind, GenerationRequest::Kind::Chat);
    EXPECT_EQ(request.model, "m");
    ASSERT_TRUE(request.max_tokens);
    EXPECT_EQ(*request.max_tokens, 32);
    ASSERT_EQ(request.messages.size(), 1u);
    EXPECT_EQ(request.messages[0].role, "user");
    EXPECT_EQ(request.messages[0].content, "Hi");
    EXPECT_FALSE(request.stream);
    EXPECT_TRUE(request.tools.empty());
    EXPECT_EQ(request.tool_choice.kind, ToolChoice::Kind::Auto);
}

TEST(AnthropicRequest, SystemAsAStringOrTextBlocksLeadsTheConversation) {
    json body = minimal_messages_body();
    body["system"] = "Be brief.";
    GenerationRequest request = parsed_ok(body);
    ASSERT_EQ(request.messages.size(), 2u);
    EXPECT_EQ(request.messages[0].role, "system");
    EXPECT_EQ(request.messages[0].content, "Be brief.");

    body["system"] = json::array({{{"type", "text"}, {"text", "Be "}, {"cache_control", {{"type", "ephemeral"}}}},
                                  {{"type", "text"}, {"text", "brief."}}});
    request = parsed_ok(body);
    ASSERT_EQ(request.messages.size(), 2u);
    EXPECT_EQ(request.messages[0].content, "Be brief.");

    body["system"] = json::array({{{"type", "image"}}});
    EXPECT_EQ(refused(body).param, "system[0].type");
    body["system"] = 7;
    EXPECT_EQ(refused(body).param, "system");
}

TEST(AnthropicRequest, SamplingFieldsAndTheirRanges) {
    json body = minimal_messages_body();
    body.update({{"temperature", 0.25},
                 {"top_p", 0.5},
                 {"top_k", 7},
                 {"stop_sequences", {"END", ""}},
                 {"stream", true},
                 {"metadata", {{"user_id", "u-1"}}}});
    const GenerationRequest request = parsed_ok(body);
    EXPECT_FLOAT_EQ(request.sampling.temperature, 0.25f);
    EXPECT_FLOAT_EQ(request.sampling.top_p, 0.5f);
    EXPECT_EQ(request.sampling.top_k, 7);
    EXPECT_EQ(request.stop, std::vector<std::string>{"END"}) << "an empty stop sequence stops nothing";
    EXPECT_TRUE(request.stream);

    // Anthropic's temperature is 0-1 (OpenAI's goes to 2).
    for (const auto& [field, value] : std::vector<std::pair<std::string, json>>{{"temperature", 1.5},
                                                                                  {"top_p", -0.1},
                                                                                  {"top_k", -1},
                                                                                  {"top_k", 2.5},
                                                                                  {"stop_sequences", "END"},
                                                                                  {"stop_sequences", {1}},
                                                                                  {"stream", "yes"},
                                                                                  {"metadata", "x"},
                                                                                  {"max_tokens", 0},
                                                                                  {"max_tokens", "9"}}) {
        json wrong = minimal_messages_body();
        wrong[field] = value;
        EXPECT_EQ(refused(wrong).param, field) << value.dump();
    }
}

TEST(AnthropicRequest, ModelAndMaxTokensAreRequiredAsAnthropicRequires) {
    json body = minimal_messages_body();
    body.erase("max_tokens");
    ApiError error = refused(body);
    EXPECT_EQ(error.param, "max_tokens");
    EXPECT_EQ(error.status, 400);
    body = minimal_messages_body();
    body.erase("model");
    EXPECT_EQ(refused(body).param, "model");
    body = minimal_messages_body();
    body.erase("messages");
    EXPECT_EQ(refused(body).param, "messages");
    body["messages"] = json::array();
    EXPECT_EQ(refused(body).param, "messages");
}

TEST(AnthropicRequest, ContentBlocksJoinAndToolTurnsMapToToolMessages) {
    json body = minimal_messages_body();
    body["messages"] = json::array(
        {{{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Weather in "}}, {{"type", "text"}, {"text", "Oslo?"}}}}},
         {{"role", "assistant"},
          {"content",
           {{{"type", "thinking"}, {"thinking", "hm"}, {"signature", "s"}},
            {{"type", "text"}, {"text", "Checking."}},
            {{"type", "tool_use"}, {"id", "toolu_01"}, {"name", "get_weather"}, {"input", {{"city", "Oslo"}}}}}}},
         {{"role", "user"},
          {"content",
           {{{"type", "tool_result"}, {"tool_use_id", "toolu_01"}, {"content", "-3 C"}},
            {{"type", "tool_result"},
             {"tool_use_id", "toolu_01"},
             {"is_error", true},
             {"content", {{{"type", "text"}, {"text", "stale"}}, {{"type", "text"}, {"text", "cache"}}}}},
            {{"type", "text"}, {"text", "Thanks; and tomorrow?"}}}}}});
    const GenerationRequest request = parsed_ok(body);
    ASSERT_EQ(request.messages.size(), 5u);
    EXPECT_EQ(request.messages[0].role, "user");
    EXPECT_EQ(request.messages[0].content, "Weather in Oslo?");

    EXPECT_EQ(request.messages[1].role, "assistant");
    EXPECT_EQ(request.messages[1].content, "Checking.") << "thinking blocks are not part of the turn's text";
    const json calls = json::parse(request.messages[1].extra_json)["tool_calls"];
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0]["id"], "toolu_01");
    EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
    EXPECT_EQ(calls[0]["function"]["arguments"], json({{"city", "Oslo"}}));

    EXPECT_EQ(request.messages[2].role, "tool");
    EXPECT_EQ(request.messages[2].content, "-3 C");
    const json result_extra = json::parse(request.messages[2].extra_json);
    EXPECT_EQ(result_extra["tool_call_id"], "toolu_01");
    EXPECT_EQ(result_extra["name"], "get_weather") << "the result names the call it answers";
    EXPECT_EQ(request.messages[3].role, "tool");
    EXPECT_EQ(request.messages[3].content, "Error: stale\ncache");
    EXPECT_EQ(request.messages[4].role, "user");
    EXPECT_EQ(request.messages[4].content, "Thanks; and tomorrow?");
}

TEST(AnthropicRequest, MalformedOrUnsupportedMessagesAreRefusedByName) {
    const auto with_messages = [](json messages) {
        json body = minimal_messages_body();
        body["messages"] = std::move(messages);
        return body;
    };
    const json user_hi = {{"role", "user"}, {"content", "Hi"}};
    EXPECT_EQ(refused(with_messages({{{"role", "system"}, {"content", "x"}}})).param, "messages[0].role");
    EXPECT_EQ(refused(with_messages({{{"role", "user"}}})).param, "messages[0].content");
    EXPECT_EQ(refused(with_messages({{{"role", "user"}, {"content", 3}}})).param, "messages[0].content");
    EXPECT_EQ(refused(with_messages({{{"role", "user"}, {"content", {{{"type", "image"}, {"source", json::object()}}}}}})).param,
              "messages[0].content[0].type");
    EXPECT_EQ(refused(with_messages({{{"role", "user"}, {"content", {{{"type", "text"}}}}}})).param,
              "messages[0].content[0].text");
    EXPECT_EQ(refused(with_messages({{{"role", "user"}, {"content", {"plain"}}}})).param, "messages[0].content[0]");
    // A final assistant message asks to continue a prefill: refused, not answered as a new turn.
    EXPECT_EQ(refused(with_messages({user_hi, {{"role", "assistant"}, {"content", "The answer is"}}})).param,
              "messages[1].role");
    const json bad_use = {{"role", "assistant"},
                          {"content", {{{"type", "tool_use"}, {"id", "t1"}, {"name", "bad name"}, {"input", json::object()}}}}};
    EXPECT_EQ(refused(with_messages({user_hi, bad_use, user_hi})).param, "messages[1].content[0].name");
    const json no_input = {{"role", "assistant"}, {"content", {{{"type", "tool_use"}, {"id", "t1"}, {"name", "f"}, {"input", "{}"}}}}};
    EXPECT_EQ(refused(with_messages({user_hi, no_input, user_hi})).param, "messages[1].content[0].input");
    const json no_id = {{"role", "user"}, {"content", {{{"type", "tool_result"}, {"content", "x"}}}}};
    EXPECT_EQ(refused(with_messages({no_id})).param, "messages[0].content[0].tool_use_id");
    const json result_image = {{"role", "user"},
                               {"content", {{{"type", "tool_result"}, {"tool_use_id", "t"}, {"content", {{{"type", "image"}}}}}}}};
    EXPECT_EQ(refused(with_messages({result_image})).param, "messages[0].content[0].content[0].type");
    EXPECT_EQ(refused(json::array()).status, 400) << "the body must be an object";
    EXPECT_EQ(parse_anthropic_messages_request("{oops").error.status, 400);
    EXPECT_NE(parse_anthropic_messages_request(std::string(200, '[')).error.message.find("nests deeper"), std::string::npos);
}

TEST(AnthropicRequest, ToolsAndEveryToolChoice) {
    json body = minimal_messages_body();
    body["tools"] = {{{"name", "get_weather"},
                      {"description", "Weather now"},
                      {"input_schema", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}}}},
                     {{"name", "clock"}, {"input_schema", {{"type", "object"}}}, {"cache_control", {{"type", "ephemeral"}}}}};
    GenerationRequest request = parsed_ok(body);
    ASSERT_EQ(request.tools.size(), 2u);
    EXPECT_EQ(request.tools[0].name, "get_weather");
    EXPECT_EQ(request.tools[0].description, "Weather now");
    EXPECT_EQ(json::parse(request.tools[0].parameters_json)["required"], json({"city"}));
    EXPECT_EQ(request.tools[1].description, "");
    EXPECT_EQ(request.tool_choice.kind, ToolChoice::Kind::Auto);
    EXPECT_TRUE(request.parallel_tool_calls);

    body["tool_choice"] = {{"type", "any"}};
    EXPECT_EQ(parsed_ok(body).tool_choice.kind, ToolChoice::Kind::Required);
    body["tool_choice"] = {{"type", "none"}};
    EXPECT_EQ(parsed_ok(body).tool_choice.kind, ToolChoice::Kind::None);
    body["tool_choice"] = {{"type", "tool"}, {"name", "clock"}, {"disable_parallel_tool_use", true}};
    request = parsed_ok(body);
    EXPECT_EQ(request.tool_choice.kind, ToolChoice::Kind::Named);
    EXPECT_EQ(request.tool_choice.name, "clock");
    EXPECT_FALSE(request.parallel_tool_calls);
    body["tool_choice"] = {{"type", "auto"}};
    EXPECT_EQ(parsed_ok(body).tool_choice.kind, ToolChoice::Kind::Auto);
}

TEST(AnthropicRequest, BadToolsAndToolChoicesAreRefusedByName) {
    const json weather = {{"name", "get_weather"}, {"input_schema", {{"type", "object"}}}};
    const auto with = [&](json tools, json choice = nullptr) {
        json body = minimal_messages_body();
        body["tools"] = std::move(tools);
        if (!choice.is_null()) body["tool_choice"] = std::move(choice);
        return body;
    };
    EXPECT_EQ(refused(with("get_weather")).param, "tools");
    EXPECT_EQ(refused(with({{{"name", "a b"}, {"input_schema", {{"type", "object"}}}}})).param, "tools[0].name");
    EXPECT_EQ(refused(with({{{"name", std::string(65, 'a')}, {"input_schema", {{"type", "object"}}}}})).param, "tools[0].name");
    EXPECT_EQ(refused(with({{{"name", "f"}}})).param, "tools[0].input_schema");
    EXPECT_EQ(refused(with({{{"name", "f"}, {"input_schema", {{"type", "array"}}}}})).param, "tools[0].input_schema.type");
    EXPECT_EQ(refused(with({{{"name", "f"}, {"description", 3}, {"input_schema", {{"type", "object"}}}}})).param,
              "tools[0].description");
    EXPECT_EQ(refused(with({weather, weather})).param, "tools[1].name");
    const ApiError server_tool = refused(with({{{"type", "web_search_20250305"}, {"name", "web_search"}}}));
    EXPECT_EQ(server_tool.param, "tools[0].type");
    EXPECT_NE(server_tool.message.find("server tools"), std::string::npos);

    EXPECT_EQ(refused(with({weather}, "auto")).param, "tool_choice");
    EXPECT_EQ(refused(with({weather}, {{"type", "required"}})).param, "tool_choice.type");
    EXPECT_EQ(refused(with({weather}, {{"type", "tool"}})).param, "tool_choice.name");
    EXPECT_EQ(refused(with({weather}, {{"type", "tool"}, {"name", "clock"}})).param, "tool_choice.name");
    EXPECT_EQ(refused(with({weather}, {{"type", "auto"}, {"disable_parallel_tool_use", "yes"}})).param,
              "tool_choice.disable_parallel_tool_use");
    EXPECT_EQ(refused(with(json::array(), {{"type", "any"}})).param, "tool_choice") << "any without tools";
    json too_many = json::array();
    for (int i = 0; i < 129; ++i) too_many.push_back({{"name", "f" + std::to_string(i)}, {"input_schema", {{"type", "object"}}}});
    EXPECT_EQ(refused(with(too_many)).param, "tools");
}

TEST(AnthropicRequest, WhatTheServerCannotDoIsRefusedNotIgnored) {
    json body = minimal_messages_body();
    body["thinking"] = {{"type", "enabled"}, {"budget_tokens", 1024}};
    EXPECT_EQ(refused(body).param, "thinking");
    body["thinking"] = {{"type", "disabled"}};
    parsed_ok(body);
    body = minimal_messages_body();
    body["mcp_servers"] = {{{"type", "url"}, {"url", "https://x"}}};
    EXPECT_EQ(refused(body).param, "mcp_servers");
}

} // namespace
} // namespace cflow::server
