#pragma once
// cpp-httplib's server with the limits 0.11.4 lacks (http_limits.h), put in front of it: each
// connection is admitted by the ConnectionGate, and its request head is judged in the socket's
// receive buffer (without consuming it) under a deadline, a size and a line-count limit before
// httplib reads it. One request per connection (keep-alive off), so every request passes here.
//
// Two httplib servers: this one binds, accepts and owns the request threads; `routes()` holds
// the handlers and serves each admitted connection. httplib's per-connection function is a
// private virtual: this server overrides it (the gate), and the gate hands the connection to
// the routes server's own, unchanged implementation (reached as guarded_http_server.cpp says).
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <httplib.h>

#include "cflow/server/http_limits.h"
#include "connection_gate.h"

namespace cflow::server {

class GuardedHttpServer final : public httplib::Server {
public:
    using Clock = std::chrono::steady_clock;

    GuardedHttpServer();
    // Before listening: the limits and the largest body a request may declare (413 beyond).
    void set_limits(const HttpLimits& limits, uint64_t max_body_bytes);
    const HttpLimits& limits() const { return limits_; }
    ConnectionGate& gate() { return *gate_; }
    // The handlers, error handlers and body limits: set them here, not on this server.
    httplib::Server& routes() { return routes_; }
    // After binding: the routes server then serves connections; stop_serving() ends its
    // streams' loops (httplib reads "shutting down" from the listening socket's absence).
    void start_serving(socket_t listening);
    void stop_serving();

    // The connection the calling thread is serving, inside a handler; nullptr elsewhere.
    struct Connection {
        socket_t sock;
        Clock::time_point head_arrived;
    };
    static const Connection* current();

protected:
    bool process_and_close_socket(socket_t sock) override;

private:
    httplib::Server routes_;
    HttpLimits limits_;
    uint64_t max_body_bytes_ = uint64_t(8) << 20;
    std::unique_ptr<ConnectionGate> gate_;
};

// A whole HTTP/1.1 answer that closes the connection, with an OpenAI-style JSON error body.
// `target`: the request's target when its request line arrived ("" before): under /v1/messages
// the body takes the Anthropic API's error shape.
std::string refusal_response(int status, const std::string& message, std::string_view target = {});

// A deadline for messages: "10 s", "0.8 s".
std::string seconds_text(std::chrono::milliseconds ms);

} // namespace cflow::server
