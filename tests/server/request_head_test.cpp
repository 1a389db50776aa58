// The request head judged before cpp-httplib reads it (issue 38): each limit refuses with its
// status as soon as the bytes that break it have arrived, and a head still arriving waits.
#include <gtest/gtest.h>

#include <string>

#include "cflow/server/request_head.h"

namespace cflow::server {
namespace {

constexpr uint64_t kMaxBody = 1 << 20;

RequestHead inspect(const std::string& bytes, const HttpLimits& limits = {}) {
    return inspect_request_head(bytes, limits, kMaxBody);
}

TEST(RequestHead, AWholeHeadIsCompleteAndNamesItsBody) {
    const std::string head = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 42\r\n\r\n";
    const RequestHead judged = inspect(head + "{\"body\": true}");
    ASSERT_EQ(judged.verdict, HeadVerdict::Complete) << judged.message;
    EXPECT_EQ(judged.head_bytes, head.size());
    EXPECT_EQ(judged.method, "POST");
    EXPECT_EQ(judged.content_length, 42u);
    EXPECT_FALSE(judged.chunked);

    const RequestHead chunked = inspect("POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    ASSERT_EQ(chunked.verdict, HeadVerdict::Complete) << chunked.message;
    EXPECT_TRUE(chunked.chunked);
    EXPECT_EQ(inspect("GET /health HTTP/1.0\r\n\r\n").verdict, HeadVerdict::Complete);
}

TEST(RequestHead, EveryPrefixOfAGoodHeadWaitsForMore) {
    const std::string head = "GET /v1/models HTTP/1.1\r\nHost: localhost:8080\r\nAccept: */*\r\n\r\n";
    for (size_t n = 0; n < head.size(); ++n)
        EXPECT_EQ(inspect(head.substr(0, n)).verdict, HeadVerdict::NeedMore) << "prefix of " << n << " bytes";
    EXPECT_EQ(inspect(head).verdict, HeadVerdict::Complete);
}

TEST(RequestHead, LinesWithoutANewlineAreRefusedAtTheirLimit) {
    HttpLimits limits;
    limits.max_request_line_bytes = 100;
    limits.max_header_line_bytes = 200;
    limits.max_head_bytes = 1000;
    // The attack of issue 38: "GET /" and then bytes without a newline.
    EXPECT_EQ(inspect("GET /" + std::string(90, 'a'), limits).verdict, HeadVerdict::NeedMore);
    RequestHead line = inspect("GET /" + std::string(200, 'a'), limits);
    EXPECT_EQ(line.status, 414);
    EXPECT_NE(line.message.find("100 bytes"), std::string::npos) << line.message;

    const std::string start = "GET / HTTP/1.1\r\nX-Long: ";
    EXPECT_EQ(inspect(start + std::string(150, 'b'), limits).verdict, HeadVerdict::NeedMore);
    EXPECT_EQ(inspect(start + std::string(250, 'b'), limits).status, 431);
    EXPECT_EQ(inspect(start + std::string(250, 'b') + "\r\n\r\n", limits).status, 431);

    std::string many = "GET / HTTP/1.1\r\n";
    while (many.size() < 1200) many += "X-Filler: 0123456789\r\n";
    const RequestHead whole = inspect(many, limits);
    EXPECT_EQ(whole.status, 431);
    EXPECT_NE(whole.message.find("1000 bytes"), std::string::npos) << whole.message;
}

TEST(RequestHead, TooManyHeaderLinesAreRefused) {
    HttpLimits limits;
    limits.max_header_count = 10;
    std::string head = "GET / HTTP/1.1\r\n";
    for (int i = 0; i < 10; ++i) head += "X-" + std::to_string(i) + ": v\r\n";
    EXPECT_EQ(inspect(head + "\r\n", limits).verdict, HeadVerdict::Complete);
    const RequestHead refused = inspect(head + "X-11: v\r\n", limits);  // refused before the blank line
    EXPECT_EQ(refused.status, 431);
    EXPECT_NE(refused.message.find("10 header lines"), std::string::npos) << refused.message;
}

TEST(RequestHead, SmugglingShapesAreRefusedNotGuessed) {
    EXPECT_EQ(inspect("GET / HTTP/1.1\nHost: x\r\n\r\n").status, 400) << "bare LF after the request line";
    EXPECT_EQ(inspect("GET / HTTP/1.1\r\nHost: x\n\r\n").status, 400) << "bare LF after a header";
    EXPECT_EQ(inspect("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n").status, 400);
    EXPECT_EQ(inspect("GET / HTTP/1.1\r\nno colon here\r\n\r\n").status, 400);
    EXPECT_EQ(inspect("GET / HTTP/1.1\r\nBad Name: v\r\n\r\n").status, 400);
    EXPECT_EQ(inspect("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n").status, 400);
    EXPECT_EQ(inspect("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n").status, 400);
    EXPECT_EQ(inspect("POST / HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n").verdict, HeadVerdict::Complete);
    EXPECT_EQ(inspect("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n").status, 400);
    EXPECT_EQ(inspect("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n").status, 400);
    EXPECT_EQ(inspect("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n").status, 501);
    EXPECT_EQ(inspect("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n").status, 501);
}

TEST(RequestHead, MethodsVersionsAndBodiesGetTheirStatus) {
    EXPECT_EQ(inspect("\x16\x03\x01\x02\x00").status, 400) << "a TLS hello is not waited for";
    EXPECT_EQ(inspect("get / HTTP/1.1\r\n\r\n").status, 400);
    EXPECT_EQ(inspect("DELETE /v1/models/x HTTP/1.1\r\n\r\n").status, 405);
    EXPECT_EQ(inspect("GET / HTTP/2.0\r\n\r\n").status, 505);
    EXPECT_EQ(inspect("GET /a\x01 HTTP/1.1\r\n\r\n").status, 400);
    EXPECT_EQ(inspect("POST /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n").status, 411);
    const RequestHead large =
        inspect("POST /v1/completions HTTP/1.1\r\nContent-Length: " + std::to_string(kMaxBody + 1) + "\r\n\r\n");
    EXPECT_EQ(large.status, 413);
    EXPECT_EQ(large.content_length, kMaxBody + 1) << "kept, so that the body can be read and dropped";
    EXPECT_NE(large.message.find("--max-body-mib"), std::string::npos) << large.message;
    EXPECT_EQ(inspect("POST /v1/completions HTTP/1.1\r\nContent-Length: " + std::to_string(kMaxBody) + "\r\n\r\n").verdict,
              HeadVerdict::Complete);
}

} // namespace
} // namespace cflow::server
