#pragma once
// The few socket calls the connection guard makes beside cpp-httplib: looking at bytes that have
// arrived without taking them (so httplib still reads the request), noticing a client that left,
// refusing a connection with a short answer, and the listen backlog. One file per OS.
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include <httplib.h>

namespace cflow::server::socket_io {

// The peer's address without the port ("127.0.0.1", "::1"); "" when the OS cannot say.
std::string peer_address(socket_t sock);

enum class Peeked : uint8_t { Data, Nothing, Closed };
// Copies up to `max_bytes` of what has arrived into `into` without consuming it; never blocks.
Peeked peek(socket_t sock, std::string& into, size_t max_bytes);

// Waits until bytes (or the peer's close) arrive, up to `timeout`. False on timeout.
bool wait_readable(socket_t sock, std::chrono::milliseconds timeout);

// The peer has closed its side or the connection broke (a queued client that went away).
bool peer_has_left(socket_t sock);

// Answers `response` and closes so that the peer reads it. First up to `discard_bytes` the
// peer sends are read and dropped (at most ~5 s): a client still sending a body it declared
// (fetch/undici does) fails with EPIPE when answered before it is done. Then the answer is
// sent (best effort, at most ~1 s), the sending side shut, a little more drained (a close with
// unread bytes resets the connection and can destroy the answer) and the socket closed.
void answer_and_close(socket_t sock, std::string_view response, size_t discard_bytes = 0);

// Re-listens a bound, listening socket with a larger backlog (httplib listens with 5).
bool set_listen_backlog(socket_t sock, int backlog);

} // namespace cflow::server::socket_io
