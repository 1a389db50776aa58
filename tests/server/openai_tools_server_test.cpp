// Tools over loopback HTTP, without Node: the synthetic chat model served with the built-in ChatML
// template (its tools section writes Hermes <tool_call> blocks). Its weights are random, so only
// the grammar makes a required call well formed; the server reads it back into tool_calls, whole
// and streamed alike. The fixture's own template renders no tools: a required call is refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server_test_fixture.h"

namespace cflow::server {
namespace {

using nlohmann::json;

// Short: the synthetic model's 1024-token context holds ChatML's tools section byte by byte, and
// leaves about 200 tokens for the calls (a longer schema left 61, and every reply ran out).
const json kToolsForServer = json::parse(R"([
  {"type": "function", "function": {"name": "w", "parameters": {"type": "object",
    "properties": {"u": {"enum": ["c", "f"]}}, "required": ["u"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "t", "parameters": {"type": "object",
    "properties": {"z": {"enum": ["U", "C"]}}, "required": ["z"], "additionalProperties": false}}}])");

ServerOptions chatml_tools_options() {
    ServerOptions options;
    options.template_choice = {TemplateChoice::Kind::Builtin, "chatml"};
    return options;
}

// name + arguments of each call, arguments checked against kToolsForServer's schemas.
std::vector<std::pair<std::string, std::string>> checked_calls(const json& calls) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const json& call : calls) {
        EXPECT_EQ(call["type"], "function");
        EXPECT_FALSE(call["id"].get<std::string>().empty());
        const std::string name = call["function"]["name"];
        const json arguments = json::parse(call["function"]["arguments"].get<std::string>());
        if (name == "w") {
            EXPECT_EQ(arguments.size(), 1u) << arguments;
            EXPECT_TRUE(arguments["u"] == "c" || arguments["u"] == "f") << arguments;
        } else {
            EXPECT_EQ(name, "t");
            EXPECT_EQ(arguments.size(), 1u) << arguments;
            EXPECT_TRUE(arguments["z"] == "U" || arguments["z"] == "C") << arguments;
        }
        out.emplace_back(name, call["function"]["arguments"].get<std::string>());
    }
    return out;
}

std::vector<std::pair<std::string, std::string>> streamed_calls(const std::string& body, std::string& finish) {
    json calls = json::array();
    for (const std::string& data : parse_sse_events(body)) {
        if (data == "[DONE]") continue;
        const json chunk = json::parse(data);
        for (const json& choice : chunk["choices"]) {
            if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
            for (const json& delta : choice["delta"].value("tool_calls", json::array())) {
                const size_t index = delta["index"];
                if (index == calls.size())
                    calls.push_back({{"id", delta["id"]}, {"type", delta["type"]},
                                     {"function", {{"name", delta["function"]["name"]}, {"arguments", ""}}}});
                if (index >= calls.size()) continue;
                calls[index]["function"]["arguments"] = calls[index]["function"]["arguments"].get<std::string>() +
                                                        delta["function"]["arguments"].get<std::string>();
            }
        }
    }
    return checked_calls(calls);
}

TEST(OpenAiToolsServer, RequiredAndNamedCallsAreWellFormedWholeAndStreamed) {
    TestServer served(chatml_tools_options());
    ASSERT_TRUE(served.server);
    int calls_seen = 0;
    for (uint64_t seed : {1, 2, 3}) {
        for (const json& choice : {json("required"), json{{"type", "function"}, {"function", {{"name", "t"}}}}}) {
            const json extra = {{"tools", kToolsForServer}, {"tool_choice", choice}};
            auto whole = served.post("/v1/chat/completions", chat_body(200, seed, false, extra));
            ASSERT_TRUE(whole);
            ASSERT_EQ(whole->status, 200) << whole->body;
            const json reply = json::parse(whole->body)["choices"][0];
            if (reply["finish_reason"] == "length") continue;  // the context ran out first: nothing to compare
            ASSERT_EQ(reply["finish_reason"], "tool_calls") << whole->body;
            EXPECT_TRUE(reply["message"]["content"].is_null()) << whole->body;
            const auto whole_calls = checked_calls(reply["message"]["tool_calls"]);
            ASSERT_FALSE(whole_calls.empty());
            if (choice.is_object()) {
                for (const auto& call : whole_calls) {
                    EXPECT_EQ(call.first, "t");
                }
            }
            calls_seen += int(whole_calls.size());

            auto stream = served.post("/v1/chat/completions", chat_body(200, seed, true, extra));
            ASSERT_TRUE(stream);
            std::string finish;
            EXPECT_EQ(streamed_calls(stream->body, finish), whole_calls) << "seed " << seed;
            EXPECT_EQ(finish, "tool_calls");
        }
    }
    EXPECT_GE(calls_seen, 3) << "most replies end inside the context";
}

TEST(OpenAiToolsServer, ACallAndItsResultAreRenderedForTheNextTurn) {
    TestServer served(chatml_tools_options());
    ASSERT_TRUE(served.server);
    const json base = {{"tools", kToolsForServer}, {"tool_choice", "none"}};
    auto without = served.post("/v1/chat/completions", chat_body(2, 5, false, base));
    ASSERT_TRUE(without);
    ASSERT_EQ(without->status, 200) << without->body;
    json body = json::parse(chat_body(2, 5, false, base));
    body["messages"].push_back({{"role", "assistant"}, {"content", nullptr},
                                {"tool_calls", {{{"id", "call_1"}, {"type", "function"},
                                                 {"function", {{"name", "t"}, {"arguments", "{\"z\":\"U\"}"}}}}}}});
    body["messages"].push_back({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "12:00"}});
    auto with = served.post("/v1/chat/completions", body.dump());
    ASSERT_TRUE(with);
    ASSERT_EQ(with->status, 200) << with->body;
    const int before = json::parse(without->body)["usage"]["prompt_tokens"];
    const int after = json::parse(with->body)["usage"]["prompt_tokens"];
    EXPECT_GT(after, before + int(std::string("t{\"z\": \"U\"}12:00").size()) / 2)
        << "the call and the result are in the prompt";
}

TEST(OpenAiToolsServer, ATemplateWithoutToolsRefusesARequiredCall) {
    TestServer served;  // the fixture's ChatML template reads no `tools`
    ASSERT_TRUE(served.server);
    auto required = served.post("/v1/chat/completions", chat_body(4, 1, false, {{"tools", kToolsForServer}, {"tool_choice", "required"}}));
    ASSERT_TRUE(required);
    EXPECT_EQ(required->status, 400);
    const json error = json::parse(required->body)["error"];
    EXPECT_EQ(error["param"], "tool_choice");
    EXPECT_NE(error["message"].get<std::string>().find("template"), std::string::npos) << error;
    auto automatic = served.post("/v1/chat/completions", chat_body(4, 1, false, {{"tools", kToolsForServer}}));
    ASSERT_TRUE(automatic);
    ASSERT_EQ(automatic->status, 200) << automatic->body;
    EXPECT_TRUE(json::parse(automatic->body)["choices"][0]["message"]["content"].is_string());
}

} // namespace
} // namespace cflow::server
