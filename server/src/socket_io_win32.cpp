// Winsock 2 for socket_io.h. Winsock has no MSG_DONTWAIT (a socket is blocking or not as a whole,
// and httplib's accepted sockets are blocking), so "never blocks" is a zero-timeout WSAPoll before
// the recv, and a peek that finds nothing readable returns Nothing. No SIGPIPE on Windows: a send
// to a closed peer fails with WSAECONNRESET/WSAECONNABORTED, which ends the loop like EPIPE does.
// httplib.h (included by socket_io.h) brings <winsock2.h> and <ws2tcpip.h> first, as Winsock needs.
#include "socket_io.h"

#include <algorithm>

namespace cflow::server::socket_io {
namespace {

using Clock = std::chrono::steady_clock;

int win_remaining_ms(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left > 0 ? int(left) : 0;
}

// WSAPoll for one event on one socket: >0 ready (or the peer's close / an error, which the
// following recv/send reports), 0 on timeout, <0 on a Winsock error.
int win_poll_one(socket_t sock, short events, int timeout_ms) {
    WSAPOLLFD entry{};
    entry.fd = sock;
    entry.events = events;
    return WSAPoll(&entry, 1, timeout_ms);
}

// recv with MSG_PEEK only after a zero-timeout poll said there is something: never blocks.
// >0 bytes peeked, 0 peer closed, -1 nothing yet, -2 the connection broke.
int win_peek_now(socket_t sock, char* into, int max_bytes) {
    const int ready = win_poll_one(sock, POLLRDNORM, 0);
    if (ready == 0) return -1;
    if (ready < 0) return -2;
    const int got = recv(sock, into, max_bytes, MSG_PEEK);
    if (got >= 0) return got;
    return WSAGetLastError() == WSAEWOULDBLOCK ? -1 : -2;
}

} // namespace

std::string peer_address(socket_t sock) {
    sockaddr_storage address{};
    int length = sizeof(address);
    if (getpeername(sock, reinterpret_cast<sockaddr*>(&address), &length) != 0) return {};
    char text[INET6_ADDRSTRLEN] = {};
    if (address.ss_family == AF_INET) {
        auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
        if (!inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text))) return {};
    } else if (address.ss_family == AF_INET6) {
        auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
        if (!inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text))) return {};
    } else {
        return {};
    }
    return text;
}

Peeked peek(socket_t sock, std::string& into, size_t max_bytes) {
    into.resize(max_bytes);
    const int got = win_peek_now(sock, into.data(), int(std::min<size_t>(max_bytes, size_t(1) << 30)));
    if (got > 0) {
        into.resize(size_t(got));
        return Peeked::Data;
    }
    into.clear();
    return got == -1 ? Peeked::Nothing : Peeked::Closed;
}

bool wait_readable(socket_t sock, std::chrono::milliseconds timeout) {
    return win_poll_one(sock, POLLRDNORM, int(timeout.count())) > 0;
}

bool peer_has_left(socket_t sock) {
    char byte;
    const int got = win_peek_now(sock, &byte, 1);
    return got == 0 || got == -2;
}

void answer_and_close(socket_t sock, std::string_view response, size_t discard_bytes) {
    const auto discard = [sock](size_t max_bytes, std::chrono::milliseconds max_time) {
        const auto deadline = Clock::now() + max_time;
        size_t dropped = 0;
        char sink[16384];
        while (dropped < max_bytes) {
            if (win_poll_one(sock, POLLRDNORM, win_remaining_ms(deadline)) <= 0) break;
            const int n = recv(sock, sink, int(std::min(sizeof(sink), max_bytes - dropped)), 0);
            if (n <= 0) break;
            dropped += size_t(n);
        }
    };
    if (discard_bytes > 0) discard(discard_bytes, std::chrono::seconds(5));
    // The socket is blocking: each send waits for room first (at most ~1 s in all), and a send
    // time-out bounds the send itself, so a peer that stopped reading cannot hold this thread.
    const auto deadline = Clock::now() + std::chrono::seconds(1);
    const DWORD send_timeout_ms = 1000;
    (void)setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, reinterpret_cast<const char*>(&send_timeout_ms),
                     sizeof(send_timeout_ms));
    size_t sent = 0;
    while (sent < response.size()) {
        if (win_poll_one(sock, POLLWRNORM, win_remaining_ms(deadline)) <= 0) break;
        const int chunk = int(std::min<size_t>(response.size() - sent, 16384));
        const int n = send(sock, response.data() + sent, chunk, 0);
        if (n <= 0) break;
        sent += size_t(n);
    }
    shutdown(sock, SD_SEND);
    discard(size_t(256) << 10, std::chrono::milliseconds(200));
    closesocket(sock);
}

bool set_listen_backlog(socket_t sock, int backlog) { return listen(sock, backlog) == 0; }

} // namespace cflow::server::socket_io
