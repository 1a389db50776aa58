// The SSE framing of the streaming API: one "data:" event per chunk, "[DONE]" last, and the
// client-side reader that joins multi-line data and ignores comments and partial events.
#include <gtest/gtest.h>

#include "cflow/server/api_error.h"
#include "cflow/server/openai_response.h"
#include "cflow/server/sse.h"

#include <nlohmann/json.hpp>

namespace cflow::server {
namespace {

TEST(Sse, EventsRoundTripThroughTheReader) {
    const std::string stream = sse_event(R"({"a":1})") + ": a comment\n" + sse_event("line one\nline two") +
                               "event: ignored\ndata: x\n\n" + std::string(kSseDone) + "data: partial";
    EXPECT_EQ(sse_event("{}"), "data: {}\n\n");
    EXPECT_EQ(sse_event("a\nb"), "data: a\ndata: b\n\n");
    const auto events = parse_sse_events(stream);
    ASSERT_EQ(events.size(), 4u);
    EXPECT_EQ(events[0], R"({"a":1})");
    EXPECT_EQ(events[1], "line one\nline two");
    EXPECT_EQ(events[2], "x");
    EXPECT_EQ(events[3], "[DONE]") << "an unterminated last event is not returned";
    EXPECT_EQ(parse_sse_events("data: a\r\n\r\n"), std::vector<std::string>{"a"}) << "CRLF lines";
}

TEST(Sse, ChunksCarryTheOpenAiShape) {
    const ResponseHeader header{"chatcmpl-x", 1700000000, "m"};
    const auto first = nlohmann::json::parse(chat_chunk(header, std::string_view(""), true, std::nullopt));
    EXPECT_EQ(first["object"], "chat.completion.chunk");
    EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
    EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
    const auto last = nlohmann::json::parse(chat_chunk(header, std::nullopt, false, "length"));
    EXPECT_TRUE(last["choices"][0]["delta"].empty());
    EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
    const auto usage = nlohmann::json::parse(usage_chunk(header, "chat.completion.chunk", {3, 4}));
    EXPECT_TRUE(usage["choices"].empty());
    EXPECT_EQ(usage["usage"]["total_tokens"], 7);
    const auto body = nlohmann::json::parse(chat_completion_body(header, "hi \xff", "stop", {1, 2}));
    EXPECT_EQ(body["choices"][0]["message"]["content"], "hi \xEF\xBF\xBD") << "invalid UTF-8 is replaced, never sent";
    const auto error = nlohmann::json::parse(error_body(bad_request("no", "messages")));
    EXPECT_EQ(error["error"]["param"], "messages");
    EXPECT_TRUE(error["error"]["code"].is_null());
    EXPECT_EQ(new_response_id("cmpl-").size(), 5u + 24u);
}

} // namespace
} // namespace cflow::server
