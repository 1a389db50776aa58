// The client against an in-test HTTP server on loopback that misbehaves on purpose: each fault
// ends in a clear message, and a reply cut after its first token keeps its text, marked incomplete.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <httplib.h>

#include "cflow/remote/httplib_transport.h"
#include "cflow/remote/remote_client.h"
#include "loopback_server.h"

namespace cflow::remote {
namespace {

using Clock = std::chrono::steady_clock;

using test::chunk_event;
using test::LoopbackServer;
using test::stream_events;
const std::string& kEnd = test::kEndEvents;

RemoteClient client_for(const std::string& base_url, uint32_t read_timeout_ms = 10'000) {
    EndpointConfig config;
    config.base_url = base_url;
    config.read_timeout_ms = read_timeout_ms;
    config.connect_timeout_ms = 2'000;
    return RemoteClient(config, std::shared_ptr<HttpTransport>(make_httplib_transport()));
}

RemoteChatRequest hello() {
    RemoteChatRequest request;
    request.model = "test";
    request.messages = {{"user", "hi"}};
    return request;
}

TEST(RemoteFaults, AStreamedReplyArrivesWithUsage) {
    LoopbackServer server;
    std::string seen_body;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
        seen_body = req.body;
        stream_events(res, {chunk_event("Hel"), chunk_event("lo"), kEnd}, true);
    });
    server.start();
    std::string streamed;
    auto reply = client_for(server.base_url()).stream_chat(hello(), [&](std::string_view t) { streamed += t; });
    ASSERT_TRUE(reply) << reply.error();
    EXPECT_EQ(reply->text, "Hello");
    EXPECT_EQ(streamed, "Hello");
    EXPECT_TRUE(reply->complete);
    EXPECT_EQ(reply->finish_reason, "stop");
    ASSERT_TRUE(reply->usage);
    EXPECT_EQ(reply->usage->completion_tokens, 2);
    EXPECT_NE(seen_body.find("\"stream\":true"), std::string::npos) << seen_body;
    EXPECT_NE(seen_body.find("\"include_usage\":true"), std::string::npos) << seen_body;
}

TEST(RemoteFaults, AServerGoneMidStreamLeavesThePartialTextMarked) {
    LoopbackServer server;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        stream_events(res, {chunk_event("Once"), chunk_event(" upon")}, false);
    });
    server.start();
    auto reply = client_for(server.base_url()).stream_chat(hello(), {});
    ASSERT_TRUE(reply) << reply.error();
    EXPECT_EQ(reply->text, "Once upon");
    EXPECT_FALSE(reply->complete);
    EXPECT_FALSE(reply->cancelled);
    EXPECT_NE(reply->incomplete_reason.find("closed the connection in the middle of the reply"), std::string::npos)
        << reply->incomplete_reason;
}

TEST(RemoteFaults, AStalledServerTimesOutInBoundedTime) {
    LoopbackServer server;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        stream_events(res, {chunk_event("Once")}, true, [&] {
            for (int i = 0; i < 1000 && !server.release; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        });
    });
    server.start();
    const auto started = Clock::now();
    auto reply = client_for(server.base_url(), /*read_timeout_ms=*/500).stream_chat(hello(), {});
    const double elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
    ASSERT_TRUE(reply) << reply.error();
    EXPECT_EQ(reply->text, "Once");
    EXPECT_FALSE(reply->complete);
    EXPECT_NE(reply->incomplete_reason.find("sent nothing for 0.5 s (time-out)"), std::string::npos)
        << reply->incomplete_reason;
    EXPECT_LT(elapsed_s, 5.0) << "the server stalls for 10 s: the time-out must end it first";
}

TEST(RemoteFaults, AServerSilentBeforeItsHeadTimesOut) {
    LoopbackServer server;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        for (int i = 0; i < 1000 && !server.release; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        res.set_content("late", "text/plain");
    });
    server.start();
    const auto started = Clock::now();
    auto reply = client_for(server.base_url(), /*read_timeout_ms=*/400).stream_chat(hello(), {});
    const double elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
    ASSERT_FALSE(reply);
    EXPECT_NE(reply.error().find("the server sent nothing for 0.4 s (time-out)"), std::string::npos) << reply.error();
    EXPECT_LT(elapsed_s, 5.0);
}

TEST(RemoteFaults, A503WithoutRetryAfterBacksOffThenGivesUp) {
    LoopbackServer server;
    std::atomic<int> requests{0};
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        ++requests;
        res.status = 503;
        res.set_content(R"({"error":{"message":"loading model"}})", "application/json");
    });
    server.start();
    EndpointConfig config;
    config.base_url = server.base_url();
    config.retry = RetryPolicy{3, 100, 1000, 5000};
    RemoteClient client(config, std::shared_ptr<HttpTransport>(make_httplib_transport()));
    const auto started = Clock::now();
    auto reply = client.stream_chat(hello(), {});
    const double elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
    ASSERT_FALSE(reply);
    EXPECT_EQ(requests.load(), 3);
    EXPECT_NE(reply.error().find("HTTP 503: the server is busy or loading: the server says: loading model (gave up after 3 attempts)"),
              std::string::npos) << reply.error();
    EXPECT_GE(elapsed_s, 0.28) << "waits of 100 and 200 ms";
    EXPECT_LT(elapsed_s, 5.0);
}

TEST(RemoteFaults, A401NamesTheKey) {
    LoopbackServer server;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        res.status = 401;
        res.set_content(R"({"error":{"message":"Invalid API key","type":"invalid_request_error"}})", "application/json");
    });
    server.start();
    auto reply = client_for(server.base_url()).stream_chat(hello(), {});
    ASSERT_FALSE(reply);
    EXPECT_NE(reply.error().find("HTTP 401: the API key was refused or is missing"), std::string::npos) << reply.error();
    EXPECT_NE(reply.error().find("the server says: Invalid API key"), std::string::npos) << reply.error();
}

TEST(RemoteFaults, AWrongPathSuggestsV1) {
    LoopbackServer server;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        stream_events(res, {chunk_event("x"), kEnd}, true);
    });
    server.start();
    auto reply = client_for(server.base_url("")).stream_chat(hello(), {});
    ASSERT_FALSE(reply);
    EXPECT_NE(reply.error().find("HTTP 404: wrong path"), std::string::npos) << reply.error();
    EXPECT_NE(reply.error().find("try " + server.base_url("/v1") + " as the endpoint"), std::string::npos) << reply.error();
}

TEST(RemoteFaults, A429WithRetryAfterIsWaitedOutThenSucceeds) {
    LoopbackServer server;
    std::atomic<int> requests{0};
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        if (requests++ == 0) {
            res.status = 429;
            res.set_header("Retry-After", "1");
            res.set_content(R"({"error":{"message":"slow down"}})", "application/json");
            return;
        }
        stream_events(res, {chunk_event("ok"), kEnd}, true);
    });
    server.start();
    const auto started = Clock::now();
    auto reply = client_for(server.base_url()).stream_chat(hello(), {});
    const double elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
    ASSERT_TRUE(reply) << reply.error();
    EXPECT_EQ(reply->text, "ok");
    EXPECT_EQ(reply->attempts, 2u);
    EXPECT_EQ(requests.load(), 2);
    EXPECT_GE(elapsed_s, 0.9) << "Retry-After: 1 was not honoured";
    EXPECT_LT(elapsed_s, 10.0);
}

TEST(RemoteFaults, MalformedStreamsAreNamed) {
    LoopbackServer server;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        stream_events(res, {chunk_event("Hi"), "data: {not json}\n\n"}, true);
    });
    server.http.Post("/bad-line/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        stream_events(res, {"<html>oops</html>\n\n"}, true);
    });
    server.start();
    auto reply = client_for(server.base_url()).stream_chat(hello(), {});
    ASSERT_TRUE(reply) << reply.error();
    EXPECT_EQ(reply->text, "Hi");
    EXPECT_FALSE(reply->complete);
    EXPECT_NE(reply->incomplete_reason.find("malformed stream at line 3: chunk is not JSON: '{not json}'"),
              std::string::npos) << reply->incomplete_reason;
    auto bad = client_for(server.base_url("/bad-line")).stream_chat(hello(), {});
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().find("malformed stream: server-sent events: line 1 is not a field"), std::string::npos)
        << bad.error();
}

TEST(RemoteFaults, AHundredMegabyteResponseIsRefusedAtTheCap) {
    LoopbackServer server;
    const std::string event = chunk_event(std::string(16 * 1024, 'x'));
    const size_t events = (100u << 20) / event.size() + 1;
    std::atomic<size_t> sent{0};
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        res.set_chunked_content_provider("text/event-stream", [&](size_t, httplib::DataSink& sink) {
            for (size_t i = 0; i < events; ++i) {
                if (!sink.write(event.data(), event.size())) return false;
                sent += event.size();
            }
            sink.done();
            return true;
        });
    });
    server.start();
    auto reply = client_for(server.base_url()).stream_chat(hello(), {});
    ASSERT_TRUE(reply) << reply.error();
    EXPECT_FALSE(reply->complete);
    EXPECT_NE(reply->incomplete_reason.find("over the cap of 64 MiB"), std::string::npos) << reply->incomplete_reason;
    EXPECT_LE(reply->text.size(), size_t(64u << 20));
    EXPECT_GT(reply->text.size(), size_t(32u << 20)) << "the text up to the cap is kept";
}

TEST(RemoteFaults, CancellingStopsTheStreamWithinOneChunk) {
    LoopbackServer server;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        res.set_chunked_content_provider("text/event-stream", [&](size_t, httplib::DataSink& sink) {
            for (int i = 0; i < 200 && !server.release; ++i) {
                const std::string e = chunk_event("t");
                if (!sink.write(e.data(), e.size())) return false;
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            sink.done();
            return true;
        });
    });
    server.start();
    CancelToken cancel;
    int tokens = 0, after_cancel = 0;
    auto reply = client_for(server.base_url()).stream_chat(
        hello(),
        [&](std::string_view) {
            if (cancel.is_cancelled()) ++after_cancel;
            if (++tokens == 3) cancel.cancel();
        },
        &cancel);
    ASSERT_TRUE(reply) << reply.error();
    EXPECT_TRUE(reply->cancelled);
    EXPECT_FALSE(reply->complete);
    EXPECT_EQ(reply->text, "ttt");
    EXPECT_EQ(after_cancel, 0);
}

TEST(RemoteFaults, NamesThatDoNotResolveAndRefusedPortsAreToldApart) {
    auto dns = client_for("http://no-such-host.invalid:8080/v1").stream_chat(hello(), {});
    ASSERT_FALSE(dns);
    EXPECT_NE(dns.error().find("cannot resolve host 'no-such-host.invalid' (DNS)"), std::string::npos) << dns.error();
    int free_port = 0;
    {
        LoopbackServer closed;
        closed.start();
        free_port = closed.port();
    }
    auto refused = client_for("http://127.0.0.1:" + std::to_string(free_port) + "/v1").stream_chat(hello(), {});
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().find("connection refused"), std::string::npos) << refused.error();
}

TEST(RemoteFaults, TheModelListIsRead) {
    LoopbackServer server;
    server.http.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
        res.set_content(R"({"object":"list","data":[{"id":"first","object":"model"},{"id":"second"}]})", "application/json");
    });
    server.start();
    auto models = client_for(server.base_url()).list_models();
    ASSERT_TRUE(models) << models.error();
    EXPECT_EQ(*models, (std::vector<std::string>{"first", "second"}));
}

} // namespace
} // namespace cflow::remote
