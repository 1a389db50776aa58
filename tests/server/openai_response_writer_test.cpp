// The OpenAI chat writer with tools offered: a reply in the template's call format becomes
// message.tool_calls (whole) or delta.tool_calls chunks (streamed, in any split of the text), with
// finish_reason "tool_calls"; text beside the calls stays content; no tools: text as it was.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cflow/server/sse.h"
#include "openai_reply_writer.h"

namespace cflow::server {
namespace {

using nlohmann::json;

const ResponseHeader kWriterHeader{"chatcmpl-w", 1700000000, "m"};

ChatTurnOutcome writer_outcome(std::string text) {
    ChatTurnOutcome outcome;
    outcome.text = std::move(text);
    outcome.stats.stop_reason = StopReason::EndOfGeneration;
    return outcome;
}

struct WriterStreamedReply {
    std::string content;
    std::vector<json> calls;  // {id, name, arguments} per index
    std::string finish;
};

// Streams `text` through a writer in pieces of `piece_bytes` and reassembles what a client sees.
WriterStreamedReply writer_stream_through(OpenAiChatWriter& writer, const std::string& text, size_t piece_bytes) {
    std::string bytes = writer.start();
    for (size_t at = 0; at < text.size(); at += piece_bytes) bytes += writer.piece(std::string_view(text).substr(at, piece_bytes));
    bytes += writer.finish(writer_outcome(text), {3, 4}).bytes;
    WriterStreamedReply reply;
    for (const std::string& data : parse_sse_events(bytes)) {
        if (data == "[DONE]") continue;
        const json chunk = json::parse(data);
        const json& choice = chunk["choices"][0];
        if (choice["finish_reason"].is_string()) reply.finish = choice["finish_reason"];
        const json& delta = choice["delta"];
        if (delta.contains("content")) reply.content += delta["content"].get<std::string>();
        for (const json& call : delta.value("tool_calls", json::array())) {
            const size_t index = call["index"];
            if (index == reply.calls.size()) {
                EXPECT_TRUE(call.contains("id") && call["function"].contains("name")) << "the first delta names the call";
                reply.calls.push_back({{"id", call["id"]}, {"name", call["function"]["name"]}, {"arguments", ""}});
            }
            EXPECT_LT(index, reply.calls.size()) << "indexes count up from 0";
            if (index >= reply.calls.size()) continue;
            reply.calls[index]["arguments"] =
                reply.calls[index]["arguments"].get<std::string>() + call["function"]["arguments"].get<std::string>();
        }
    }
    return reply;
}

const std::string kWriterTwoCalls = "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n"
                              "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";

TEST(OpenAiResponseWriter, HermesCallsBecomeToolCallsInTheWholeBody) {
    OpenAiChatWriter writer(kWriterHeader, /*stream=*/false, /*include_usage=*/false);
    writer.prepared({10, ToolCallFormat::Hermes});
    EXPECT_EQ(writer.start(), "");
    EXPECT_EQ(writer.piece(kWriterTwoCalls), "");
    const ReplyEnding ending = writer.finish(writer_outcome(kWriterTwoCalls), {10, 20});
    EXPECT_EQ(ending.finish_reason, "tool_calls");
    const json message = json::parse(ending.bytes)["choices"][0]["message"];
    EXPECT_EQ(json::parse(ending.bytes)["choices"][0]["finish_reason"], "tool_calls");
    EXPECT_EQ(message["content"], "Checking.");
    ASSERT_EQ(message["tool_calls"].size(), 2u);
    EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
    EXPECT_EQ(json::parse(message["tool_calls"][0]["function"]["arguments"].get<std::string>()), (json{{"city", "Oslo"}}));
    EXPECT_EQ(message["tool_calls"][1]["function"]["name"], "get_time");
    EXPECT_NE(message["tool_calls"][0]["id"], message["tool_calls"][1]["id"]);

    OpenAiChatWriter single(kWriterHeader, false, false, /*parallel_tool_calls=*/false);
    single.prepared({10, ToolCallFormat::Hermes});
    const json one = json::parse(single.finish(writer_outcome(kWriterTwoCalls), {}).bytes)["choices"][0]["message"];
    ASSERT_EQ(one["tool_calls"].size(), 1u) << "parallel_tool_calls false: the first call only";
    EXPECT_EQ(one["tool_calls"][0]["function"]["name"], "get_weather");

    const std::string only_call = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
    OpenAiChatWriter bare(kWriterHeader, false, false);
    bare.prepared({10, ToolCallFormat::Hermes});
    EXPECT_TRUE(json::parse(bare.finish(writer_outcome(only_call), {}).bytes)["choices"][0]["message"]["content"].is_null());
}

TEST(OpenAiResponseWriter, StreamedCallsReassembleToTheWholeBodyInAnySplit) {
    OpenAiChatWriter whole_writer(kWriterHeader, false, false);
    whole_writer.prepared({10, ToolCallFormat::Hermes});
    const json whole = json::parse(whole_writer.finish(writer_outcome(kWriterTwoCalls), {}).bytes)["choices"][0]["message"];
    for (size_t piece_bytes : {size_t(1), size_t(3), size_t(7), kWriterTwoCalls.size()}) {
        OpenAiChatWriter writer(kWriterHeader, /*stream=*/true, false);
        writer.prepared({10, ToolCallFormat::Hermes});
        const WriterStreamedReply reply = writer_stream_through(writer, kWriterTwoCalls, piece_bytes);
        EXPECT_EQ(reply.finish, "tool_calls") << piece_bytes;
        EXPECT_EQ(reply.content.find("<tool_call>"), std::string::npos) << "the markers never stream: " << reply.content;
        EXPECT_NE(reply.content.find("Checking."), std::string::npos) << reply.content;
        ASSERT_EQ(reply.calls.size(), 2u) << piece_bytes;
        for (size_t i = 0; i < 2; ++i) {
            EXPECT_EQ(reply.calls[i]["name"], whole["tool_calls"][i]["function"]["name"]) << piece_bytes;
            EXPECT_EQ(reply.calls[i]["arguments"], whole["tool_calls"][i]["function"]["arguments"]) << piece_bytes;
        }
    }
    OpenAiChatWriter single(kWriterHeader, true, false, /*parallel_tool_calls=*/false);
    single.prepared({10, ToolCallFormat::Hermes});
    EXPECT_EQ(writer_stream_through(single, kWriterTwoCalls, 5).calls.size(), 1u);
}

TEST(OpenAiResponseWriter, AReplyCutByTheLimitStaysLengthWithTheCallsItCompleted) {
    // A required call's reply ran out of context inside its second call: the first is a call, the
    // cut one stays text, and the finish reason says the reply was cut.
    const std::string cut = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_";
    ChatTurnOutcome outcome = writer_outcome(cut);
    outcome.stats.stop_reason = StopReason::ContextFull;
    OpenAiChatWriter whole(kWriterHeader, false, false);
    whole.prepared({10, ToolCallFormat::Hermes});
    const ReplyEnding ending = whole.finish(outcome, {});
    EXPECT_EQ(ending.finish_reason, "length");
    const json choice = json::parse(ending.bytes)["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "length");
    ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u);
    EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "get_time");

    OpenAiChatWriter streamed(kWriterHeader, true, false);
    streamed.prepared({10, ToolCallFormat::Hermes});
    std::string bytes = streamed.start() + streamed.piece(cut);
    bytes += streamed.finish(outcome, {}).bytes;
    const std::vector<std::string> events = parse_sse_events(bytes);
    ASSERT_GE(events.size(), 2u);
    EXPECT_EQ(json::parse(events[events.size() - 2])["choices"][0]["finish_reason"], "length");
}

TEST(OpenAiResponseWriter, WithoutToolsTheReplyIsText) {
    OpenAiChatWriter writer(kWriterHeader, true, false);
    writer.prepared({10, ToolCallFormat::None});
    const WriterStreamedReply reply = writer_stream_through(writer, kWriterTwoCalls, 4);
    EXPECT_EQ(reply.content, kWriterTwoCalls) << "no tools offered: the markers are text";
    EXPECT_TRUE(reply.calls.empty());
    EXPECT_EQ(reply.finish, "stop");
    OpenAiChatWriter whole(kWriterHeader, false, false);
    whole.prepared({10, ToolCallFormat::None});
    const json body = json::parse(whole.finish(writer_outcome(kWriterTwoCalls), {}).bytes);
    EXPECT_EQ(body["choices"][0]["message"]["content"], kWriterTwoCalls);
    EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
}

} // namespace
} // namespace cflow::server
