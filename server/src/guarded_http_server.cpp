#include "guarded_http_server.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "cflow/server/anthropic_response.h"
#include "cflow/server/api_error.h"
#include "cflow/server/request_head.h"
#include "socket_io.h"

namespace cflow::server {
namespace {

thread_local const GuardedHttpServer::Connection* t_current_connection = nullptr;

// httplib::Server::process_and_close_socket (serve one connection) and svr_sock_ (the listening
// socket, which httplib's per-connection loop requires to be valid) are private. An explicit
// instantiation may name a private member ([temp.spec.general]/6): the one standard way to reach
// them without patching Debian's library. Called through the routes server, whose dynamic type
// is httplib::Server, the virtual call runs httplib's own implementation.
struct ServeConnection {
    using type = bool (httplib::Server::*)(socket_t);
    friend type member_of(ServeConnection);
};
struct ListeningSocket {
    using type = std::atomic<socket_t> httplib::Server::*;
    friend type member_of(ListeningSocket);
};
template <typename Tag, typename Tag::type Member>
struct PrivateMember {
    friend typename Tag::type member_of(Tag) { return Member; }
};
template struct PrivateMember<ServeConnection, &httplib::Server::process_and_close_socket>;
template struct PrivateMember<ListeningSocket, &httplib::Server::svr_sock_>;

// A head still arriving is evictable after this long: a real client sends its head at once.
constexpr std::chrono::milliseconds kEvictableAfter{1000};

constexpr uint64_t kMaxDiscardBytes = uint64_t(64) << 20;

const char* reason_phrase(int status) {
    switch (status) {
    case 400: return "Bad Request";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return status >= 500 ? "Server Error" : "Client Error";
    }
}

// The target of the request line in `received` ("" while it is incomplete), to shape a refusal.
std::string_view guarded_request_target(std::string_view received) {
    const size_t line_end = received.find_first_of("\r\n");
    if (line_end == std::string_view::npos) return {};
    const std::string_view line = received.substr(0, line_end);
    const size_t first_space = line.find(' ');
    if (first_space == std::string_view::npos) return {};
    const size_t second_space = line.find(' ', first_space + 1);
    return line.substr(first_space + 1, second_space == std::string_view::npos ? std::string_view::npos
                                                                               : second_space - first_space - 1);
}

} // namespace

std::string seconds_text(std::chrono::milliseconds ms) {
    const long long whole = ms.count() / 1000, tenths = (ms.count() % 1000) / 100;
    return std::to_string(whole) + (tenths ? "." + std::to_string(tenths) : "") + " s";
}

std::string refusal_response(int status, const std::string& message, std::string_view target) {
    ApiError error = error_for_status(status);
    error.message = message;
    if (status == 408) error.code = "request_timeout";
    if (status == 429) error.code = "too_many_connections";
    if (status == 503) error.code = "server_busy";
    const std::string body = is_anthropic_messages_path(target) ? anthropic_error_body(error) : error_body(error);
    return "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) +
           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\n\r\n" + body;
}

GuardedHttpServer::GuardedHttpServer() {
    set_limits(HttpLimits{}, max_body_bytes_);
    // Every request passes the head check: httplib would read a second request on the same
    // connection without it.
    routes_.set_keep_alive_max_count(1);
}

void GuardedHttpServer::start_serving(socket_t listening) { (routes_.*member_of(ListeningSocket{})) = listening; }

void GuardedHttpServer::stop_serving() { (routes_.*member_of(ListeningSocket{})) = INVALID_SOCKET; }

void GuardedHttpServer::set_limits(const HttpLimits& limits, uint64_t max_body_bytes) {
    limits_ = limits;
    max_body_bytes_ = max_body_bytes;
    gate_ = std::make_unique<ConnectionGate>(limits.max_connections_per_client, limits.max_connections, kEvictableAfter);
}

const GuardedHttpServer::Connection* GuardedHttpServer::current() { return t_current_connection; }

bool GuardedHttpServer::process_and_close_socket(socket_t sock) {
    uint64_t id = 0;
    switch (gate_->admit(socket_io::peer_address(sock), id)) {
    case ConnectionGate::Admission::Admitted: break;
    case ConnectionGate::Admission::ClientOverLimit:
        socket_io::answer_and_close(sock, refusal_response(429, "this address already has " +
                                                                    std::to_string(limits_.max_connections_per_client) +
                                                                    " connections open (cflow serve --max-connections-per-client)"));
        return true;
    case ConnectionGate::Admission::ServerFull:
        socket_io::answer_and_close(sock, refusal_response(503, "the server already has " +
                                                                    std::to_string(limits_.max_connections) +
                                                                    " connections open (cflow serve --max-connections)"));
        return true;
    case ConnectionGate::Admission::ShuttingDown:
        socket_io::answer_and_close(sock, refusal_response(503, "the server is shutting down"));
        return true;
    }
    struct Release {
        ConnectionGate& gate;
        uint64_t id;
        ~Release() { gate.release(id); }
    } release{*gate_, id};

    const auto deadline = Clock::now() + limits_.head_deadline;
    std::string peeked;
    auto pause = std::chrono::milliseconds(1);
    for (;;) {
        gate_->make_room();
        if (gate_->asked_to_leave(id)) {
            socket_io::answer_and_close(sock, refusal_response(503, "the request head was still arriving when a new "
                                                                    "connection needed its thread; send the head at once"));
            return true;
        }
        const socket_io::Peeked peeked_state = socket_io::peek(sock, peeked, limits_.max_head_bytes + 1);
        if (peeked_state == socket_io::Peeked::Closed) {
            socket_io::answer_and_close(sock, {});
            return true;
        }
        if (peeked_state == socket_io::Peeked::Data) {
            const RequestHead head = inspect_request_head(peeked, limits_, max_body_bytes_);
            if (head.verdict == HeadVerdict::Complete) break;
            if (head.verdict == HeadVerdict::Refused) {
                // A body declared too large is read and dropped first (up to 64 MiB), so that a
                // client still sending it gets the 413 instead of a broken pipe; an attacker's
                // is cut there (httplib 0.11.4 read all of it, 1 GiB or more).
                size_t discard = 0;
                if (head.status == 413 && head.content_length)
                    discard = size_t(std::min<uint64_t>(*head.content_length + head.head_bytes, kMaxDiscardBytes));
                socket_io::answer_and_close(sock, refusal_response(head.status, head.message, guarded_request_target(peeked)),
                                            discard);
                return true;
            }
        }
        const auto now = Clock::now();
        if (now >= deadline) {
            socket_io::answer_and_close(sock, refusal_response(408, "the request head did not arrive within " +
                                                                        seconds_text(limits_.head_deadline)));
            return true;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) + std::chrono::milliseconds(1);
        if (peeked_state == socket_io::Peeked::Nothing) {
            // Wakes for the first bytes at once; checks the gate at least every 100 ms.
            socket_io::wait_readable(sock, std::min(left, std::chrono::milliseconds(100)));
        } else {
            // Part of a head is waiting in the buffer, which keeps the socket readable: poll
            // would return at once, so look again after a pause that grows to 20 ms.
            std::this_thread::sleep_for(std::min(left, pause));
            pause = std::min(pause * 2, std::chrono::milliseconds(20));
        }
    }
    gate_->head_arrived(id);
    const Connection connection{sock, Clock::now()};
    t_current_connection = &connection;
    const bool served = (routes_.*member_of(ServeConnection{}))(sock);
    t_current_connection = nullptr;
    return served;
}

} // namespace cflow::server
