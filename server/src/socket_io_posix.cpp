#include "socket_io.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace cflow::server::socket_io {
namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left > 0 ? int(left) : 0;
}

} // namespace

std::string peer_address(socket_t sock) {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    if (getpeername(sock, reinterpret_cast<sockaddr*>(&address), &length) != 0) return {};
    char text[INET6_ADDRSTRLEN] = {};
    if (address.ss_family == AF_INET) {
        const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
        if (!inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text))) return {};
    } else if (address.ss_family == AF_INET6) {
        const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
        if (!inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text))) return {};
    } else {
        return {};
    }
    return text;
}

Peeked peek(socket_t sock, std::string& into, size_t max_bytes) {
    into.resize(max_bytes);
    ssize_t got;
    do {
        got = recv(sock, into.data(), max_bytes, MSG_PEEK | MSG_DONTWAIT);
    } while (got < 0 && errno == EINTR);
    if (got > 0) {
        into.resize(size_t(got));
        return Peeked::Data;
    }
    into.clear();
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Peeked::Nothing;
    return Peeked::Closed;
}

bool wait_readable(socket_t sock, std::chrono::milliseconds timeout) {
    pollfd entry{sock, POLLIN, 0};
    int ready;
    do {
        ready = poll(&entry, 1, int(timeout.count()));
    } while (ready < 0 && errno == EINTR);
    return ready > 0;
}

bool peer_has_left(socket_t sock) {
    char byte;
    ssize_t got;
    do {
        got = recv(sock, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    } while (got < 0 && errno == EINTR);
    if (got > 0) return false;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    return true;
}

void answer_and_close(socket_t sock, std::string_view response, size_t discard_bytes) {
    const auto discard = [sock](size_t max_bytes, std::chrono::milliseconds max_time) {
        const auto deadline = Clock::now() + max_time;
        size_t dropped = 0;
        char sink[16384];
        while (dropped < max_bytes) {
            pollfd entry{sock, POLLIN, 0};
            if (poll(&entry, 1, remaining_ms(deadline)) <= 0) break;
            const ssize_t n = recv(sock, sink, std::min(sizeof(sink), max_bytes - dropped), MSG_DONTWAIT);
            if (n <= 0) break;
            dropped += size_t(n);
        }
    };
    if (discard_bytes > 0) discard(discard_bytes, std::chrono::seconds(5));
    const auto deadline = Clock::now() + std::chrono::seconds(1);
    size_t sent = 0;
    while (sent < response.size()) {
        const ssize_t n = send(sock, response.data() + sent, response.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            sent += size_t(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            pollfd entry{sock, POLLOUT, 0};
            if (poll(&entry, 1, remaining_ms(deadline)) > 0) continue;
        }
        break;
    }
    shutdown(sock, SHUT_WR);
    discard(size_t(256) << 10, std::chrono::milliseconds(200));
    close(sock);
}

bool set_listen_backlog(socket_t sock, int backlog) { return listen(sock, backlog) == 0; }

} // namespace cflow::server::socket_io
