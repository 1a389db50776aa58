// The attacks of issue 38 on the HTTP layer, over loopback with raw sockets and small sizes: a
// line that never ends, too many or too long headers, slow heads (slowloris) that used to hold
// every request thread, too many connections from one address, a chunked body past the limit,
// a body sent too slowly, a queued client that leaves, and a stop in the middle of a stream.
#ifdef _WIN32
#include <httplib.h>  // <winsock2.h> and <ws2tcpip.h> first, as Winsock needs (and WSAStartup)
#else
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#endif

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "server_test_fixture.h"

namespace cflow::server {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The few calls where Winsock differs from POSIX sockets (the Windows suite runs under wine).
#ifdef _WIN32
using limits_socket_t = SOCKET;
constexpr limits_socket_t kLimitsNoSocket = INVALID_SOCKET;
int limits_poll_in(limits_socket_t sock, int timeout_ms) {
    WSAPOLLFD entry{};
    entry.fd = sock;
    entry.events = POLLRDNORM;
    return WSAPoll(&entry, 1, timeout_ms);
}
void limits_close(limits_socket_t sock) { closesocket(sock); }
void limits_set_send_timeout(limits_socket_t sock) {
    const DWORD timeout_ms = 2000;
    setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, reinterpret_cast<const char*>(&timeout_ms), sizeof(timeout_ms));
}
constexpr int kLimitsSendFlags = 0;  // no SIGPIPE on Windows
#else
using limits_socket_t = int;
constexpr limits_socket_t kLimitsNoSocket = -1;
int limits_poll_in(limits_socket_t sock, int timeout_ms) {
    pollfd entry{sock, POLLIN, 0};
    return poll(&entry, 1, timeout_ms);
}
void limits_close(limits_socket_t sock) { ::close(sock); }
void limits_set_send_timeout(limits_socket_t sock) {
    timeval send_timeout{2, 0};
    setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof(send_timeout));
}
constexpr int kLimitsSendFlags = MSG_NOSIGNAL;
#endif

// A TCP client that sends exactly the bytes it is given, from `source` (any 127.0.0.0/8 address
// on Linux), so a test can play several clients.
class RawClient {
public:
    explicit RawClient(int port, const char* source = "127.0.0.1") {
        fd_ = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in from{};
        from.sin_family = AF_INET;
        inet_pton(AF_INET, source, &from.sin_addr);
        EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof(from)), 0) << source;
        sockaddr_in to{};
        to.sin_family = AF_INET;
        to.sin_port = htons(uint16_t(port));
        inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
        connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof(to)) == 0;
        EXPECT_TRUE(connected_);
        limits_set_send_timeout(fd_);
    }
    ~RawClient() { close_now(); }
    RawClient(const RawClient&) = delete;
    RawClient& operator=(const RawClient&) = delete;

    bool send_bytes(std::string_view bytes) {
        while (!bytes.empty()) {
            const auto n = send(fd_, bytes.data(), int(bytes.size()), kLimitsSendFlags);
            if (n <= 0) return false;
            bytes.remove_prefix(size_t(n));
        }
        return true;
    }
    // Everything the server sends until it closes, or until `timeout`.
    std::string read_until_closed(std::chrono::milliseconds timeout) {
        std::string got;
        const auto deadline = Clock::now() + timeout;
        char buffer[4096];
        for (;;) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
            if (left <= 0) break;
            if (limits_poll_in(fd_, int(left)) <= 0) break;
            const auto n = recv(fd_, buffer, int(sizeof(buffer)), 0);
            if (n <= 0) {
                closed_by_server_ = true;
                break;
            }
            got.append(buffer, size_t(n));
        }
        return got;
    }
    bool closed_by_server() const { return closed_by_server_; }
    void close_now() {
        if (fd_ != kLimitsNoSocket) limits_close(fd_);
        fd_ = kLimitsNoSocket;
    }

private:
    limits_socket_t fd_ = kLimitsNoSocket;
    bool connected_ = false;
    bool closed_by_server_ = false;
};

int status_of(const std::string& response) {
    if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return 0;
    return std::stoi(response.substr(9, 3));
}

std::string body_of(const std::string& response) {
    const size_t end = response.find("\r\n\r\n");
    return end == std::string::npos ? std::string() : response.substr(end + 4);
}

std::string post_head(const std::string& path, const std::string& extra_headers) {
    return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + extra_headers + "\r\n";
}

int health_status(const TestServer& t, std::chrono::seconds timeout = 3s) {
    httplib::Client client("127.0.0.1", t.server->port());
    client.set_connection_timeout(timeout);
    client.set_read_timeout(timeout);
    auto res = client.Get("/health");
    return res ? res->status : 0;
}

TEST(HttpLimits, ALineThatNeverEndsIsRefusedAtItsLimit) {
    TestServer t;
    ASSERT_TRUE(t.server);
    RawClient attacker(t.server->port());
    // Issue 38: "GET /" and then bytes without a newline grew the server by gigabytes.
    attacker.send_bytes("GET /");
    (void)attacker.send_bytes(std::string(size_t(64) << 10, 'a'));
    const std::string response = attacker.read_until_closed(3s);
    EXPECT_EQ(status_of(response), 414) << response;
    EXPECT_NE(body_of(response).find("request line is longer than"), std::string::npos) << response;
    EXPECT_TRUE(attacker.closed_by_server());
    EXPECT_EQ(health_status(t), 200);
}

TEST(HttpLimits, TooManyOrTooLongHeaderLinesGet431) {
    TestServer t;
    ASSERT_TRUE(t.server);
    std::string many = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (int i = 0; i < 200; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
    RawClient flood(t.server->port());
    flood.send_bytes(many + "\r\n");
    const std::string response = flood.read_until_closed(3s);
    EXPECT_EQ(status_of(response), 431) << response;
    EXPECT_NE(body_of(response).find("more than 100 header lines"), std::string::npos) << response;

    RawClient long_line(t.server->port());
    long_line.send_bytes("GET /health HTTP/1.1\r\nX-Long: " + std::string(20000, 'x'));
    EXPECT_EQ(status_of(long_line.read_until_closed(3s)), 431);
    EXPECT_EQ(health_status(t), 200);
}

TEST(HttpLimits, AHeadStillArrivingAtTheDeadlineGets408) {
    ServerOptions options;
    options.http_limits.head_deadline = 800ms;
    TestServer t(options);
    ASSERT_TRUE(t.server);
    RawClient slow(t.server->port());
    const auto began = Clock::now();
    slow.send_bytes("GET /health HTTP/1.1\r\n");
    std::string response;
    for (int i = 0; i < 10 && response.empty(); ++i) {  // a header line every 300 ms, as slowloris does
        (void)slow.send_bytes("X-" + std::to_string(i) + ": v\r\n");
        response = slow.read_until_closed(300ms);
    }
    EXPECT_EQ(status_of(response), 408) << response;
    EXPECT_LT(Clock::now() - began, 2000ms) << "cut at the 0.8 s deadline, not after the 10 lines";
}

TEST(HttpLimits, SlowHeadsCannotLockOutOtherClients) {
    ServerOptions options;
    options.parallel = 1;
    options.max_waiting = 1;  // 1 + 1 + 4 = 6 request threads
    TestServer t(options);
    ASSERT_TRUE(t.server);
    std::vector<std::unique_ptr<RawClient>> slow;
    for (int i = 0; i < 16; ++i) {
        slow.push_back(std::make_unique<RawClient>(t.server->port()));
        slow.back()->send_bytes("GET /health HTTP/1.1\r\nX-Slow: 1\r\n");  // and never the blank line
    }
    std::this_thread::sleep_for(1200ms);  // every slow head is now old enough to be asked to leave
    const auto asked = Clock::now();
    EXPECT_EQ(health_status(t, 4s), 200) << "a client arriving after 16 slow heads on 6 threads is answered";
    EXPECT_LT(Clock::now() - asked, 3000ms);
    size_t refused = 0;
    for (auto& client : slow) refused += status_of(client->read_until_closed(50ms)) == 503 ? 1 : 0;
    EXPECT_GT(refused, 0u) << "slow heads were asked to leave with 503";
}

TEST(HttpLimits, ConnectionsFromOneAddressAreCapped) {
    ServerOptions options;
    options.http_limits.max_connections_per_client = 3;
    TestServer t(options);
    ASSERT_TRUE(t.server);
    std::vector<std::unique_ptr<RawClient>> held;
    for (int i = 0; i < 3; ++i) {
        held.push_back(std::make_unique<RawClient>(t.server->port()));
        held.back()->send_bytes("GET /health HTTP/1.1\r\n");
    }
    std::this_thread::sleep_for(200ms);  // all three admitted
    RawClient fourth(t.server->port());
    const std::string response = fourth.read_until_closed(3s);
    EXPECT_EQ(status_of(response), 429) << response;
    EXPECT_NE(body_of(response).find("--max-connections-per-client"), std::string::npos) << response;

    RawClient other(t.server->port(), "127.0.0.2");
    other.send_bytes("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    EXPECT_EQ(status_of(other.read_until_closed(3s)), 200) << "another address is not limited by the first one's";
}

TEST(HttpLimits, BodiesPastTheLimitAreRefusedAsTheyArrive) {
    ServerOptions options;
    options.max_body_bytes = size_t(64) << 10;
    TestServer t(options);
    ASSERT_TRUE(t.server);
    // Declared too large: refused from the head; the body is read and dropped, not kept, so that
    // a client still sending it reads the 413 (fetch failed with EPIPE when answered at once).
    RawClient declared(t.server->port());
    declared.send_bytes(post_head("/v1/completions", "Content-Length: 1048576\r\n"));
    EXPECT_TRUE(declared.send_bytes(std::string(size_t(1) << 20, ' ')));
    const std::string refused = declared.read_until_closed(3s);
    EXPECT_EQ(status_of(refused), 413) << refused;
    EXPECT_NE(body_of(refused).find("--max-body-mib"), std::string::npos) << refused;

    // Chunked: counted as it arrives (httplib read a chunked body whole, whatever its size).
    RawClient chunked(t.server->port());
    chunked.send_bytes(post_head("/v1/completions", "Transfer-Encoding: chunked\r\n"));
    const std::string piece(8192, ' ');
    char size_line[16];
    std::snprintf(size_line, sizeof(size_line), "%zx\r\n", piece.size());
    for (int i = 0; i < 16; ++i)  // 128 KiB against 64 KiB
        if (!chunked.send_bytes(size_line + piece + "\r\n")) break;
    const std::string chunked_refusal = chunked.read_until_closed(3s);
    EXPECT_EQ(status_of(chunked_refusal), 413) << chunked_refusal;

    // POST without a length would be read to the end of the connection.
    RawClient unsized(t.server->port());
    unsized.send_bytes(post_head("/v1/completions", ""));
    EXPECT_EQ(status_of(unsized.read_until_closed(3s)), 411);

    // A small chunked body is read and answered like any other.
    RawClient small(t.server->port());
    const std::string body = R"({"prompt": "hello", "max_tokens": 2})";
    char small_size[16];
    std::snprintf(small_size, sizeof(small_size), "%zx\r\n", body.size());
    small.send_bytes(post_head("/v1/completions", "Transfer-Encoding: chunked\r\n") + small_size + body + "\r\n0\r\n\r\n");
    const std::string answered = small.read_until_closed(10s);
    EXPECT_EQ(status_of(answered), 200) << answered;
}

TEST(HttpLimits, ABodySentTooSlowlyGets408) {
    ServerOptions options;
    options.http_limits.body_deadline = 800ms;
    TestServer t(options);
    ASSERT_TRUE(t.server);
    RawClient slow(t.server->port());
    const auto began = Clock::now();
    slow.send_bytes(post_head("/v1/completions", "Content-Length: 100\r\n"));
    std::string response;
    for (int i = 0; i < 10 && response.empty(); ++i) {
        (void)slow.send_bytes("          ");
        response = slow.read_until_closed(300ms);
    }
    EXPECT_EQ(status_of(response), 408) << response;
    EXPECT_NE(body_of(response).find("within 0.8 s"), std::string::npos) << response;
    EXPECT_LT(Clock::now() - began, 2500ms);
}

TEST(HttpLimits, AQueuedClientThatLeavesGivesUpItsPlaceAtOnce) {
    ServerOptions options;
    options.parallel = 1;
    options.max_waiting = 1;
    TestServer t(options, 3ms);  // 600 tokens: ~2 s
    ASSERT_TRUE(t.server);
    std::thread long_reply([&] { t.post("/v1/chat/completions", chat_body(600, 3, false)); });
    while (t.server->active_generations() == 0) std::this_thread::sleep_for(1ms);

    const auto waiting = [&] {
        httplib::Client client("127.0.0.1", t.server->port());
        auto res = client.Get("/health");
        return res ? json::parse(res->body).value("waiting", -1) : -1;
    };
    {
        RawClient leaver(t.server->port());
        const std::string body = chat_body(4, 1, false);
        leaver.send_bytes(post_head("/v1/chat/completions", "Content-Length: " + std::to_string(body.size()) + "\r\n") + body);
        const auto queued_by = Clock::now() + 2s;
        while (waiting() != 1 && Clock::now() < queued_by) std::this_thread::sleep_for(10ms);
        ASSERT_EQ(waiting(), 1) << "the second request waits for the slot";
    }  // the client hangs up
    const auto left = Clock::now();
    while (waiting() != 0 && Clock::now() - left < 2s) std::this_thread::sleep_for(10ms);
    EXPECT_EQ(waiting(), 0);
    EXPECT_LT(Clock::now() - left, 800ms) << "gave up its place within the 200 ms check, not when its turn came";
    EXPECT_GT(t.server->active_generations(), 0u) << "while the long reply still runs";
    long_reply.join();
}

TEST(HttpLimits, StoppingTheServerEndsAStreamWithAnErrorEventAndDone) {
    TestServer t({}, 3ms);
    ASSERT_TRUE(t.server);
    std::string streamed;
    std::atomic<bool> stop_asked{false};
    std::thread stopper;
    httplib::Request request;
    request.method = "POST";
    request.path = "/v1/chat/completions";
    request.body = chat_body(600, 9, true);
    request.headers = {{"Content-Type", "application/json"}};
    request.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
        streamed.append(data, length);
        if (streamed.size() > 400 && !stop_asked.exchange(true))
            stopper = std::thread([&] { t.server->stop(); });  // as SIGTERM does in `cflow serve`
        return true;
    };
    auto client = t.client();
    auto res = client.send(request);
    ASSERT_TRUE(res);
    if (stopper.joinable()) stopper.join();
    ASSERT_TRUE(stop_asked.load());
    const std::vector<std::string> events = parse_sse_events(streamed);
    ASSERT_GE(events.size(), 2u) << streamed;
    EXPECT_EQ(events.back(), "[DONE]") << streamed;
    const json error = json::parse(events[events.size() - 2]);
    EXPECT_EQ(error["error"]["code"], "server_busy") << error.dump();
    EXPECT_NE(error["error"]["message"].get<std::string>().find("shutting down"), std::string::npos);
}

} // namespace
} // namespace cflow::server
