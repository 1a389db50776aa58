// Log probabilities through the client: a real `cflow serve` on the bundled model reports them
// (streamed chunks joined equal the whole reply's, one entry per completion token, greedy so each
// token heads its own list); an endpoint that answers without them leaves RemoteReply::logprobs
// empty (nullopt), so a caller can say "not reported" instead of showing a number.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include <httplib.h>

#include "cflow/remote/httplib_transport.h"
#include "cflow/remote/remote_client.h"
#include "loopback_server.h"
#include "serve_process.h"

namespace cflow::remote {
namespace {

RemoteClient logprobs_client(const std::string& base_url) {
    EndpointConfig config;
    config.base_url = base_url;
    config.connect_timeout_ms = 5'000;
    config.read_timeout_ms = 60'000;
    return RemoteClient(config, std::shared_ptr<HttpTransport>(make_httplib_transport()));
}

TEST(RemoteLogprobs, CflowServeReportsThemStreamedAndWhole) {
    test::ServeProcess serve({}, "127.0.0.1");
    ASSERT_TRUE(serve.started()) << serve.log();
    RemoteClient client = logprobs_client(serve.base_url());
    RemoteChatRequest request;
    request.messages = {{"user", "Tell me a story about a cat."}};
    request.sampling.temperature = 0;
    request.max_tokens = 24;
    request.logprobs = true;
    request.top_logprobs = 3;
    auto stream = client.stream_chat(request, {});
    ASSERT_TRUE(stream) << stream.error();
    auto whole = client.complete_chat(request);
    ASSERT_TRUE(whole) << whole.error();
    ASSERT_TRUE(stream->logprobs);
    ASSERT_TRUE(whole->logprobs);
    ASSERT_TRUE(stream->usage);
    ASSERT_EQ(int64_t(stream->logprobs->size()), stream->usage->completion_tokens);
    ASSERT_EQ(stream->logprobs->size(), whole->logprobs->size());
    std::string joined_bytes;
    for (size_t i = 0; i < stream->logprobs->size(); ++i) {
        const RemoteTokenLogprob& s = (*stream->logprobs)[i];
        const RemoteTokenLogprob& w = (*whole->logprobs)[i];
        EXPECT_EQ(s.chosen.bytes, w.chosen.bytes) << i;
        EXPECT_DOUBLE_EQ(s.chosen.logprob, w.chosen.logprob) << i;
        EXPECT_TRUE(s.chosen.bytes_sent);
        ASSERT_EQ(s.top.size(), 3u);
        EXPECT_EQ(s.top[0].bytes, s.chosen.bytes) << "greedy: the chosen token is the most likely";
        EXPECT_LE(s.chosen.logprob, 0.0);
        joined_bytes += s.chosen.bytes;
    }
    // The reply is the tokens' bytes (SentencePiece's leading space of the first one aside).
    EXPECT_NE(joined_bytes.find(stream->text.substr(stream->text.size() > 8 ? stream->text.size() - 8 : 0)), std::string::npos)
        << joined_bytes << " | " << stream->text;
}

TEST(RemoteLogprobs, AnEndpointWithoutThemLeavesThemUnreported) {
    test::LoopbackServer server;
    std::string seen_body;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
        seen_body = req.body;
        test::stream_events(res, {test::chunk_event("Hel"), test::chunk_event("lo"), test::kEndEvents}, true);
    });
    server.start();
    RemoteChatRequest request;
    request.messages = {{"user", "hi"}};
    request.logprobs = true;
    request.top_logprobs = 2;
    auto reply = logprobs_client(server.base_url()).stream_chat(request, {});
    ASSERT_TRUE(reply) << reply.error();
    EXPECT_EQ(reply->text, "Hello");
    EXPECT_FALSE(reply->logprobs) << "no chunk carried logprobs";
    EXPECT_NE(seen_body.find("\"top_logprobs\":2"), std::string::npos) << seen_body;
}

} // namespace
} // namespace cflow::remote
