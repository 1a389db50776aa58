// The incremental SSE parser: a recorded stream gives the same events however the bytes are
// split, line endings and comments as the format allows, and malformed or oversized input is an
// error naming the line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cflow/remote/sse_parser.h"

namespace cflow::remote {
namespace {

// A stream as cflow serve / llama.cpp send it, with a comment, CRLF and a CR-only line ending, a
// two-line data field, an event name and [DONE].
const std::string kRecorded =
    ": keep-alive\r\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\r\n\r\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n"
    "data: multi\r\ndata: line\r\n\r\n"
    "event: note\ndata: first\ndata: second\r\rid: 7\n"
    "data:{\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n"
    "data: [DONE]\n\n";

std::vector<SseEvent> parse_in_pieces(const std::string& bytes, const std::vector<size_t>& cuts, Status* status = nullptr) {
    SseParser parser;
    std::vector<SseEvent> events;
    auto collect = [&](const SseEvent& e) {
        events.push_back(e);
        return true;
    };
    size_t from = 0;
    Status s;
    for (size_t cut : cuts) {
        if (s) s = parser.feed(std::string_view(bytes).substr(from, cut - from), collect);
        from = cut;
    }
    if (s) s = parser.feed(std::string_view(bytes).substr(from), collect);
    if (s) s = parser.finish(collect);
    if (status) *status = s;
    return events;
}

std::string show(const std::vector<SseEvent>& events) {
    std::string text;
    for (const SseEvent& e : events) text += "[" + e.event + "|" + e.data + "|" + e.id + "]";
    return text;
}

TEST(SseParser, TheRecordedStreamGivesItsEvents) {
    Status s;
    auto events = parse_in_pieces(kRecorded, {}, &s);
    ASSERT_TRUE(s) << s.error();
    ASSERT_EQ(events.size(), 6u) << show(events);
    EXPECT_EQ(events[0].data, "{\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}");
    EXPECT_EQ(events[2].data, "multi\nline") << "a CRLF ends one line, not two";
    EXPECT_EQ(events[3].event, "note");
    EXPECT_EQ(events[3].data, "first\nsecond");
    EXPECT_EQ(events[4].id, "7") << "a field set before the blank line belongs to the next event";
    EXPECT_EQ(events[4].data.rfind("{\"choices\":[]", 0), 0u) << "no space after 'data:' is kept as is";
    EXPECT_EQ(events[5].data, "[DONE]");
}

TEST(SseParser, EverySplitGivesTheSameEvents) {
    const std::string whole = show(parse_in_pieces(kRecorded, {}));
    for (size_t cut = 0; cut <= kRecorded.size(); ++cut)
        ASSERT_EQ(show(parse_in_pieces(kRecorded, {cut})), whole) << "split at byte " << cut;
    for (size_t a = 0; a <= kRecorded.size(); a += 7)
        for (size_t b = a; b <= kRecorded.size(); b += 5)
            ASSERT_EQ(show(parse_in_pieces(kRecorded, {a, b})), whole) << "split at " << a << " and " << b;
    std::vector<size_t> every_byte;
    for (size_t i = 1; i < kRecorded.size(); ++i) every_byte.push_back(i);
    EXPECT_EQ(show(parse_in_pieces(kRecorded, every_byte)), whole) << "one byte at a time";
}

TEST(SseParser, AnEventCutBeforeItsBlankLineIsStillDelivered) {
    Status s;
    auto events = parse_in_pieces("data: partial", {}, &s);
    ASSERT_TRUE(s) << s.error();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].data, "partial");
}

TEST(SseParser, AMalformedLineIsNamed) {
    Status s;
    parse_in_pieces("data: ok\n\nthis is not a field\n\n", {}, &s);
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().find("line 3"), std::string::npos) << s.error();
    EXPECT_NE(s.error().find("'this is not a field'"), std::string::npos) << s.error();
}

TEST(SseParser, ALineOverTheCapIsRefused) {
    SseParser parser(SseLimits{64, 1024});
    Status s = parser.feed(std::string(65, 'x'), [](const SseEvent&) { return true; });
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().find("line 1 is longer than 64 bytes"), std::string::npos) << s.error();
}

TEST(SseParser, AnEventOverTheCapIsRefused) {
    SseParser parser(SseLimits{64, 100});
    std::string many;
    for (int i = 0; i < 5; ++i) many += "data: " + std::string(30, 'y') + "\n";
    Status s = parser.feed(many, [](const SseEvent&) { return true; });
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().find("more than 100 bytes of data"), std::string::npos) << s.error();
}

TEST(SseParser, ACallbackReturningFalseStopsIt) {
    SseParser parser;
    int seen = 0;
    Status s = parser.feed("data: a\n\ndata: b\n\n", [&](const SseEvent&) {
        ++seen;
        return false;
    });
    ASSERT_TRUE(s);
    EXPECT_EQ(seen, 1);
}

} // namespace
} // namespace cflow::remote
