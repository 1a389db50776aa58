// The Qt Network transport against the misbehaving loopback server of tests/remote (the same one
// the cpp-httplib transport is tested with): streaming as it arrives, time-outs, a dropped
// connection, HTTP errors worded exactly as with cpp-httplib, cancellation, DNS versus refused,
// redirects reported. Most calls run on a worker QThread, as in the desktop app.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "loopback_server.h"
#include "qt_transport_test_support.h"

namespace cflow::ui {
namespace {

using namespace cflow::qt_transport_test;
using cflow::test::chunk_event;
using cflow::test::kEndEvents;
using cflow::test::LoopbackServer;
using cflow::test::stream_events;
using remote::TransportFailure;
using Clock = std::chrono::steady_clock;

TEST(QtTransport, PiecesArriveWhileTheServerIsStillSending) {
    LoopbackServer server;
    std::atomic<bool> client_saw_first{false};
    std::atomic<bool> server_waited_in_vain{false};
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        res.set_chunked_content_provider("text/event-stream", [&](size_t, httplib::DataSink& sink) {
            const std::string first = chunk_event("Hel");
            sink.write(first.data(), first.size());
            // The rest only once the client has the first piece: a transport that buffered the
            // whole response would leave the server waiting here for 5 s.
            for (int i = 0; i < 500 && !client_saw_first && !server.release; ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            if (!client_saw_first) server_waited_in_vain = true;
            const std::string rest = chunk_event("lo") + kEndEvents;
            sink.write(rest.data(), rest.size());
            sink.done();
            return true;
        });
    });
    server.start();
    std::string streamed;
    auto run = on_worker_thread([&] {
        return client_on(Transport::Qt, server.base_url()).stream_chat(hello(), [&](std::string_view t) {
            streamed += t;
            client_saw_first = true;
        });
    });
    EXPECT_TRUE(run.ran_off_gui_thread);
    auto& reply = *run.value;
    ASSERT_TRUE(reply) << reply.error();
    EXPECT_EQ(reply->text, "Hello");
    EXPECT_EQ(streamed, "Hello");
    EXPECT_TRUE(reply->complete) << reply->incomplete_reason;
    ASSERT_TRUE(reply->usage);
    EXPECT_EQ(reply->usage->completion_tokens, 2);
    EXPECT_FALSE(server_waited_in_vain) << "the first piece reached the client only after the response ended";
}

TEST(QtTransport, AStalledServerTimesOutInBoundedTime) {
    LoopbackServer server;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        stream_events(res, {chunk_event("Once")}, true, [&] { server.stall(10'000); });
    });
    server.http.Post("/silent/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        server.stall(10'000);
        res.set_content("late", "text/plain");
    });
    server.start();
    const auto started = Clock::now();
    auto run = on_worker_thread([&] { return client_on(Transport::Qt, server.base_url(), 500).stream_chat(hello(), {}); });
    const double elapsed_s = seconds_since(started);
    auto& reply = *run.value;
    ASSERT_TRUE(reply) << reply.error();
    EXPECT_EQ(reply->text, "Once");
    EXPECT_FALSE(reply->complete);
    EXPECT_NE(reply->incomplete_reason.find("sent nothing for 0.5 s (time-out)"), std::string::npos)
        << reply->incomplete_reason;
    EXPECT_LT(elapsed_s, 5.0) << "the server stalls for 10 s: the time-out must end it first";

    // Silent before its response head: the same time-out, not a connect time-out.
    const auto silent_started = Clock::now();
    auto silent = client_on(Transport::Qt, server.base_url("/silent"), 400).stream_chat(hello(), {});
    ASSERT_FALSE(silent);
    EXPECT_NE(silent.error().find("the server sent nothing for 0.4 s (time-out)"), std::string::npos) << silent.error();
    EXPECT_LT(seconds_since(silent_started), 5.0);
}

TEST(QtTransport, AServerGoneMidStreamLeavesThePartialTextMarked) {
    LoopbackServer server;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        stream_events(res, {chunk_event("Once"), chunk_event(" upon")}, false);
    });
    server.start();
    // The transport's own verdict is cpp-httplib's for the same cut (a real server killed
    // mid-stream is qt_transport_serve_test's).
    remote::HttpRequest request;
    request.method = "POST";
    request.url = server.base_url() + "/chat/completions";
    request.body = "{}";
    remote::TransportResult results[2];
    std::string bodies[2];
    for (Transport t : {Transport::Qt, Transport::Httplib}) {
        const int i = t == Transport::Qt ? 0 : 1;
        results[i] = make_transport(t)->send(
            request, [](const remote::HttpResponseHead& head) { return head.status == 200; },
            [&](std::string_view bytes) {
                bodies[i] += bytes;
                return true;
            });
    }
    EXPECT_EQ(results[1].failure, TransportFailure::ConnectionLost) << results[1].detail;
    // Qt 6.4 ends a chunked body cut between two chunks (the server's FIN, no final chunk) as a
    // whole one; RemoteClient marks the reply all the same (no [DONE]), checked below.
    EXPECT_TRUE(results[0].failure == TransportFailure::None || results[0].failure == TransportFailure::ConnectionLost)
        << results[0].detail;
    EXPECT_EQ(bodies[0], bodies[1]);
    EXPECT_NE(bodies[0].find("upon"), std::string::npos) << bodies[0];
    // And RemoteClient's, on a worker thread.
    auto run = on_worker_thread([&] { return client_on(Transport::Qt, server.base_url()).stream_chat(hello(), {}); });
    auto& reply = *run.value;
    ASSERT_TRUE(reply) << reply.error();
    EXPECT_EQ(reply->text, "Once upon");
    EXPECT_FALSE(reply->complete);
    EXPECT_FALSE(reply->cancelled);
    EXPECT_NE(reply->incomplete_reason.find("closed the connection in the middle of the reply"), std::string::npos)
        << reply->incomplete_reason;
}

TEST(QtTransport, HttpErrorsReadExactlyAsWithHttplib) {
    LoopbackServer server;
    std::atomic<int> limited_requests{0};
    std::atomic<int> busy_requests{0};
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        res.status = 401;
        res.set_content(R"({"error":{"message":"Invalid API key","type":"invalid_request_error"}})", "application/json");
    });
    server.http.Post("/limited/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        if (limited_requests++ % 2 == 0) {
            res.status = 429;
            res.set_header("Retry-After", "1");
            res.set_content(R"({"error":{"message":"slow down"}})", "application/json");
            return;
        }
        stream_events(res, {chunk_event("ok"), kEndEvents}, true);
    });
    server.http.Post("/busy/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        ++busy_requests;
        res.status = 503;
        res.set_content(R"({"error":{"message":"loading model"}})", "application/json");
    });
    server.start();

    auto unauthorized_qt = on_worker_thread([&] { return client_on(Transport::Qt, server.base_url()).stream_chat(hello(), {}); });
    auto unauthorized_httplib = client_on(Transport::Httplib, server.base_url()).stream_chat(hello(), {});
    ASSERT_FALSE(*unauthorized_qt.value);
    ASSERT_FALSE(unauthorized_httplib);
    EXPECT_EQ(unauthorized_qt.value->error(), unauthorized_httplib.error());
    EXPECT_NE(unauthorized_qt.value->error().find("HTTP 401: the API key was refused or is missing"), std::string::npos)
        << unauthorized_qt.value->error();
    EXPECT_NE(unauthorized_qt.value->error().find("the server says: Invalid API key"), std::string::npos)
        << unauthorized_qt.value->error();

    // A base URL without /v1: 404 from httplib's server, and the hint.
    auto wrong_path_qt = client_on(Transport::Qt, server.base_url("")).stream_chat(hello(), {});
    auto wrong_path_httplib = client_on(Transport::Httplib, server.base_url("")).stream_chat(hello(), {});
    ASSERT_FALSE(wrong_path_qt);
    ASSERT_FALSE(wrong_path_httplib);
    EXPECT_EQ(wrong_path_qt.error(), wrong_path_httplib.error());
    EXPECT_NE(wrong_path_qt.error().find("HTTP 404: wrong path"), std::string::npos) << wrong_path_qt.error();

    // 429 with Retry-After: 1 is waited out (the header came through the head callback).
    for (Transport t : {Transport::Qt, Transport::Httplib}) {
        SCOPED_TRACE(transport_name(t));
        const auto started = Clock::now();
        auto limited = client_on(t, server.base_url("/limited")).stream_chat(hello(), {});
        const double elapsed_s = seconds_since(started);
        ASSERT_TRUE(limited) << limited.error();
        EXPECT_EQ(limited->text, "ok");
        EXPECT_EQ(limited->attempts, 2u);
        EXPECT_GE(elapsed_s, 0.9) << "Retry-After: 1 was not honoured";
        EXPECT_LT(elapsed_s, 10.0);
    }
    EXPECT_EQ(limited_requests.load(), 4);

    // 503 without Retry-After: backed off, then given up with the server's words.
    remote::EndpointConfig config;
    config.base_url = server.base_url("/busy");
    config.retry = remote::RetryPolicy{3, 100, 1000, 5000};
    auto busy_qt = remote::RemoteClient(config, make_transport(Transport::Qt)).stream_chat(hello(), {});
    auto busy_httplib = remote::RemoteClient(config, make_transport(Transport::Httplib)).stream_chat(hello(), {});
    ASSERT_FALSE(busy_qt);
    ASSERT_FALSE(busy_httplib);
    EXPECT_EQ(busy_qt.error(), busy_httplib.error());
    EXPECT_NE(busy_qt.error().find("HTTP 503: the server is busy or loading: the server says: loading model (gave up after 3 attempts)"),
              std::string::npos) << busy_qt.error();
    EXPECT_EQ(busy_requests.load(), 6);
}

TEST(QtTransport, ABodyShortOfItsContentLengthIsAConnectionLost) {
    LoopbackServer server;
    server.http.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
        // 1000 bytes announced, 10 sent, then the connection is dropped.
        res.set_content_provider(1000, "application/json", [](size_t offset, size_t, httplib::DataSink& sink) {
            if (offset > 0) return false;
            sink.write("{\"data\": [", 10);
            return true;
        });
    });
    server.start();
    remote::HttpRequest request;
    request.url = server.base_url() + "/models";
    for (Transport t : {Transport::Qt, Transport::Httplib}) {
        SCOPED_TRACE(transport_name(t));
        std::string body;
        const remote::TransportResult result = make_transport(t)->send(
            request, [](const remote::HttpResponseHead&) { return true; },
            [&](std::string_view bytes) {
                body += bytes;
                return true;
            });
        EXPECT_EQ(result.failure, TransportFailure::ConnectionLost) << result.detail;
        EXPECT_EQ(body, "{\"data\": [");
    }
    auto models = client_on(Transport::Qt, server.base_url()).list_models();
    ASSERT_FALSE(models);
    EXPECT_NE(models.error().find("the server closed the connection before the response ended"), std::string::npos)
        << models.error();
}

TEST(QtTransport, ARedirectIsReportedNotFollowed) {
    LoopbackServer server;
    std::atomic<int> followed{0};
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        res.set_redirect("/v2/chat/completions", 307);
    });
    server.http.Post("/v2/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        ++followed;
        stream_events(res, {chunk_event("elsewhere"), kEndEvents}, true);
    });
    server.start();
    auto reply = client_on(Transport::Qt, server.base_url()).stream_chat(hello(), {});
    ASSERT_FALSE(reply);
    EXPECT_NE(reply.error().find("HTTP 307"), std::string::npos) << reply.error();
    EXPECT_EQ(followed.load(), 0);
}

TEST(QtTransport, CancellingStopsTheStreamWithinOneChunk) {
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
    const auto started = Clock::now();
    auto run = on_worker_thread([&] {
        return client_on(Transport::Qt, server.base_url())
            .stream_chat(
                hello(),
                [&](std::string_view) {
                    if (cancel.is_cancelled()) ++after_cancel;
                    if (++tokens == 3) cancel.cancel();
                },
                &cancel);
    });
    auto& reply = *run.value;
    ASSERT_TRUE(reply) << reply.error();
    EXPECT_TRUE(reply->cancelled);
    EXPECT_FALSE(reply->complete);
    EXPECT_EQ(reply->text, "ttt");
    EXPECT_EQ(after_cancel, 0);
    EXPECT_LT(seconds_since(started), 1.5) << "the server streams for 2 s: the cancel must end it first";
}

TEST(QtTransport, NamesThatDoNotResolveAndRefusedPortsAreToldApart) {
    auto dns = on_worker_thread(
        [&] { return client_on(Transport::Qt, "http://no-such-host.invalid:8080/v1").stream_chat(hello(), {}); });
    ASSERT_FALSE(*dns.value);
    EXPECT_NE(dns.value->error().find("cannot resolve host 'no-such-host.invalid' (DNS)"), std::string::npos)
        << dns.value->error();
    int free_port = 0;
    {
        LoopbackServer closed;
        closed.start();
        free_port = closed.port();
    }
    auto refused = client_on(Transport::Qt, "http://127.0.0.1:" + std::to_string(free_port) + "/v1").stream_chat(hello(), {});
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().find("connection refused"), std::string::npos) << refused.error();
}

// A listening socket whose accept queue is full: Linux drops further SYNs, so a connect hangs
// as it does to a host that does not answer.
class UnansweredPort {
public:
    UnansweredPort() {
        listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener_, 0) != 0 ||
            ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
            return;
        port_ = ntohs(addr.sin_port);
        for (int i = 0; i < 4; ++i) {  // fills the queue (backlog 0 still holds one or two)
            const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
            ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
            fillers_.push_back(fd);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ~UnansweredPort() {
        for (int fd : fillers_) ::close(fd);
        if (listener_ >= 0) ::close(listener_);
    }
    int port() const { return port_; }

private:
    int listener_ = -1;
    int port_ = 0;
    std::vector<int> fillers_;
};

TEST(QtTransport, AHostThatDoesNotAnswerIsAConnectTimeout) {
    UnansweredPort port;
    ASSERT_GT(port.port(), 0);
    for (Transport t : {Transport::Qt, Transport::Httplib}) {
        SCOPED_TRACE(transport_name(t));
        remote::EndpointConfig config;
        config.base_url = "http://127.0.0.1:" + std::to_string(port.port()) + "/v1";
        config.connect_timeout_ms = 300;
        const auto started = Clock::now();
        auto reply = remote::RemoteClient(config, make_transport(t)).stream_chat(hello(), {});
        ASSERT_FALSE(reply);
        EXPECT_NE(reply.error().find("no connection within 0.3 s (time-out)"), std::string::npos) << reply.error();
        EXPECT_LT(seconds_since(started), 5.0);
    }
}

TEST(QtTransport, AHeadCallbackSayingNoCancelsBeforeAnyBody) {
    LoopbackServer server;
    server.http.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
        res.set_content(R"({"data":[]})", "application/json");
    });
    server.start();
    remote::HttpRequest request;
    request.url = server.base_url() + "/models";
    int status = 0;
    size_t chunks = 0;
    const remote::TransportResult result = make_transport(Transport::Qt)->send(
        request,
        [&](const remote::HttpResponseHead& head) {
            status = head.status;
            return false;
        },
        [&](std::string_view) {
            ++chunks;
            return true;
        });
    EXPECT_EQ(status, 200);
    EXPECT_EQ(result.failure, TransportFailure::Cancelled) << result.detail;
    EXPECT_EQ(chunks, 0u);
}

TEST(QtTransport, HttpsToAPlainHttpPortIsATlsFailure) {
    LoopbackServer server;
    server.start();
    for (Transport t : {Transport::Qt, Transport::Httplib}) {
        SCOPED_TRACE(transport_name(t));
        auto reply = client_on(t, "https://127.0.0.1:" + std::to_string(server.port()) + "/v1").stream_chat(hello(), {});
        ASSERT_FALSE(reply);
        EXPECT_NE(reply.error().find("TLS handshake failed (is it https on that port?)"), std::string::npos) << reply.error();
    }
}

TEST(QtTransport, MalformedStreamsAreNamed) {
    LoopbackServer server;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        stream_events(res, {chunk_event("Hi"), "data: {not json}\n\n"}, true);
    });
    server.start();
    auto reply = client_on(Transport::Qt, server.base_url()).stream_chat(hello(), {});
    ASSERT_TRUE(reply) << reply.error();
    EXPECT_EQ(reply->text, "Hi");
    EXPECT_FALSE(reply->complete);
    EXPECT_NE(reply->incomplete_reason.find("malformed stream at line 3: chunk is not JSON: '{not json}'"),
              std::string::npos) << reply->incomplete_reason;
}

TEST(QtTransport, AHundredMegabyteResponseIsRefusedAtTheCap) {
    LoopbackServer server;
    const std::string event = chunk_event(std::string(16 * 1024, 'x'));
    const size_t events = (100u << 20) / event.size() + 1;
    server.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        res.set_chunked_content_provider("text/event-stream", [&](size_t, httplib::DataSink& sink) {
            for (size_t i = 0; i < events; ++i)
                if (!sink.write(event.data(), event.size())) return false;
            sink.done();
            return true;
        });
    });
    server.start();
    auto run = on_worker_thread([&] { return client_on(Transport::Qt, server.base_url()).stream_chat(hello(), {}); });
    auto& reply = *run.value;
    ASSERT_TRUE(reply) << reply.error();
    EXPECT_FALSE(reply->complete);
    EXPECT_NE(reply->incomplete_reason.find("over the cap of 64 MiB"), std::string::npos) << reply->incomplete_reason;
    EXPECT_LE(reply->text.size(), size_t(64u << 20));
    EXPECT_GT(reply->text.size(), size_t(32u << 20)) << "the text up to the cap is kept";
}

TEST(QtTransport, TheModelListIsRead) {
    LoopbackServer server;
    server.http.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
        res.set_content(R"({"object":"list","data":[{"id":"first","object":"model"},{"id":"second"}]})", "application/json");
    });
    server.start();
    auto models = client_on(Transport::Qt, server.base_url()).list_models();
    ASSERT_TRUE(models) << models.error();
    EXPECT_EQ(*models, (std::vector<std::string>{"first", "second"}));
}

} // namespace
} // namespace cflow::ui
