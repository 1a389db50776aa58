// The OpenAI response shapes of tool calls: message.tool_calls in a whole body (content null when
// the reply is only calls) and the delta.tool_calls chunks a client reassembles per index.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cflow/server/openai_response.h"

namespace cflow::server {
namespace {

using nlohmann::json;

const ResponseHeader kResponseHeader{"chatcmpl-test", 1700000000, "m"};

TEST(OpenAiResponse, ToolCallsInTheWholeBody) {
    const std::vector<ToolCall> calls = {{"call_a", "get_weather", R"({"city":"Oslo"})"}, {"call_b", "now", "{}"}};
    const json body = json::parse(chat_completion_body(kResponseHeader, "", "tool_calls", {5, 7}, calls));
    const json& choice = body["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "tool_calls");
    const json& message = choice["message"];
    EXPECT_EQ(message["role"], "assistant");
    EXPECT_TRUE(message["content"].is_null()) << "only calls: content is null, as OpenAI sends it";
    ASSERT_EQ(message["tool_calls"].size(), 2u);
    EXPECT_EQ(message["tool_calls"][0]["id"], "call_a");
    EXPECT_EQ(message["tool_calls"][0]["type"], "function");
    EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
    ASSERT_TRUE(message["tool_calls"][0]["function"]["arguments"].is_string()) << "arguments are a JSON string";
    EXPECT_EQ(json::parse(message["tool_calls"][0]["function"]["arguments"].get<std::string>()), (json{{"city", "Oslo"}}));
    EXPECT_EQ(message["tool_calls"][1]["function"]["name"], "now");
    EXPECT_EQ(body["usage"]["total_tokens"], 12);

    const json mixed = json::parse(chat_completion_body(kResponseHeader, "Let me look.", "tool_calls", {}, calls));
    EXPECT_EQ(mixed["choices"][0]["message"]["content"], "Let me look.") << "text beside calls is kept";
    const json plain = json::parse(chat_completion_body(kResponseHeader, "", "stop", {}));
    EXPECT_EQ(plain["choices"][0]["message"]["content"], "") << "no calls: an empty reply is an empty string";
    EXPECT_FALSE(plain["choices"][0]["message"].contains("tool_calls"));
}

TEST(OpenAiResponse, StreamedToolCallDeltasReassembleToTheCall) {
    const ToolCall call{"call_x", "get_weather", R"({"city":"Oslo","days":[1,2]})"};
    std::vector<std::string> lines = {chat_tool_call_head_chunk(kResponseHeader, 1, call)};
    const std::string_view arguments = call.arguments_json;
    lines.push_back(chat_tool_call_arguments_chunk(kResponseHeader, 1, arguments.substr(0, 9)));
    lines.push_back(chat_tool_call_arguments_chunk(kResponseHeader, 1, arguments.substr(9)));

    // What the openai client does: the first delta of an index carries id, type and name, the
    // arguments of every delta of that index are appended.
    std::map<int, json> assembled;
    for (const std::string& text : lines) {
        const json chunk = json::parse(text);
        EXPECT_EQ(chunk["object"], "chat.completion.chunk");
        EXPECT_EQ(chunk["id"], "chatcmpl-test");
        const json& choice = chunk["choices"][0];
        EXPECT_TRUE(choice["finish_reason"].is_null());
        EXPECT_FALSE(choice["delta"].contains("content"));
        ASSERT_EQ(choice["delta"]["tool_calls"].size(), 1u);
        const json& delta = choice["delta"]["tool_calls"][0];
        json& into = assembled[delta["index"].get<int>()];
        if (!into.contains("id")) {
            ASSERT_TRUE(delta.contains("id")) << "the first delta of a call carries its id: " << text;
            into = {{"id", delta["id"]}, {"type", delta["type"]}, {"name", delta["function"]["name"]}, {"arguments", ""}};
        } else {
            EXPECT_FALSE(delta.contains("id")) << "later deltas carry only arguments";
        }
        into["arguments"] = into["arguments"].get<std::string>() + delta["function"]["arguments"].get<std::string>();
    }
    ASSERT_EQ(assembled.size(), 1u);
    EXPECT_EQ(assembled[1]["id"], "call_x");
    EXPECT_EQ(assembled[1]["type"], "function");
    EXPECT_EQ(assembled[1]["name"], "get_weather");
    EXPECT_EQ(assembled[1]["arguments"], call.arguments_json);
}

} // namespace
} // namespace cflow::server
