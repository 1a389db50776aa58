// POST /v1/messages over loopback HTTP on the synthetic chat model: a message and its event stream
// agree (greedy), the stream's events come in Anthropic's order with matching `event:` names, stop
// reasons, errors in Anthropic's shape, the key as x-api-key, and a tool call forced by tool_choice
// through a template that renders tools, answered again after its tool_result.
#include <gtest/gtest.h>
#include <httplib.h>

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cflow/server/openai_server.h"
#include "server_test_fixture.h"

namespace cflow::server {
namespace {

using nlohmann::json;

// ChatML with a tools section and Hermes' <tool_call> markers (what Qwen 2.5's template writes).
const char* const kToolsChatMl =
    "{% if tools %}<|im_start|>system\n<tools>{% for t in tools %}{{ t | tojson }}{% endfor %}</tools>"
    "Call one as <tool_call>{\"name\": ..., \"arguments\": ...}</tool_call><|im_end|>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>{\"name\": \"{{ c.function.name }}\", \"arguments\": "
    "{{ c.function.arguments | tojson }}}</tool_call>{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

json messages_request(int max_tokens, bool stream, const json& extra = json::object()) {
    json body = {{"model", "chat-model"},
                 {"max_tokens", max_tokens},
                 {"system", "You are terse."},
                 {"messages", {{{"role", "user"}, {"content", "Say something."}}}},
                 {"temperature", 0},
                 {"stream", stream}};
    body.update(extra);
    return body;
}

const httplib::Headers kAnthropicHeaders = {{"anthropic-version", "2023-06-01"}};

struct AnthropicEvent {
    std::string name;
    json data;
};

// The `event:` name and the data of each server-sent event, in order.
std::vector<AnthropicEvent> read_anthropic_events(const std::string& stream) {
    std::vector<AnthropicEvent> events;
    AnthropicEvent current;
    size_t from = 0;
    while (from < stream.size()) {
        size_t end = stream.find('\n', from);
        if (end == std::string::npos) end = stream.size();
        const std::string line = stream.substr(from, end - from);
        from = end + 1;
        if (line.empty()) {
            if (!current.name.empty() || !current.data.is_null()) events.push_back(std::move(current));
            current = {};
        } else if (line.rfind("event: ", 0) == 0) {
            current.name = line.substr(7);
        } else if (line.rfind("data: ", 0) == 0) {
            current.data = json::parse(line.substr(6));
        } else {
            ADD_FAILURE() << "unexpected line: " << line;
        }
    }
    return events;
}

// What a stream adds up to, as the SDKs accumulate it.
struct AccumulatedMessage {
    std::string text;
    std::vector<json> tool_uses;  // each with "input" parsed from its input_json_deltas
    json message_delta;
    std::vector<std::string> names;
};

AccumulatedMessage accumulate(const std::vector<AnthropicEvent>& events) {
    AccumulatedMessage message;
    std::vector<std::string> partial_json;
    for (const AnthropicEvent& event : events) {
        message.names.push_back(event.name);
        EXPECT_EQ(event.data["type"], event.name) << "each event's data names its event";
        if (event.name == "content_block_start" && event.data["content_block"]["type"] == "tool_use") {
            message.tool_uses.push_back(event.data["content_block"]);
            partial_json.emplace_back();
        } else if (event.name == "content_block_delta") {
            const json& delta = event.data["delta"];
            if (delta["type"] == "text_delta") message.text += delta["text"].get<std::string>();
            else if (delta["type"] == "input_json_delta") partial_json.back() += delta["partial_json"].get<std::string>();
        } else if (event.name == "message_delta") {
            message.message_delta = event.data;
        }
    }
    for (size_t i = 0; i < message.tool_uses.size(); ++i) message.tool_uses[i]["input"] = json::parse(partial_json[i]);
    return message;
}

TEST(AnthropicServer, AMessageAndItsEventStreamAgree) {
    TestServer t;
    ASSERT_TRUE(t.server);
    auto whole = t.post("/v1/messages", messages_request(16, false).dump(), kAnthropicHeaders);
    ASSERT_TRUE(whole);
    ASSERT_EQ(whole->status, 200) << whole->body;
    const json reply = json::parse(whole->body);
    EXPECT_EQ(reply["id"].get<std::string>().rfind("msg_", 0), 0u);
    EXPECT_EQ(reply["type"], "message");
    EXPECT_EQ(reply["role"], "assistant");
    EXPECT_EQ(reply["model"], "chat-model");
    ASSERT_EQ(reply["content"].size(), 1u) << reply.dump();
    EXPECT_EQ(reply["content"][0]["type"], "text");
    const std::string text = reply["content"][0]["text"];
    const int output_tokens = reply["usage"]["output_tokens"];
    EXPECT_GT(reply["usage"]["input_tokens"].get<int>(), 5) << "the system prompt and the message";
    EXPECT_EQ(reply["stop_reason"], output_tokens == 16 ? "max_tokens" : "end_turn");
    EXPECT_TRUE(reply["stop_sequence"].is_null());

    auto streamed = t.post("/v1/messages", messages_request(16, true).dump(), kAnthropicHeaders);
    ASSERT_TRUE(streamed);
    ASSERT_EQ(streamed->status, 200);
    EXPECT_EQ(streamed->get_header_value("Content-Type"), "text/event-stream");
    const std::vector<AnthropicEvent> events = read_anthropic_events(streamed->body);
    const AccumulatedMessage stream = accumulate(events);
    EXPECT_EQ(stream.text, text) << "greedy: the stream adds up to the whole message";
    ASSERT_GE(stream.names.size(), 7u);
    // message_start, content_block_start, ping, deltas..., content_block_stop, message_delta, message_stop
    EXPECT_EQ(stream.names[0], "message_start");
    EXPECT_EQ(stream.names[1], "content_block_start");
    EXPECT_EQ(stream.names[2], "ping");
    for (size_t i = 3; i + 3 < stream.names.size(); ++i) EXPECT_EQ(stream.names[i], "content_block_delta") << i;
    EXPECT_EQ(stream.names[stream.names.size() - 3], "content_block_stop");
    EXPECT_EQ(stream.names[stream.names.size() - 2], "message_delta");
    EXPECT_EQ(stream.names.back(), "message_stop");
    const json& start = events[0].data["message"];
    EXPECT_EQ(start["id"].get<std::string>().rfind("msg_", 0), 0u);
    EXPECT_EQ(start["usage"]["input_tokens"], reply["usage"]["input_tokens"]);
    EXPECT_TRUE(start["content"].empty());
    EXPECT_EQ(events[1].data["index"], 0);
    EXPECT_EQ(events[1].data["content_block"], json({{"type", "text"}, {"text", ""}}));
    EXPECT_EQ(stream.message_delta["delta"]["stop_reason"], reply["stop_reason"]);
    EXPECT_EQ(stream.message_delta["usage"]["output_tokens"], output_tokens);
}

TEST(AnthropicServer, StopSequencesAndTheTokenLimitSetTheStopReason) {
    TestServer t;
    ASSERT_TRUE(t.server);
    auto free_reply = t.post("/v1/messages", messages_request(24, false).dump());
    ASSERT_TRUE(free_reply);
    ASSERT_EQ(free_reply->status, 200) << free_reply->body;
    const std::string text = json::parse(free_reply->body)["content"][0]["text"];
    ASSERT_GE(text.size(), 6u) << "the greedy reply is long enough to cut";
    // A stop sequence from the middle of the greedy reply: the whole UTF-8 character there (the
    // byte vocabulary writes anything, often no ASCII at all). The reply may be one character
    // repeated: then the cut is at the start and the message holds no text.
    size_t at = text.size() / 2;
    while (at > 0 && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;
    size_t length = 1;
    while (at + length < text.size() && (static_cast<unsigned char>(text[at + length]) & 0xC0) == 0x80) ++length;
    const std::string stop = text.substr(at, length);
    json stop_request = messages_request(24, false, {{"stop_sequences", {stop}}});
    auto stopped = t.post("/v1/messages", stop_request.dump());
    ASSERT_TRUE(stopped);
    const json cut = json::parse(stopped->body);
    EXPECT_EQ(cut["stop_reason"], "stop_sequence") << cut.dump();
    EXPECT_EQ(cut["stop_sequence"], stop);
    std::string cut_text;  // the text blocks joined (none when the cut is at the start)
    for (const json& block : cut["content"]) {
        EXPECT_EQ(block["type"], "text") << cut.dump();
        cut_text += block.value("text", "");
    }
    EXPECT_EQ(cut_text, text.substr(0, text.find(stop)));

    stop_request["stream"] = true;
    auto streamed = t.post("/v1/messages", stop_request.dump());
    ASSERT_TRUE(streamed);
    const AccumulatedMessage stream = accumulate(read_anthropic_events(streamed->body));
    EXPECT_EQ(stream.message_delta["delta"]["stop_reason"], "stop_sequence");
    EXPECT_EQ(stream.message_delta["delta"]["stop_sequence"], stop);

    auto limited = t.post("/v1/messages", messages_request(3, false).dump());
    ASSERT_TRUE(limited);
    const json short_reply = json::parse(limited->body);
    EXPECT_EQ(short_reply["stop_reason"], "max_tokens");
    EXPECT_EQ(short_reply["usage"]["output_tokens"], 3);
}

TEST(AnthropicServer, ErrorsTakeAnthropicsShapeAndOpenAiPathsKeepTheirs) {
    ServerOptions options;
    options.max_body_bytes = 64 * 1024;
    TestServer t(options);
    ASSERT_TRUE(t.server);
    const auto anthropic_error = [&](const std::string& path, const std::string& body, int status, const char* type) {
        auto res = t.post(path, body, kAnthropicHeaders);
        ASSERT_TRUE(res);
        EXPECT_EQ(res->status, status) << path << " " << res->body;
        const json error = json::parse(res->body);
        EXPECT_EQ(error["type"], "error") << res->body;
        EXPECT_EQ(error["error"]["type"], type) << res->body;
        EXPECT_FALSE(error["error"]["message"].get<std::string>().empty());
    };
    json no_limit = messages_request(8, false);
    no_limit.erase("max_tokens");
    anthropic_error("/v1/messages", no_limit.dump(), 400, "invalid_request_error");
    anthropic_error("/v1/messages", "{not json", 400, "invalid_request_error");
    anthropic_error("/v1/messages", messages_request(8, false, {{"model", "claude-x"}}).dump(), 404, "not_found_error");
    anthropic_error("/v1/messages/count_tokens", messages_request(8, false).dump(), 404, "not_found_error");
    anthropic_error("/v1/messages", std::string(100000, '['), 413, "request_too_large");
    const json long_message = messages_request(8, false, {{"messages", {{{"role", "user"}, {"content", std::string(60000, 'z')}}}}});
    anthropic_error("/v1/messages", long_message.dump(), 400, "invalid_request_error");
    // No tools in the plain ChatML template: a call cannot be forced.
    const json forced = messages_request(8, false, {{"tools", {{{"name", "f"}, {"input_schema", {{"type", "object"}}}}}},
                                                    {"tool_choice", {{"type", "any"}}}});
    anthropic_error("/v1/messages", forced.dump(), 400, "invalid_request_error");

    auto openai = t.post("/v1/chat/completions", R"({"messages":[]})");
    ASSERT_TRUE(openai);
    EXPECT_EQ(openai->status, 400);
    EXPECT_TRUE(json::parse(openai->body)["error"].contains("param")) << "the OpenAI shape stays on OpenAI paths";
    auto fine = t.post("/v1/messages", messages_request(4, false).dump());
    ASSERT_TRUE(fine);
    EXPECT_EQ(fine->status, 200) << "the server lives on";
}

TEST(AnthropicServer, TheKeyComesAsXApiKeyOrBearer) {
    ServerOptions options;
    options.api_key = "sekrit";
    TestServer t(options);
    ASSERT_TRUE(t.server);
    const std::string body = messages_request(4, false).dump();
    const auto status_with = [&](httplib::Headers headers, const std::string& path, std::string* response = nullptr) {
        headers.emplace("anthropic-version", "2023-06-01");
        auto res = t.post(path, path == "/v1/messages" ? body : chat_body(4, 1, false), headers);
        if (!res) return 0;
        if (response) *response = res->body;
        return res->status;
    };
    std::string refusal;
    EXPECT_EQ(status_with({}, "/v1/messages", &refusal), 401);
    EXPECT_EQ(json::parse(refusal)["error"]["type"], "authentication_error") << refusal;
    EXPECT_NE(refusal.find("x-api-key"), std::string::npos) << "the refusal says how to send the key";
    EXPECT_EQ(status_with({{"x-api-key", "sekrit2"}}, "/v1/messages", &refusal), 401);
    EXPECT_EQ(json::parse(refusal)["type"], "error");
    EXPECT_EQ(status_with({{"x-api-key", "SEKRIT"}}, "/v1/messages"), 401);
    EXPECT_EQ(status_with({{"x-api-key", "sekrit"}}, "/v1/messages"), 200);
    EXPECT_EQ(status_with({{"Authorization", "Bearer sekrit"}}, "/v1/messages"), 200);
    // x-api-key is the Anthropic API's header: OpenAI paths keep 'Authorization: Bearer'.
    EXPECT_EQ(status_with({{"x-api-key", "sekrit"}}, "/v1/chat/completions", &refusal), 401);
    EXPECT_EQ(json::parse(refusal)["error"]["code"], "invalid_api_key");
}

TEST(AnthropicServer, AForcedToolCallIsAToolUseBlockAndItsResultIsAnswered) {
    ServerOptions options;
    options.template_choice = {TemplateChoice::Kind::Custom, kToolsChatMl};
    TestServer t(options);
    ASSERT_TRUE(t.server);
    const json tools = {{{"name", "get_weather"},
                         {"description", "The weather in a city"},
                         {"input_schema",
                          {{"type", "object"},
                           {"properties", {{"city", {{"type", "string"}, {"maxLength", 12}}}}},
                           {"required", {"city"}}}}}};
    const json forced = {{"tools", tools}, {"tool_choice", {{"type", "tool"}, {"name", "get_weather"}}}};
    auto whole = t.post("/v1/messages", messages_request(120, false, forced).dump());
    ASSERT_TRUE(whole);
    ASSERT_EQ(whole->status, 200) << whole->body;
    const json reply = json::parse(whole->body);
    EXPECT_EQ(reply["stop_reason"], "tool_use") << reply.dump();
    ASSERT_FALSE(reply["content"].empty()) << reply.dump();
    const json tool_use = reply["content"].back();
    EXPECT_EQ(tool_use["type"], "tool_use") << reply.dump();
    EXPECT_EQ(tool_use["name"], "get_weather");
    EXPECT_EQ(tool_use["id"].get<std::string>().rfind("toolu_", 0), 0u) << tool_use.dump();
    ASSERT_TRUE(tool_use["input"].is_object());
    ASSERT_TRUE(tool_use["input"]["city"].is_string()) << "the grammar keeps the arguments inside the schema";

    auto streamed = t.post("/v1/messages", messages_request(120, true, forced).dump());
    ASSERT_TRUE(streamed);
    const AccumulatedMessage stream = accumulate(read_anthropic_events(streamed->body));
    ASSERT_EQ(stream.tool_uses.size(), 1u) << streamed->body;
    EXPECT_EQ(stream.tool_uses[0]["name"], "get_weather");
    EXPECT_EQ(stream.tool_uses[0]["input"], tool_use["input"]) << "greedy: the streamed call is the whole one";
    EXPECT_EQ(stream.message_delta["delta"]["stop_reason"], "tool_use");

    // The call and its result go back; the model answers (no call forced now).
    json round_trip = messages_request(8, false, {{"tools", tools}});
    round_trip["messages"].push_back({{"role", "assistant"}, {"content", {tool_use}}});
    round_trip["messages"].push_back(
        {{"role", "user"}, {"content", {{{"type", "tool_result"}, {"tool_use_id", tool_use["id"]}, {"content", "-3 C, snow"}}}}});
    auto answered = t.post("/v1/messages", round_trip.dump());
    ASSERT_TRUE(answered);
    ASSERT_EQ(answered->status, 200) << answered->body;
    const json answer = json::parse(answered->body);
    EXPECT_EQ(answer["type"], "message");
    EXPECT_GT(answer["usage"]["input_tokens"].get<int>(), reply["usage"]["input_tokens"].get<int>())
        << "the call and its result are part of the prompt";

    // tool_choice none: the tools are not offered, the reply is text.
    auto plain = t.post("/v1/messages", messages_request(8, false, {{"tools", tools}, {"tool_choice", {{"type", "none"}}}}).dump());
    ASSERT_TRUE(plain);
    const json plain_reply = json::parse(plain->body);
    EXPECT_LT(plain_reply["usage"]["input_tokens"].get<int>(), reply["usage"]["input_tokens"].get<int>())
        << "no tools section in the prompt";
}

} // namespace
} // namespace cflow::server
